#pragma once
/// \file
// accrete::linalg: ScaLAPACK / PBLAS on assembled convergent_matrix objects,
// in place on their local storage (no copies). Shared by the C++ demo and
// the Python package (accrete.linalg).
//
// Every function is collective over the matrices' grid, which must be the
// same process_grid (copies of one grid object share its BLACS context;
// std::invalid_argument otherwise). Call after commit() and before any
// process reopens. A ScaLAPACK failure throws accrete::error naming the
// routine and its INFO.
#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <complex>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "accrete/error.hpp"
#include "accrete/matrix/convergent_matrix.hpp"
#include "accrete/matrix/scalapack.hpp"

// ScaLAPACK's own routines: its reference documents them (hidden from the API reference).
/// \cond
extern "C" {
void psgesv_(const int* n, const int* nrhs, float* a, const int* ia, const int* ja, const int* desca, int* ipiv,
             float* b, const int* ib, const int* jb, const int* descb, int* info);
void pdgesv_(const int* n, const int* nrhs, double* a, const int* ia, const int* ja, const int* desca, int* ipiv,
             double* b, const int* ib, const int* jb, const int* descb, int* info);
void pssyevd_(const char* jobz, const char* uplo, const int* n, float* a, const int* ia, const int* ja,
              const int* desca, float* w, float* z, const int* iz, const int* jz, const int* descz, float* work,
              const int* lwork, int* iwork, const int* liwork, int* info, std::size_t jobz_len = 1,
              std::size_t uplo_len = 1);
void pdsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* ia, const int* ja,
              const int* desca, double* w, double* z, const int* iz, const int* jz, const int* descz, double* work,
              const int* lwork, int* iwork, const int* liwork, int* info, std::size_t jobz_len = 1,
              std::size_t uplo_len = 1);
using accrete_cfloat = std::complex<float>;  // Fortran COMPLEX and C++'s share one layout
using accrete_cdouble = std::complex<double>;
float pclange_(const char* norm, const int* m, const int* n, const accrete_cfloat* a, const int* ia, const int* ja,
               const int* desca, float* work, std::size_t norm_len = 1);
double pzlange_(const char* norm, const int* m, const int* n, const accrete_cdouble* a, const int* ia, const int* ja,
                const int* desca, double* work, std::size_t norm_len = 1);
void pcposv_(const char* uplo, const int* n, const int* nrhs, accrete_cfloat* a, const int* ia, const int* ja,
             const int* desca, accrete_cfloat* b, const int* ib, const int* jb, const int* descb, int* info,
             std::size_t uplo_len = 1);
void pzposv_(const char* uplo, const int* n, const int* nrhs, accrete_cdouble* a, const int* ia, const int* ja,
             const int* desca, accrete_cdouble* b, const int* ib, const int* jb, const int* descb, int* info,
             std::size_t uplo_len = 1);
void pcgesv_(const int* n, const int* nrhs, accrete_cfloat* a, const int* ia, const int* ja, const int* desca,
             int* ipiv, accrete_cfloat* b, const int* ib, const int* jb, const int* descb, int* info);
void pzgesv_(const int* n, const int* nrhs, accrete_cdouble* a, const int* ia, const int* ja, const int* desca,
             int* ipiv, accrete_cdouble* b, const int* ib, const int* jb, const int* descb, int* info);
// PBLAS is written in C: no hidden length arguments.
void pcgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
             const accrete_cfloat* alpha, const accrete_cfloat* a, const int* ia, const int* ja, const int* desca,
             const accrete_cfloat* b, const int* ib, const int* jb, const int* descb, const accrete_cfloat* beta,
             accrete_cfloat* c, const int* ic, const int* jc, const int* descc);
void pzgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
             const accrete_cdouble* alpha, const accrete_cdouble* a, const int* ia, const int* ja, const int* desca,
             const accrete_cdouble* b, const int* ib, const int* jb, const int* descb, const accrete_cdouble* beta,
             accrete_cdouble* c, const int* ic, const int* jc, const int* descc);
void psgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k, const float* alpha,
             const float* a, const int* ia, const int* ja, const int* desca, const float* b, const int* ib,
             const int* jb, const int* descb, const float* beta, float* c, const int* ic, const int* jc,
             const int* descc);
void pdgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k, const double* alpha,
             const double* a, const int* ia, const int* ja, const int* desca, const double* b, const int* ib,
             const int* jb, const int* descb, const double* beta, double* c, const int* ic, const int* jc,
             const int* descc);
}
/// \endcond

