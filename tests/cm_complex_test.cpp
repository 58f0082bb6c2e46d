// convergent_matrix over std::complex<float> and std::complex<double>
// (issue 13, item 4): assembly on both strategies and both layouts against
// a serial reference (parts are multiples of 1/4, so every sum is exact),
// update_symmetric + fill_lower mirroring conjugates (Hermitian), the
// Hermitian symmetrize, save/load through the file format and its type
// check, the descriptor, a user merge, and the Cholesky path: p?posv on an
// assembled Hermitian positive definite matrix, checked with p?gemm.
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "accrete/accrete.hpp"
#include "accrete/matrix/convergent_matrix.hpp"
#include "accrete/matrix/linalg.hpp"

using namespace accrete;

namespace {

constexpr std::int64_t M = 29, N = 22;

template <class T>
class Complex : public testing::Test {};
using complex_types = testing::Types<std::complex<float>, std::complex<double>>;
TYPED_TEST_SUITE(Complex, complex_types);

struct update_rec {
  std::vector<std::int64_t> rows, cols;
  std::vector<std::complex<double>> vals;  // column-major nr x nc
};

// Process p's updates: repeated indices, parts in [-64, 64] step 1/4.
std::vector<update_rec> updates_of(int p) {
  std::mt19937_64 g(std::uint64_t(p) * 104729 + 5);
  auto part = [&] { return double(std::int64_t(g() % 513) - 256) / 4; };
  std::vector<update_rec> us(30);
  for (auto& u : us) {
    const int nr = 1 + int(g() % 7), nc = 1 + int(g() % 5);
    for (int i = 0; i < nr; ++i) u.rows.push_back(std::int64_t(g() % M));
    for (int j = 0; j < nc; ++j) u.cols.push_back(std::int64_t(g() % N));
    for (int k = 0; k < nr * nc; ++k) u.vals.emplace_back(part(), part());
  }
  return us;
}

std::vector<std::complex<double>> reference() {
  std::vector<std::complex<double>> ref(std::size_t(M * N));
  for (int p = 0; p < rank_n(); ++p)
    for (const auto& u : updates_of(p))
      for (std::size_t j = 0; j < u.cols.size(); ++j)
        for (std::size_t i = 0; i < u.rows.size(); ++i)
          ref[std::size_t(u.rows[i] + u.cols[j] * M)] += u.vals[i + j * u.rows.size()];
  return ref;
}

template <class T>
void issue_all(convergent_matrix<T>& A) {
  int k = 0;
  for (const auto& u : updates_of(rank_me())) {
    const std::size_t nr = u.rows.size(), nc = u.cols.size();
    std::vector<T> v(nr * nc);
    const bool rowmaj = k++ % 2;
    for (std::size_t i = 0; i < nr; ++i)
      for (std::size_t j = 0; j < nc; ++j) v[rowmaj ? i * nc + j : i + j * nr] = T(u.vals[i + j * nr]);
    A.update(v.data(), std::int64_t(rowmaj ? nc : nr), u.rows, u.cols,
             rowmaj ? matrix_layout::row_major : matrix_layout::col_major);
  }
}

TYPED_TEST(Complex, AssemblyMatchesTheReference) {
  using T = TypeParam;
  const auto ref = reference();
  for (auto strategy : {update_strategy::packets, update_strategy::alltoall}) {
    convergent_matrix_options o;
    o.strategy = strategy;
    o.buffer_cap = 2 << 10;  // packets travel while updating
    o.coalesce_bytes = 256;
    convergent_matrix<T> A(M, N, process_grid(world().mpi_comm()), 4, 3, o);
    issue_all(A);
    A.commit();
    std::int64_t wrong = 0;
    for (std::int64_t j = 0; j < N; ++j)
      for (std::int64_t i = rank_me(); i < M; i += rank_n()) wrong += A.get(i, j) != T(ref[std::size_t(i + j * M)]);
    EXPECT_EQ(wrong, 0) << (strategy == update_strategy::packets ? "packets" : "alltoall");
    // A second round adds on top; single-element update. (The barrier: an
    // owner that reopens lets next-round contributions in while others may
    // still be reading its committed values.)
    barrier();
    A.reopen();
    if (rank_me() == rank_n() - 1) A.update(T(0.5, -2), 3, 4);
    A.commit();
    EXPECT_EQ(A.get(3, 4), T(ref[std::size_t(3 + 4 * M)] + std::complex<double>(0.5, -2)));
  }
}

TYPED_TEST(Complex, SaveLoadAndFileTypeCheck) {
  using T = TypeParam;
  process_grid grid(world().mpi_comm());
  convergent_matrix<T> A(M, N, grid, 4, 3);
  issue_all(A);
  A.commit();
  const std::string path = "cm_complex_" + std::to_string(sizeof(T)) + "_np" + std::to_string(rank_n()) + ".bin";
  A.save(path);
  // Another block size reads the same matrix.
  convergent_matrix<T> B(M, N, grid, 5, 2);
  B.load(path);
  const auto ref = reference();
  std::int64_t wrong = 0;
  for (std::int64_t j = 0; j < N; ++j)
    for (std::int64_t i = rank_me(); i < M; i += rank_n()) wrong += B.get(i, j) != T(ref[std::size_t(i + j * M)]);
  EXPECT_EQ(wrong, 0);
  // The file is the column-major matrix, real and imaginary parts interleaved.
  if (rank_me() == 0) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    ASSERT_NE(f, nullptr);
    std::vector<T> all(std::size_t(M * N));
    EXPECT_EQ(std::fread(all.data(), sizeof(T), all.size(), f), all.size());
    std::fclose(f);
    EXPECT_EQ(all[std::size_t(7 + 5 * M)], T(ref[std::size_t(7 + 5 * M)]));
  }
  // The same bytes are not an M x N real matrix of the same precision.
  convergent_matrix<typename T::value_type> R(M, N, grid, 4, 3);
  EXPECT_THROW(R.load(path), std::runtime_error);
  barrier();
  if (rank_me() == 0) std::remove(path.c_str());
}

