// A Fock-matrix build reduced to its communication, the way GTFock or
// NWChem write it against Global Arrays: a shared counter hands out tasks,
// each task computes a tile of contributions and accumulates it into the
// distributed Fock matrix; afterwards every process reads its own part in
// place with access() and the norm is checked against a serial sum.
//
//   mpiexec -n 3 ./fock_build [n] [tile]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <accrete/accrete.hpp>
#include <accrete/array/counter.hpp>
#include <accrete/array/dist_array.hpp>

// A stand-in for the two-electron integrals of task q: exact in double
// (multiples of 1/4), so every order of accumulation gives the same sums.
double contribution(std::int64_t q, std::int64_t i, std::int64_t j) { return double((q * 31 + i * 7 + j * 3) % 16) * 0.25; }

int main(int argc, char** argv) {
  accrete::runtime rt;
  const std::int64_t n = argc > 1 ? std::atoll(argv[1]) : 192, t = argc > 2 ? std::atoll(argv[2]) : 32;
  const std::int64_t nt = (n + t - 1) / t, tiles = nt * nt, tasks = 4 * tiles;

  accrete::dist_array<double> fock(n, n);  // GA's regular block distribution
  accrete::counter next;
  std::vector<double> tile(std::size_t(t * t));
  std::int64_t mine = 0;
  for (std::int64_t q = next.fetch_add(1); q < tasks; q = next.fetch_add(1), ++mine) {
    const std::int64_t ti = (q % tiles) / nt, tj = (q % tiles) % nt;
    const accrete::patch p{ti * t, std::min(n, ti * t + t), tj * t, std::min(n, tj * t + t)};
    for (std::int64_t j = 0; j < p.cols(); ++j)
      for (std::int64_t i = 0; i < p.rows(); ++i) tile[std::size_t(j * p.rows() + i)] = contribution(q, i, j);
    fock.acc_blocking(p, tile.data(), p.rows());
  }
  fock.sync();  // every accumulate complete and visible

  // Read this process's part in place (no copy) and sum its squares.
  const double* f = fock.access();
  double local = 0;
  for (std::int64_t j = 0; j < fock.local_cols(); ++j)
    for (std::int64_t i = 0; i < fock.local_rows(); ++i) local += f[j * fock.lld() + i] * f[j * fock.lld() + i];
  fock.release();
  const double norm = std::sqrt(accrete::reduce_all(local, accrete::op_fast_add).wait());

  // Serial reference.
  std::vector<double> ref(std::size_t(n * n), 0.0);
  for (std::int64_t q = 0; q < tasks; ++q) {
    const std::int64_t ti = (q % tiles) / nt, tj = (q % tiles) % nt;
    for (std::int64_t j = tj * t; j < std::min(n, tj * t + t); ++j)
      for (std::int64_t i = ti * t; i < std::min(n, ti * t + t); ++i)
        ref[std::size_t(j * n + i)] += contribution(q, i - ti * t, j - tj * t);
  }
  double sq = 0;
  for (double v : ref) sq += v * v;
  const bool ok = norm == std::sqrt(sq) && fock.norm() == norm;
  if (accrete::rank_me() == 0)
    std::printf("fock_build: n = %lld, %lld tasks on %d processes (%lld here): ||F|| = %.6f (serial %.6f) %s\n",
                (long long)n, (long long)tasks, accrete::rank_n(), (long long)mine, norm, std::sqrt(sq),
                ok ? "OK" : "MISMATCH");
  return ok ? 0 : 1;
}