namespace accrete::linalg {

/// \cond
namespace detail {
inline void same_grid(const std::array<int, 9>& a, const std::array<int, 9>& b, const char* fn) {
  if (a[1] != b[1])
    throw std::invalid_argument(std::string("accrete::linalg::") + fn +
                                ": the matrices are on different process grids (build them on one process_grid)");
}
template <class T>
void check_system(const convergent_matrix<T>& A, const convergent_matrix<T>& B, const char* fn) {
  if (A.rows() != A.cols() || B.rows() != A.rows())
    throw std::invalid_argument(std::string("accrete::linalg::") + fn + ": A is " + std::to_string(A.rows()) + " x " +
                                std::to_string(A.cols()) + ", B has " + std::to_string(B.rows()) +
                                " rows (A square, B with A's rows)");
}
inline void check_info(int info, const char* routine) {
  if (info != 0) throw accrete::error(std::string("accrete::linalg: ") + routine + " returned INFO = " + std::to_string(info));
}
inline int fint(std::int64_t v, const char* what) {
  if (v > INT_MAX) throw std::invalid_argument(std::string("accrete::linalg: ") + what + " does not fit a Fortran INTEGER");
  return int(v);
}

// One overload per ScaLAPACK precision (s, d, c, z), so that the
// functions below are written once. Arguments as ScaLAPACK's, minus ia/ja
// (always 1: whole matrices).
inline constexpr int one = 1;
#define ACCRETE_LINALG_PRECISION(T, R, x)                                                                           \
  inline R lange(char w, int m, int n, const T* a, const int* d, R* work) {                                         \
    return p##x##lange_(&w, &m, &n, a, &one, &one, d, work);                                                        \
  }                                                                                                                 \
  inline void posv(int n, int nrhs, T* a, const int* da, T* b, const int* db, int* info) {                         \
    p##x##posv_("U", &n, &nrhs, a, &one, &one, da, b, &one, &one, db, info);                                        \
  }                                                                                                                 \
  inline void gesv(int n, int nrhs, T* a, const int* da, int* ipiv, T* b, const int* db, int* info) {              \
    p##x##gesv_(&n, &nrhs, a, &one, &one, da, ipiv, b, &one, &one, db, info);                                       \
  }                                                                                                                 \
  inline void gemm(char ta, char tb, int m, int n, int k, T alpha, const T* a, const int* da, const T* b,          \
                   const int* db, T beta, T* c, const int* dc) {                                                    \
    p##x##gemm_(&ta, &tb, &m, &n, &k, &alpha, a, &one, &one, da, b, &one, &one, db, &beta, c, &one, &one, dc);      \
  }
ACCRETE_LINALG_PRECISION(float, float, s)
ACCRETE_LINALG_PRECISION(double, double, d)
ACCRETE_LINALG_PRECISION(std::complex<float>, float, c)
ACCRETE_LINALG_PRECISION(std::complex<double>, double, z)
#undef ACCRETE_LINALG_PRECISION
}  // namespace detail
/// \endcond

/// A norm of A (p?lange): '1' (largest absolute column sum), 'I' (largest
/// absolute row sum), 'F' (Frobenius) or 'M' (largest absolute value).
template <class T>
double norm(char which, const convergent_matrix<T>& A) {
  if (which != '1' && which != 'I' && which != 'F' && which != 'M')
    throw std::invalid_argument(std::string("accrete::linalg::norm: '") + std::string(1, which) +
                                "' is not one of '1', 'I', 'F', 'M'");
  const auto da = A.descriptor();
  const int m = detail::fint(A.rows(), "m"), n = detail::fint(A.cols(), "n");
  // p?lange's (real) workspace: local rows or columns plus a block, whichever is larger.
  using R = decltype(std::abs(T()));
  std::vector<R> work(static_cast<std::size_t>(std::max(A.local_rows(), A.local_cols()) +
                                               std::max(A.layout().row_block(), A.layout().col_block()) + 1));
  return double(detail::lange(which, m, n, A.local(), da.data(), work.data()));
}

/// A += alpha I (on the diagonal of A's leading square). Local: every
/// process updates the diagonal elements it owns.
template <class T>
void add_to_diagonal(convergent_matrix<T>& A, T alpha) {
  const block_cyclic& L = A.layout();
  const int my_row = A.grid().my_row(), my_col = A.grid().my_col();
  for (std::int64_t lj = 0; lj < A.local_cols(); ++lj) {
    const std::int64_t j = L.global_col(my_col, lj);
    if (j < A.rows() && L.owner_row(j) == my_row) A.local()[L.local_row(j) + lj * A.lld()] += alpha;
  }
}

/// Solves A X = B for symmetric (complex: Hermitian) positive definite A,
/// whose upper triangle is read: A becomes its Cholesky factor U, B becomes
/// X. p?posv.
template <class T>
void posv(convergent_matrix<T>& A, convergent_matrix<T>& B) {
  detail::check_system(A, B, "posv");
  const auto da = A.descriptor(), db = B.descriptor();
  detail::same_grid(da, db, "posv");
  const int n = detail::fint(A.rows(), "n"), nrhs = detail::fint(B.cols(), "nrhs");
  int info = 0;
  detail::posv(n, nrhs, A.local(), da.data(), B.local(), db.data(), &info);
  detail::check_info(info, "p?posv");
}

/// Solves A X = B for general square A by LU with partial pivoting: A
/// becomes its factors, B becomes X. p?gesv.
template <class T>
void gesv(convergent_matrix<T>& A, convergent_matrix<T>& B) {
  detail::check_system(A, B, "gesv");
  const auto da = A.descriptor(), db = B.descriptor();
  detail::same_grid(da, db, "gesv");
  const int n = detail::fint(A.rows(), "n"), nrhs = detail::fint(B.cols(), "nrhs");
  std::vector<int> ipiv(std::size_t(A.local_rows() + A.layout().row_block()));
  int info = 0;
  detail::gesv(n, nrhs, A.local(), da.data(), ipiv.data(), B.local(), db.data(), &info);
  detail::check_info(info, "p?gesv");
}

/// Eigenvalues (ascending, on every process) and eigenvectors (into Z) of
/// symmetric A, whose upper triangle is read and then destroyed. p?syevd.
/// ScaLAPACK requires square blocks (mb == nb) here. Real types only (the
/// Hermitian p?heevd is not wrapped yet).
template <class T>
std::vector<T> syevd(convergent_matrix<T>& A, convergent_matrix<T>& Z) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "linalg::syevd: float and double only");
  if (A.rows() != A.cols() || Z.rows() != A.rows() || Z.cols() != A.cols())
    throw std::invalid_argument("accrete::linalg::syevd: A is " + std::to_string(A.rows()) + " x " +
                                std::to_string(A.cols()) + ", Z " + std::to_string(Z.rows()) + " x " +
                                std::to_string(Z.cols()) + " (both square, one size)");
  const auto da = A.descriptor(), dz = Z.descriptor();
  detail::same_grid(da, dz, "syevd");
  const int n = detail::fint(A.rows(), "n"), one = 1;
  std::vector<T> w(static_cast<std::size_t>(n));
  int info = 0, lwork = -1, liwork = -1, iwork_q = 0;
  T work_q = 0;
  auto call = [&](T* work, int* iwork) {
    if constexpr (std::is_same_v<T, float>)
      pssyevd_("V", "U", &n, A.local(), &one, &one, da.data(), w.data(), Z.local(), &one, &one, dz.data(), work,
               &lwork, iwork, &liwork, &info);
    else
      pdsyevd_("V", "U", &n, A.local(), &one, &one, da.data(), w.data(), Z.local(), &one, &one, dz.data(), work,
               &lwork, iwork, &liwork, &info);
  };
  call(&work_q, &iwork_q);  // workspace query
  detail::check_info(info, "p?syevd (workspace query)");
  lwork = int(work_q) + 1;
  liwork = std::max(iwork_q, 1);
  std::vector<T> work(static_cast<std::size_t>(lwork));
  std::vector<int> iwork(static_cast<std::size_t>(liwork));
  call(work.data(), iwork.data());
  detail::check_info(info, "p?syevd");
  return w;
}

