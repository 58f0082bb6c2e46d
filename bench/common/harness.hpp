#pragma once
// The benchmarks' shared harness: clock, median, and reductions of one
// timing over processes. Header-only; every bench target has bench/common
// on its include path.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include <mpi.h>

namespace bench {

/// An allocator whose blocks start on a cache line, as every slice of
/// accrete's storage does (src/backend/mpi/windows.cpp). The plain-MPI
/// baselines' and the references' target arrays use it, so that a run of
/// 16 floats at an aligned index is one line for them as it is for accrete:
/// glibc places a large std::vector 16 bytes past a page, where the same run
/// spans two lines (bench/hessian README, "Issue 41's goals, with aligned
/// baselines").
template <class T>
struct line_allocator {
  using value_type = T;
  static constexpr std::align_val_t line{64};
  line_allocator() = default;
  template <class U>
  line_allocator(const line_allocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), line)); }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, line); }
  friend bool operator==(const line_allocator&, const line_allocator&) noexcept { return true; }
};
template <class T>
using line_vector = std::vector<T, line_allocator<T>>;

/// Seconds on a monotonic clock; under SimGrid's SMPI (ACCRETE_SMPI
/// builds) the simulated clock, which the host's clock knows nothing of.
inline double now() {
#ifdef ACCRETE_SMPI
  return MPI_Wtime();
#else
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
#endif
}

/// Median (mean of the middle two for an even count; 0 when empty).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

/// The median over i of num[i] / den[i] (pairs with den[i] <= 0 skipped):
/// two implementations compared repetition by repetition, so that drift of
/// the machine between repetitions cancels.
inline double median_ratio(const std::vector<double>& num, const std::vector<double>& den) {
  std::vector<double> r;
  for (std::size_t i = 0; i < num.size() && i < den.size(); ++i)
    if (den[i] > 0) r.push_back(num[i] / den[i]);
  return median(r);
}

/// `v` reduced with `op` over every process of `comm` (result everywhere).
inline double reduce(double v, MPI_Op op, MPI_Comm comm = MPI_COMM_WORLD) {
  double r = 0;
  MPI_Allreduce(&v, &r, 1, MPI_DOUBLE, op, comm);
  return r;
}

/// A number for JSON with 9 significant digits (std::to_string's six
/// decimals print a sub-microsecond time as 0).
inline std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

/// The value after argv[i] when argv[i] is `name` (i then moves onto the
/// value), else nullptr: the benchmarks' option parsing.
inline const char* option(int argc, char** argv, int& i, const char* name) {
  if (i + 1 >= argc || std::string(argv[i]) != name) return nullptr;
  return argv[++i];
}

/// --ops N, --reps R and --json PATH, the options the flood benchmarks
/// share; take() consumes argv[i] (and its value) when it is one of them.
struct flood_options {
  long ops;
  int reps;
  std::string json;
  bool take(int argc, char** argv, int& i) {
    if (const char* v = option(argc, argv, i, "--ops"))
      ops = std::atol(v);
    else if (const char* v = option(argc, argv, i, "--reps"))
      reps = std::atoi(v);
    else if (const char* v = option(argc, argv, i, "--json"))
      json = v;
    else
      return false;
    return true;
  }
};

/// Writes `text` to `path` (nothing when the path is empty): the JSON of
/// a benchmark, by its rank 0.
inline void write_file(const std::string& path, const std::string& text) {
  if (path.empty()) return;
  if (FILE* f = std::fopen(path.c_str(), "w")) {
    std::fputs(text.c_str(), f);
    std::fclose(f);
  } else {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
  }
}

}  // namespace bench
