#pragma once
/// \file
// A sparse_matrix handed to PETSc as an MPIAIJ Mat over accrete's own value
// array. Header-only and optional: include it only in a program that
// compiles and links against PETSc (CMake: accrete::petsc when the build
// found PETSc; it must use the same MPI as accrete).
#include <petscmat.h>

#include <cstdint>
#include <string>
#include <vector>

#include "accrete/error.hpp"
#include "accrete/sparse/sparse_matrix.hpp"
#include "accrete/team.hpp"

namespace accrete {

namespace detail {
// What the Mat borrows besides the values: PETSc's index arrays (its
// PetscInt, converted once from accrete's 64-bit row pointers and 32-bit
// columns; the off-diagonal columns global, as PETSc takes them, which it
// then compacts in place) and where the values were, to notice a pattern
// that has grown since.
struct petsc_handoff {
  std::vector<PetscInt> di, dj, oi, oj;
  const void* values = nullptr;
  std::int64_t nnz = 0;
};

inline void petsc_check(PetscErrorCode ierr, const char* call) {
  if (ierr != 0) throw error(std::string("accrete::to_petsc: ") + call + " failed with PETSc error " + std::to_string(int(ierr)));
}

inline PetscErrorCode petsc_handoff_destroy(void* p) {
  delete static_cast<petsc_handoff*>(p);
  return 0;
}

inline petsc_handoff* petsc_handoff_of(Mat m) {
  PetscObject o = nullptr;
  petsc_check(PetscObjectQuery(reinterpret_cast<PetscObject>(m), "accrete_handoff", &o), "PetscObjectQuery");
  if (!o) throw error("accrete::petsc_refresh: the Mat was not made by accrete::to_petsc");
  void* p = nullptr;
  petsc_check(PetscContainerGetPointer(reinterpret_cast<PetscContainer>(o), &p), "PetscContainerGetPointer");
  return static_cast<petsc_handoff*>(p);
}
}  // namespace detail

/// A PETSc MPIAIJ Mat whose values are A's own (no copy: PETSc reads and
/// writes A's value array, diag() then offdiag()), made with
/// MatCreateMPIAIJWithSplitArrays on the world team's communicator.
/// Collective. Only for sparse_matrix<PetscScalar> (double in PETSc's
/// default build) after at least one commit.
///
/// Lifetime: A must outlive the Mat (MatDestroy it first), and A's pattern
/// must not change while the Mat lives: with a frozen pattern (the
/// default) later rounds add into the same slots, so after each later
/// commit call petsc_refresh(M, A) (collective) and the Mat holds that
/// round's values. With growing_pattern, a commit that adds entries moves
/// the storage: make a new Mat (petsc_refresh throws if the storage moved).
/// Between reopen() (or reset()) and the next commit the values are in flux,
/// so do not use the Mat then. Index arrays are PETSc's own copies, held by
/// the Mat.
inline Mat to_petsc(sparse_matrix<PetscScalar>& A) {
  if (A.round() == 0) throw error("accrete::to_petsc: the matrix has no committed pattern yet (call commit() first)");
  const auto d = A.diag(), o = A.offdiag();
  const auto cmap = A.col_map();
  auto* h = new detail::petsc_handoff;
  const auto nl = std::size_t(A.row_end() - A.row_begin());
  h->di.assign(d.row_ptr.begin(), d.row_ptr.end());
  h->oi.assign(o.row_ptr.begin(), o.row_ptr.end());
  h->dj.assign(d.col.begin(), d.col.end());
  h->oj.resize(o.col.size());
  for (std::size_t k = 0; k < o.col.size(); ++k) h->oj[k] = PetscInt(cmap[std::size_t(o.col[k])]);
  if (h->di.empty()) h->di.assign(nl + 1, 0), h->oi.assign(nl + 1, 0);
  h->values = d.value.data();
  h->nnz = A.local_nnz();
  // PETSc wants non-null arrays even for a process without entries.
  static PetscScalar none = 0;
  static PetscInt no_index = 0;
  PetscScalar* dv = d.value.empty() ? &none : d.value.data();
  PetscScalar* ov = o.value.empty() ? &none : o.value.data();
  Mat M = nullptr;
  const PetscErrorCode ierr = MatCreateMPIAIJWithSplitArrays(
      world().mpi_comm(), PetscInt(nl), PetscInt(A.col_end() - A.col_begin()), PetscInt(A.rows()), PetscInt(A.cols()),
      h->di.data(), h->dj.empty() ? &no_index : h->dj.data(), dv, h->oi.data(), h->oj.empty() ? &no_index : h->oj.data(),
      ov, &M);
  if (ierr != 0) {
    delete h;
    detail::petsc_check(ierr, "MatCreateMPIAIJWithSplitArrays");
  }
  PetscContainer c = nullptr;
  detail::petsc_check(PetscContainerCreate(PETSC_COMM_SELF, &c), "PetscContainerCreate");
  detail::petsc_check(PetscContainerSetPointer(c, h), "PetscContainerSetPointer");
  detail::petsc_check(PetscContainerSetUserDestroy(c, detail::petsc_handoff_destroy), "PetscContainerSetUserDestroy");
  detail::petsc_check(PetscObjectCompose(reinterpret_cast<PetscObject>(M), "accrete_handoff", reinterpret_cast<PetscObject>(c)),
                      "PetscObjectCompose");
  detail::petsc_check(PetscContainerDestroy(&c), "PetscContainerDestroy");
  return M;
}

/// Collective: tells PETSc that A's values changed (after a later commit on
/// the same pattern), so that everything PETSc derived from them (the
/// diagonal a Jacobi preconditioner keeps, norms) is computed again. Throws
/// if A's storage moved since to_petsc (a growing pattern gained entries).
inline void petsc_refresh(Mat M, const sparse_matrix<PetscScalar>& A) {
  const detail::petsc_handoff* h = detail::petsc_handoff_of(M);
  // Agreed first: a pattern may have grown on some processes only, and
  // MatAssemblyBegin is collective.
  int moved = h->values != A.diag().value.data() || h->nnz != A.local_nnz(), any = 0;
  MPI_Allreduce(&moved, &any, 1, MPI_INT, MPI_MAX, world().mpi_comm());
  if (any)
    throw error("accrete::petsc_refresh: the matrix's pattern changed since to_petsc (" + std::to_string(h->nnz) +
                " entries here then, " + std::to_string(A.local_nnz()) + " now, or elsewhere): make a new Mat");
  detail::petsc_check(MatAssemblyBegin(M, MAT_FINAL_ASSEMBLY), "MatAssemblyBegin");
  detail::petsc_check(MatAssemblyEnd(M, MAT_FINAL_ASSEMBLY), "MatAssemblyEnd");
}

}  // namespace accrete
