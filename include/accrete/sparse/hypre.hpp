#pragma once
/// \file
// A sparse_matrix handed to hypre as an IJ matrix (ParCSR). Header-only and
// optional: include it only in a program that compiles and links against
// hypre (CMake: accrete::hypre when the build found hypre; it must use the
// same MPI as accrete).
#include <HYPRE.h>
#include <HYPRE_IJ_mv.h>
#include <HYPRE_parcsr_mv.h>

#include <cstdint>
#include <string>
#include <vector>

#include "accrete/error.hpp"
#include "accrete/sparse/sparse_matrix.hpp"
#include "accrete/team.hpp"

namespace accrete {

namespace detail {
inline void hypre_check(HYPRE_Int ierr, const char* call) {
  if (ierr != 0) {
    char msg[256] = {};
    HYPRE_DescribeError(ierr, msg);
    HYPRE_ClearAllErrors();
    throw error(std::string("accrete::to_hypre: ") + call + " failed: " + msg);
  }
}

// Sets every local row of H to A's values (global columns), row by row:
// only rows this process owns, so hypre stashes and sends nothing.
inline void hypre_set_rows(HYPRE_IJMatrix H, const sparse_matrix<HYPRE_Complex>& A) {
  const auto d = A.diag(), o = A.offdiag();
  const auto cmap = A.col_map();
  const std::int64_t nl = A.row_end() - A.row_begin();
  std::vector<HYPRE_BigInt> cols;
  std::vector<HYPRE_Complex> vals;
  for (std::int64_t r = 0; r < nl; ++r) {
    cols.clear();
    vals.clear();
    if (!d.row_ptr.empty()) {
      for (auto k = d.row_ptr[std::size_t(r)]; k < d.row_ptr[std::size_t(r) + 1]; ++k)
        cols.push_back(HYPRE_BigInt(A.col_begin() + d.col[std::size_t(k)])), vals.push_back(d.value[std::size_t(k)]);
      for (auto k = o.row_ptr[std::size_t(r)]; k < o.row_ptr[std::size_t(r) + 1]; ++k)
        cols.push_back(HYPRE_BigInt(cmap[std::size_t(o.col[std::size_t(k)])])), vals.push_back(o.value[std::size_t(k)]);
    }
    if (cols.empty()) continue;
    HYPRE_Int n = HYPRE_Int(cols.size());
    HYPRE_BigInt row = HYPRE_BigInt(A.row_begin() + r);
    hypre_check(HYPRE_IJMatrixSetValues(H, 1, &n, &row, cols.data(), vals.data()), "HYPRE_IJMatrixSetValues");
  }
}
}  // namespace detail

/// A hypre IJ matrix (object type HYPRE_PARCSR) holding A's values, on the
/// world team's communicator, preallocated exactly from A's two blocks.
/// Collective. Only for sparse_matrix<HYPRE_Complex> (double in hypre's
/// default build) after at least one commit; destroy it with
/// HYPRE_IJMatrixDestroy.
///
/// This is a copy, unlike to_petsc: hypre's ParCSR keeps each row's
/// diagonal entry first (its smoothers and diagonal scaling read it there),
/// while accrete keeps columns ascending (as PETSc requires), so hypre
/// must own values in its own order. Each process sets only its own rows,
/// so nothing passes through hypre's off-process stash. After a later
/// commit on the same pattern, hypre_refresh(H, A) copies the new values.
inline HYPRE_IJMatrix to_hypre(const sparse_matrix<HYPRE_Complex>& A) {
  if (A.round() == 0) throw error("accrete::to_hypre: the matrix has no committed pattern yet (call commit() first)");
  const MPI_Comm comm = world().mpi_comm();
  HYPRE_IJMatrix H = nullptr;
  detail::hypre_check(HYPRE_IJMatrixCreate(comm, HYPRE_BigInt(A.row_begin()), HYPRE_BigInt(A.row_end() - 1),
                                           HYPRE_BigInt(A.col_begin()), HYPRE_BigInt(A.col_end() - 1), &H),
                      "HYPRE_IJMatrixCreate");
  detail::hypre_check(HYPRE_IJMatrixSetObjectType(H, HYPRE_PARCSR), "HYPRE_IJMatrixSetObjectType");
  const auto d = A.diag(), o = A.offdiag();
  const std::int64_t nl = A.row_end() - A.row_begin();
  std::vector<HYPRE_Int> dn(std::size_t(nl), 0), on(std::size_t(nl), 0);
  for (std::int64_t r = 0; r < nl && !d.row_ptr.empty(); ++r) {
    dn[std::size_t(r)] = HYPRE_Int(d.row_ptr[std::size_t(r) + 1] - d.row_ptr[std::size_t(r)]);
    on[std::size_t(r)] = HYPRE_Int(o.row_ptr[std::size_t(r) + 1] - o.row_ptr[std::size_t(r)]);
  }
  detail::hypre_check(HYPRE_IJMatrixSetDiagOffdSizes(H, dn.data(), on.data()), "HYPRE_IJMatrixSetDiagOffdSizes");
  detail::hypre_check(HYPRE_IJMatrixInitialize(H), "HYPRE_IJMatrixInitialize");
  detail::hypre_set_rows(H, A);
  detail::hypre_check(HYPRE_IJMatrixAssemble(H), "HYPRE_IJMatrixAssemble");
  return H;
}

/// Collective: copies A's values into H again (after a later commit on the
/// pattern H was made from; entries outside it are an error in hypre).
inline void hypre_refresh(HYPRE_IJMatrix H, const sparse_matrix<HYPRE_Complex>& A) {
  detail::hypre_check(HYPRE_IJMatrixInitialize(H), "HYPRE_IJMatrixInitialize");
  detail::hypre_set_rows(H, A);
  detail::hypre_check(HYPRE_IJMatrixAssemble(H), "HYPRE_IJMatrixAssemble");
}

}  // namespace accrete