/// C = alpha op(A) op(B) + beta C, op = identity ('N'), transpose ('T')
/// or, for complex T, conjugate transpose ('C'). p?gemm.
template <class T>
void gemm(char transa, char transb, T alpha, const convergent_matrix<T>& A, const convergent_matrix<T>& B, T beta,
          convergent_matrix<T>& C) {
  constexpr bool complex = !std::is_floating_point_v<T>;
  auto op = [](char t, const char* which) {
    if (t == 'N' || t == 'n') return 'N';
    if (t == 'T' || t == 't') return 'T';
    if (complex && (t == 'C' || t == 'c')) return 'C';
    throw std::invalid_argument(std::string("accrete::linalg::gemm: ") + which + " = '" + std::string(1, t) +
                                (complex ? "' (use 'N', 'T' or 'C')" : "' (use 'N' or 'T')"));
  };
  const char a = op(transa, "transa"), b = op(transb, "transb");
  const bool ta = a != 'N', tb = b != 'N';
  const std::int64_t m = ta ? A.cols() : A.rows(), k = ta ? A.rows() : A.cols();
  const std::int64_t kb = tb ? B.cols() : B.rows(), n = tb ? B.rows() : B.cols();
  if (k != kb || C.rows() != m || C.cols() != n)
    throw std::invalid_argument("accrete::linalg::gemm: op(A) is " + std::to_string(m) + " x " + std::to_string(k) +
                                ", op(B) " + std::to_string(kb) + " x " + std::to_string(n) + ", C " +
                                std::to_string(C.rows()) + " x " + std::to_string(C.cols()));
  const auto da = A.descriptor(), db = B.descriptor(), dc = C.descriptor();
  detail::same_grid(da, db, "gemm");
  detail::same_grid(da, dc, "gemm");
  detail::gemm(a, b, detail::fint(m, "m"), detail::fint(n, "n"), detail::fint(k, "k"), alpha, A.local(), da.data(),
               B.local(), db.data(), beta, C.local(), dc.data());
}

}  // namespace accrete::linalg
