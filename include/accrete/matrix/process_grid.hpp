// accrete/matrix/process_grid.hpp -- a 2-D process grid over an MPI
// communicator, with an optional (lazily created) BLACS context. One of the
// two public headers whose purpose is MPI interop (with team.hpp); the MPI
// and BLACS calls are in src/backend/mpi/process_grid.cpp.
#pragma once
/// \file

#include <mpi.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "accrete/matrix/block_cyclic.hpp"

// BLACS C interface. Debian ships no header for it; the symbols live in
// libscalapack-openmpi / libscalapack-mpich, which libaccrete links.
// BLACS's own routines: its reference documents them (hidden from the API reference).
/// \cond
extern "C" {
int Csys2blacs_handle(MPI_Comm comm);
void Cfree_blacs_system_handle(int handle);
void Cblacs_gridinit(int* context, const char* order, int nprow, int npcol);
void Cblacs_gridinfo(int context, int* nprow, int* npcol, int* myrow, int* mycol);
void Cblacs_gridexit(int context);
}
/// \endcond

namespace accrete {

/// How communicator ranks are laid out over the grid.
/// row_major: rank = prow * cols() + pcol; col_major: rank = pcol * rows() + prow.
/// These match BLACS "Row" and "Col" grid orders.
enum class grid_order { row_major, col_major };

/// Coordinates of one process in a process_grid.
struct grid_coords {
  int row;  ///< process row
  int col;  ///< process column
  /// Same row and column.
  friend bool operator==(const grid_coords&, const grid_coords&) = default;
};

/// A pr x pc grid of the processes of an MPI communicator.
///
/// The grid does NOT own the communicator: it neither duplicates nor frees it,
/// so the communicator must outlive the grid (and every copy of it).
///
/// Copies share one lazily created BLACS context, which is released (with
/// Cblacs_gridexit) when the last copy is destroyed. Because that release is
/// collective over the communicator, destroy grids whose context was created
/// in the same order on every rank, and before MPI_Finalize. A moved-from
/// grid may only be destroyed or assigned to.
class process_grid {
 public:
  /// Picks pr = the largest divisor of P = size(comm) not above sqrt(P),
  /// pc = P / pr, row-major (so P = 4 gives 2x2, a prime P gives 1xP).
  explicit process_grid(MPI_Comm comm)
      : process_grid(comm, square_grid_rows(comm_size(comm)), comm_size(comm) / square_grid_rows(comm_size(comm))) {}

  /// An explicit pr x pc grid. Throws std::invalid_argument unless
  /// pr * pc equals the size of comm.
  process_grid(MPI_Comm comm, int pr, int pc, grid_order order = grid_order::row_major);

  /// Process rows (pr).
  int rows() const noexcept { return rows_; }
  /// Process columns (pc).
  int cols() const noexcept { return cols_; }
  /// Processes in the grid (pr * pc).
  int size() const noexcept { return rows_ * cols_; }
  /// The caller's process row.
  int my_row() const noexcept { return my_row_; }
  /// The caller's process column.
  int my_col() const noexcept { return my_col_; }
  /// How ranks map to grid positions.
  grid_order order() const noexcept { return order_; }
  /// The communicator the grid was built on (not owned; see class comment).
  MPI_Comm comm() const noexcept { return comm_; }

  /// Rank in comm() of the process at (prow, pcol); throws std::out_of_range.
  int rank_of(int prow, int pcol) const {
    check(prow, rows_, "process row");
    check(pcol, cols_, "process column");
    return order_ == grid_order::row_major ? prow * cols_ + pcol : pcol * rows_ + prow;
  }

  /// Grid coordinates of a rank of comm(); throws std::out_of_range.
  grid_coords coords_of(int rank) const {
    check(rank, rows_ * cols_, "rank");
    return order_ == grid_order::row_major ? grid_coords{rank / cols_, rank % cols_}
                                           : grid_coords{rank % rows_, rank / rows_};
  }

  /// The BLACS context of this grid, created on first use. The first call is
  /// collective over comm() (every rank must make it); later calls are local.
  /// Not thread-safe. Requires linking ScaLAPACK/BLACS.
  int blacs_context() const;

 private:
  // Held behind a shared_ptr so copies made before the first blacs_context()
  // call still share (and free exactly once) the context. The release hook is
  // installed only by blacs_context(), which keeps the BLACS link dependency
  // out of code that never asks for a context.
  struct blacs_state {
    bool created = false;
    int context = -1;
    void (*release)(int) = nullptr;
    blacs_state() = default;
    blacs_state(const blacs_state&) = delete;
    blacs_state& operator=(const blacs_state&) = delete;
    ~blacs_state() {
      if (created && release) release(context);
    }
  };

  static int comm_size(MPI_Comm comm);

  static void check(int v, int n, const char* what) {
    if (v < 0 || v >= n) {
      throw std::out_of_range(std::string("accrete::process_grid: ") + what + " " + std::to_string(v) +
                              " out of range [0, " + std::to_string(n) + ")");
    }
  }

  MPI_Comm comm_;
  grid_order order_;
  int rows_ = 0;
  int cols_ = 0;
  int my_row_ = 0;
  int my_col_ = 0;
  std::shared_ptr<blacs_state> state_;
};

}  // namespace accrete
