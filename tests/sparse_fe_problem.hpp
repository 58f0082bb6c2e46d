// A small finite-element problem shared by the PETSc and hypre handoff
// tests: Q1 quadrilaterals on an nx x ny grid, one unknown per node, rows
// split unevenly (rank 1 owns none when P > 1), element e assembled by rank
// e % P (so most processes add into rows others own). Element matrices are
// the graph Laplacian of the element's 4 nodes plus a mass term, scaled per
// element and per round by multiples of 1/16: symmetric positive definite,
// and every sum exact in any order.
#pragma once
#include <array>
#include <cstdint>

#include "accrete/accrete.hpp"
#include "accrete/sparse/sparse_matrix.hpp"

namespace fe_problem {

constexpr int nx = 13, ny = 11;
constexpr std::int64_t unknowns = std::int64_t(nx + 1) * (ny + 1);

inline std::int64_t weight(int rank) { return rank == 1 ? 0 : 2 + rank % 3; }

// [row_begin, row_end) of `rank` among `np`: proportional to weight().
inline std::array<std::int64_t, 2> rows_of(int rank, int np) {
  std::int64_t total = 0, before = 0;
  for (int p = 0; p < np; ++p) total += weight(p), before += p < rank ? weight(p) : 0;
  return {unknowns * before / total, unknowns * (before + weight(rank)) / total};
}

// The global rows of element e (x fastest) and its 4x4 matrix (row-major,
// symmetric) in round `round`.
inline void element(int e, int round, std::int64_t rows[4], double K[16]) {
  const int ex = e % nx, ey = e / nx;
  const std::int64_t n0 = std::int64_t(ey) * (nx + 1) + ex;
  rows[0] = n0, rows[1] = n0 + 1, rows[2] = n0 + nx + 1, rows[3] = n0 + nx + 2;
  const double c = 1.0 + double((e + 3 * round) % 4) / 4.0 + double(round) / 2.0;
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b) K[a * 4 + b] = c * (a == b ? 3.25 : -1.0);
}

constexpr int elements = nx * ny;

// The exact solution the tests' right-hand sides come from.
inline double x_true(std::int64_t i) { return 1.0 + double(i % 7) / 8.0; }

// This process's elements of round `round` into A, then the commit.
inline void assemble(accrete::sparse_matrix<double>& A, int round) {
  std::int64_t rows[4];
  double K[16];
  for (int e = accrete::rank_me(); e < elements; e += accrete::rank_n()) {
    element(e, round, rows, K);
    A.update(K, 4, rows, rows, accrete::matrix_layout::row_major);
  }
  A.commit();
}

}  // namespace fe_problem