TYPED_TEST(Complex, DescriptorAndRejectedMerges) {
  using T = TypeParam;
  process_grid grid(world().mpi_comm());
  convergent_matrix<T> A(M, N, grid, 4, 3);
  const auto d = A.descriptor();
  EXPECT_EQ(d[desc_m], M);
  EXPECT_EQ(d[desc_n], N);
  EXPECT_EQ(d[desc_mb], 4);
  EXPECT_EQ(d[desc_nb], 3);
  EXPECT_EQ(d[desc_lld], A.lld());
  for (merge_op op : {merge_op::max, merge_op::min}) {
    convergent_matrix_options o;
    o.merge = op;
    EXPECT_THROW(convergent_matrix<T>(8, 8, grid, 2, 2, o), std::invalid_argument);
  }
}

// An element-wise product is associative and commutative on these values
// (powers of two times units: no rounding).
template <class T>
T times(T a, T b) {
  return a * b;
}

TYPED_TEST(Complex, UserMerge) {
  using T = TypeParam;
  convergent_matrix<T> A(4, 4, process_grid(world().mpi_comm()), 2, 2, &times<T>);
  for (std::int64_t k = 0; k < A.lld() * A.local_cols(); ++k) A.local()[k] = T(1);
  barrier();
  A.update(T(0, 1), 1, 2);  // i, once per process
  A.update(T(2, 0), 3, 3);
  A.commit();
  const T ip[4] = {T(1), T(0, 1), T(-1), T(0, -1)};
  EXPECT_EQ(A.get(1, 2), ip[rank_n() % 4]);
  EXPECT_EQ(A.get(3, 3), T(std::ldexp(1.0, rank_n())));
  EXPECT_EQ(A.get(0, 0), T(1));
}

// A Hermitian update's upper triangle via update_symmetric; fill_lower
// mirrors conjugates; symmetrize gives (A + A^H) / 2.
TYPED_TEST(Complex, HermitianFillLowerAndSymmetrize) {
  using T = TypeParam;
  constexpr std::int64_t n = 17;
  process_grid grid(world().mpi_comm());
  convergent_matrix<T> H(n, n, grid, 3, 2), S(n, n, grid, 3, 2);
  std::vector<std::complex<double>> ref(std::size_t(n * n));
  for (int p = 0; p < rank_n(); ++p) {
    std::mt19937_64 g(std::uint64_t(p) + 11);
    for (int u = 0; u < 6; ++u) {
      std::vector<std::int64_t> ix;
      for (std::int64_t i = 0; i < n; ++i)
        if (g() % 3 == 0) ix.push_back(i);
      if (ix.empty()) ix.push_back(std::int64_t(g() % n));
      const std::size_t k = ix.size();
      std::vector<T> B(k * k);  // Hermitian: B(j, i) = conj(B(i, j)), real diagonal
      for (std::size_t j = 0; j < k; ++j)
        for (std::size_t i = 0; i <= j; ++i) {
          const std::complex<double> v(double(std::int64_t(g() % 65) - 32) / 4,
                                       i == j ? 0.0 : double(std::int64_t(g() % 65) - 32) / 4);
          B[i + j * k] = T(v);
          B[j + i * k] = T(std::conj(v));
          ref[std::size_t(ix[i] + ix[j] * n)] += v;
          if (i != j) ref[std::size_t(ix[j] + ix[i] * n)] += std::conj(v);
        }
      if (p == rank_me()) {
        H.update_symmetric(B.data(), std::int64_t(k), ix);
        S.update(B.data(), std::int64_t(k), ix, ix);
      }
    }
  }
  H.commit();
  S.commit();
  H.fill_lower();
  std::int64_t wrong = 0;
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = rank_me(); i < n; i += rank_n()) wrong += H.get(i, j) != T(ref[std::size_t(i + j * n)]);
  EXPECT_EQ(wrong, 0);
  // S is the same Hermitian matrix plus a skew part that symmetrize removes.
  S.reopen();
  if (rank_me() == 0) {
    S.update(T(1, 2), 2, 5);  // (A + A^H)/2 puts (0.5, 1) at (2, 5) and (0.5, -1) at (5, 2)
    S.update(T(0, 3), 4, 4);  // and a purely imaginary diagonal disappears
  }
  S.commit();
  S.symmetrize();
  ref[std::size_t(2 + 5 * n)] += std::complex<double>(0.5, 1);
  ref[std::size_t(5 + 2 * n)] += std::complex<double>(0.5, -1);
  wrong = 0;
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = rank_me(); i < n; i += rank_n()) wrong += S.get(i, j) != T(ref[std::size_t(i + j * n)]);
  EXPECT_EQ(wrong, 0);
}

