#pragma once
// The benchmarks' shared harness: clock, median, and reductions of one
// timing over processes. Header-only; every bench target has bench/common
// on its include path.
#include <algorithm>
#include <chrono>
#include <vector>

#include <mpi.h>

namespace bench {

/// Seconds on a monotonic clock.
inline double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Median (mean of the middle two for an even count; 0 when empty).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

/// `v` reduced with `op` over every process of `comm` (result everywhere).
inline double reduce(double v, MPI_Op op, MPI_Comm comm = MPI_COMM_WORLD) {
  double r = 0;
  MPI_Allreduce(&v, &r, 1, MPI_DOUBLE, op, comm);
  return r;
}

}  // namespace bench
