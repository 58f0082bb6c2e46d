// accrete/matrix/scalapack.hpp -- ScaLAPACK array descriptors for
// block_cyclic layouts, plus declarations of the ScaLAPACK routines the
// tests and demos call. Using this header requires linking ScaLAPACK
// (CMake target accrete_scalapack).
#pragma once
/// \file

#include <accrete/matrix/block_cyclic.hpp>
#include <accrete/matrix/process_grid.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

// Fortran-callable ScaLAPACK entry points (all arguments by pointer; indices
// ia/ja are 1-based). Routines written in Fortran that take CHARACTER
// arguments also take gfortran's hidden length arguments (size_t, appended);
// they are declared here, defaulted to 1, because omitting them is undefined
// behaviour that newer gfortran optimisations do exploit. pdgemv_ (PBLAS)
// and p?gemr2d_ are C and have none.
// ScaLAPACK's own routines: its reference documents them (hidden from the API reference).
/// \cond
extern "C" {
int numroc_(const int* n, const int* nb, const int* iproc, const int* isrcproc, const int* nprocs);
void descinit_(int* desc, const int* m, const int* n, const int* mb, const int* nb, const int* irsrc, const int* icsrc,
               const int* ictxt, const int* lld, int* info);

void pdgemr2d_(const int* m, const int* n, const double* a, const int* ia, const int* ja, const int* desca, double* b,
               const int* ib, const int* jb, const int* descb, const int* ictxt);
void psgemr2d_(const int* m, const int* n, const float* a, const int* ia, const int* ja, const int* desca, float* b,
               const int* ib, const int* jb, const int* descb, const int* ictxt);

double pdlange_(const char* norm, const int* m, const int* n, const double* a, const int* ia, const int* ja,
                const int* desca, double* work, std::size_t norm_len = 1);
float pslange_(const char* norm, const int* m, const int* n, const float* a, const int* ia, const int* ja,
               const int* desca, float* work, std::size_t norm_len = 1);

void pdposv_(const char* uplo, const int* n, const int* nrhs, double* a, const int* ia, const int* ja, const int* desca,
             double* b, const int* ib, const int* jb, const int* descb, int* info, std::size_t uplo_len = 1);
void psposv_(const char* uplo, const int* n, const int* nrhs, float* a, const int* ia, const int* ja, const int* desca,
             float* b, const int* ib, const int* jb, const int* descb, int* info, std::size_t uplo_len = 1);

void psgemv_(const char* trans, const int* m, const int* n, const float* alpha, const float* a, const int* ia,
             const int* ja, const int* desca, const float* x, const int* ix, const int* jx, const int* descx,
             const int* incx, const float* beta, float* y, const int* iy, const int* jy, const int* descy,
             const int* incy);

void pdgemv_(const char* trans, const int* m, const int* n, const double* alpha, const double* a, const int* ia,
             const int* ja, const int* desca, const double* x, const int* ix, const int* jx, const int* descx,
             const int* incx, const double* beta, double* y, const int* iy, const int* jy, const int* descy,
             const int* incy);
}
/// \endcond

namespace accrete {

/// Indices of the fields of a ScaLAPACK array descriptor (DTYPE_ = 1 kind).
enum descriptor_field : int {
  desc_dtype = 0,
  desc_ctxt,
  desc_m,
  desc_n,
  desc_mb,
  desc_nb,
  desc_rsrc,
  desc_csrc,
  desc_lld
};

/// ScaLAPACK descriptor {DTYPE=1, CTXT, M, N, MB, NB, RSRC, CSRC, LLD} of this
/// process's piece of `layout` over `grid`, stored column-major with leading
/// dimension `lld`. CTXT is grid.blacs_context(), so the first call for a
/// grid is collective over its communicator.
///
/// Throws std::invalid_argument if the layout's grid dimensions differ from
/// the grid's, if lld < max(1, local rows on this process), or if a value
/// does not fit in a Fortran INTEGER (int); the message names the value.
inline std::array<int, 9> descriptor(const block_cyclic& layout, const process_grid& grid, std::int64_t lld) {
  if (layout.grid_rows() != grid.rows() || layout.grid_cols() != grid.cols()) {
    throw std::invalid_argument("accrete::descriptor: layout is for a " + std::to_string(layout.grid_rows()) + "x" +
                                std::to_string(layout.grid_cols()) + " grid but the process grid is " +
                                std::to_string(grid.rows()) + "x" + std::to_string(grid.cols()));
  }
  // Before any rank-local check, so that a bad lld on one rank cannot leave
  // the others waiting in the collective context creation.
  const int ctxt = grid.blacs_context();
  const std::int64_t min_lld = std::max<std::int64_t>(1, layout.local_rows(grid.my_row()));
  if (lld < min_lld) {
    throw std::invalid_argument("accrete::descriptor: lld = " + std::to_string(lld) +
                                " is below max(1, local rows) = " + std::to_string(min_lld));
  }
  auto narrow = [](std::int64_t v, const char* name) {
    if (v > std::numeric_limits<int>::max()) {
      throw std::invalid_argument(std::string("accrete::descriptor: ") + name + " = " + std::to_string(v) +
                                  " does not fit in a ScaLAPACK int");
    }
    return static_cast<int>(v);
  };
  return {1,
          ctxt,
          narrow(layout.rows(), "m"),
          narrow(layout.cols(), "n"),
          narrow(layout.row_block(), "mb"),
          narrow(layout.col_block(), "nb"),
          layout.src_row(),
          layout.src_col(),
          narrow(lld, "lld")};
}

}  // namespace accrete