// The demo's path in complex: assemble a Hermitian positive definite A
// (a Gram matrix J^H J from per-process rows of J, plus n I), solve
// A X = B with p?posv, and check A X = B with p?gemm.
TYPED_TEST(Complex, HermitianCholeskySolve) {
  using T = TypeParam;
  using R = typename T::value_type;
  constexpr std::int64_t n = 24, nrhs = 3;
  process_grid grid(world().mpi_comm());
  convergent_matrix<T> A(n, n, grid, 4, 4), A0(n, n, grid, 4, 4), X(n, nrhs, grid, 4, 4), B(n, nrhs, grid, 4, 4);
  std::mt19937_64 g(std::uint64_t(rank_me()) + 3);
  auto unit = [&] { return R(double(g() % 2001) / 1000 - 1); };
  for (int row = 0; row < 5; ++row) {  // J has 5 rows per process, each on a random support
    std::vector<std::int64_t> ix;
    for (std::int64_t i = 0; i < n; ++i)
      if (g() % 2) ix.push_back(i);
    if (ix.empty()) continue;
    const std::size_t k = ix.size();
    std::vector<T> jr(k), G(k * k);
    for (auto& x : jr) x = T(unit(), unit());
    for (std::size_t j = 0; j < k; ++j)
      for (std::size_t i = 0; i < k; ++i) G[i + j * k] = std::conj(jr[i]) * jr[j];  // (J^H J)(i, j)
    A.update_symmetric(G.data(), std::int64_t(k), ix);
  }
  A.commit();
  A.fill_lower();
  linalg::add_to_diagonal(A, T(R(n)));
  // X0 known; B = A X0; solve on a copy of A, compare.
  for (std::int64_t k = 0; k < X.lld() * X.local_cols(); ++k) X.local()[k] = T(0);
  B.commit();
  X.commit();
  std::vector<std::int64_t> all(n);
  for (std::int64_t i = 0; i < n; ++i) all[std::size_t(i)] = i;
  X.reopen();
  if (rank_me() == 0) {
    std::vector<T> x0(std::size_t(n * nrhs));
    for (std::size_t k = 0; k < x0.size(); ++k) x0[k] = T(R(double(k % 7) - 3), R(double(k % 5) / 2));
    const std::int64_t cols[nrhs] = {0, 1, 2};
    X.update(x0.data(), n, all, cols);
  }
  X.commit();
  std::copy(A.local(), A.local() + A.lld() * A.local_cols(), A0.local());
  linalg::gemm('N', 'N', T(1), A, X, T(0), B);  // B = A X0
  convergent_matrix<T> Bsol(n, nrhs, grid, 4, 4);
  std::copy(B.local(), B.local() + B.lld() * B.local_cols(), Bsol.local());
  linalg::posv(A, Bsol);  // Bsol = A^{-1} B
  // Bsol - X0, relative to |X0|.
  linalg::gemm('N', 'N', T(1), A0, Bsol, T(-1), B);  // A0 Bsol - B: the residual
  const double res = linalg::norm('F', B), an = linalg::norm('F', A0), xn = linalg::norm('F', Bsol);
  const double eps = std::is_same_v<R, float> ? 1e-5 : 1e-13;
  EXPECT_LT(res / (an * xn), eps);
  double err = 0, x0n = 0;
  for (std::int64_t j = 0; j < nrhs; ++j)
    for (std::int64_t i = 0; i < n; ++i) {
      err = std::max(err, double(std::abs(Bsol.get(i, j) - X.get(i, j))));
      x0n = std::max(x0n, double(std::abs(X.get(i, j))));
    }
  const double tol = std::is_same_v<R, float> ? 1e-4 : 1e-12;
  EXPECT_LT(err / x0n, tol);
  // 'C': A0^H Bsol equals A0 Bsol for Hermitian A0.
  convergent_matrix<T> C1(n, nrhs, grid, 4, 4), C2(n, nrhs, grid, 4, 4);
  linalg::gemm('N', 'N', T(1), A0, Bsol, T(0), C1);
  linalg::gemm('C', 'N', T(1), A0, Bsol, T(0), C2);
  linalg::gemm('N', 'N', T(1), A0, Bsol, T(-1), C2);  // C2 = A0 Bsol - A0^H Bsol
  EXPECT_LT(linalg::norm('F', C2) / linalg::norm('F', C1), eps);
  EXPECT_THROW(linalg::gemm('X', 'N', T(1), A0, Bsol, T(0), C1), std::invalid_argument);
}

}  // namespace
