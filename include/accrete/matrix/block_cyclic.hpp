// accrete/matrix/block_cyclic.hpp -- index arithmetic of the 2-D block-cyclic
// distribution used by ScaLAPACK. Pure math: no MPI, no allocation.
#pragma once
/// \file

#include <cstdint>
#include <stdexcept>
#include <string>

namespace accrete {

/// Number of rows (or columns) of an n-long dimension, split into blocks of nb
/// and dealt cyclically over nprocs processes starting at isrcproc, that land
/// on process iproc. Same formula (and same results) as ScaLAPACK's NUMROC.
/// Preconditions, as there: nb >= 1, nprocs >= 1.
constexpr std::int64_t numroc(std::int64_t n, std::int64_t nb, int iproc, int isrcproc, int nprocs) noexcept {
  const std::int64_t mydist = (nprocs + iproc - isrcproc) % nprocs;
  const std::int64_t nblocks = n / nb;
  std::int64_t count = (nblocks / nprocs) * nb;
  const std::int64_t extra = nblocks % nprocs;
  if (mydist < extra) {
    count += nb;
  } else if (mydist == extra) {
    count += n % nb;
  }
  return count;
}

/// Rows of the most square grid of p processes: the largest divisor of p
/// not above sqrt(p) (1 x p for a prime p).
constexpr int square_grid_rows(int p) noexcept {
  int best = 1;
  for (int r = 1; static_cast<long long>(r) * r <= p; ++r)
    if (p % r == 0) best = r;
  return best;
}

/// An m x n global matrix in mb x nb blocks dealt cyclically over a
/// prows x pcols process grid, block (0,0) living on process (rsrc, csrc).
/// All indices are 0-based; local storage on each process is the
/// numroc-sized column-major matrix ScaLAPACK expects. mb = nb = 1 gives the
/// element-cyclic distribution; mb >= m and nb >= n puts everything on
/// (rsrc, csrc).
///
/// Index arguments are checked: an out-of-range index throws
/// std::out_of_range naming the index and the dimension it violated.
class block_cyclic {
 public:
  /// Throws std::invalid_argument unless m, n >= 0, mb, nb >= 1,
  /// prows, pcols >= 1, 0 <= rsrc < prows and 0 <= csrc < pcols.
  block_cyclic(std::int64_t m, std::int64_t n, std::int64_t mb, std::int64_t nb, int prows, int pcols, int rsrc = 0,
               int csrc = 0)
      : m_(m), n_(n), mb_(mb), nb_(nb), prows_(prows), pcols_(pcols), rsrc_(rsrc), csrc_(csrc) {
    require(m >= 0, "m", m);
    require(n >= 0, "n", n);
    require(mb >= 1, "mb", mb);
    require(nb >= 1, "nb", nb);
    require(prows >= 1, "prows", prows);
    require(pcols >= 1, "pcols", pcols);
    require(rsrc >= 0 && rsrc < prows, "rsrc", rsrc);
    require(csrc >= 0 && csrc < pcols, "csrc", csrc);
  }

  /// Global rows (M).
  std::int64_t rows() const noexcept { return m_; }
  /// Global columns (N).
  std::int64_t cols() const noexcept { return n_; }
  /// Rows per block (MB).
  std::int64_t row_block() const noexcept { return mb_; }
  /// Columns per block (NB).
  std::int64_t col_block() const noexcept { return nb_; }
  /// Process rows of the grid.
  int grid_rows() const noexcept { return prows_; }
  /// Process columns of the grid.
  int grid_cols() const noexcept { return pcols_; }
  /// Process row holding the first block row (RSRC).
  int src_row() const noexcept { return rsrc_; }
  /// Process column holding the first block column (CSRC).
  int src_col() const noexcept { return csrc_; }

  /// Rows stored on process row prow (ScaLAPACK NUMROC).
  std::int64_t local_rows(int prow) const {
    check(prow, prows_, "process row", "grid rows");
    return numroc(m_, mb_, prow, rsrc_, prows_);
  }
  /// Columns stored on process column pcol (ScaLAPACK NUMROC).
  std::int64_t local_cols(int pcol) const {
    check(pcol, pcols_, "process column", "grid columns");
    return numroc(n_, nb_, pcol, csrc_, pcols_);
  }

  /// Process row owning global row i.
  int owner_row(std::int64_t i) const {
    check(i, m_, "row index", "rows");
    return static_cast<int>((rsrc_ + i / mb_) % prows_);
  }
  /// Process column owning global column j.
  int owner_col(std::int64_t j) const {
    check(j, n_, "column index", "columns");
    return static_cast<int>((csrc_ + j / nb_) % pcols_);
  }

  /// Local row index of global row i on its owner, owner_row(i).
  std::int64_t local_row(std::int64_t i) const {
    check(i, m_, "row index", "rows");
    return (i / mb_) / prows_ * mb_ + i % mb_;
  }
  /// Local column index of global column j on its owner, owner_col(j).
  std::int64_t local_col(std::int64_t j) const {
    check(j, n_, "column index", "columns");
    return (j / nb_) / pcols_ * nb_ + j % nb_;
  }

  /// Global row of local row li on process row prow (li < local_rows(prow)).
  std::int64_t global_row(int prow, std::int64_t li) const {
    check(li, local_rows(prow), "local row index", "local rows");
    const std::int64_t dist = (prow - rsrc_ + prows_) % prows_;
    return ((li / mb_) * prows_ + dist) * mb_ + li % mb_;
  }
  /// Global column of local column lj on process column pcol (lj < local_cols(pcol)).
  std::int64_t global_col(int pcol, std::int64_t lj) const {
    check(lj, local_cols(pcol), "local column index", "local columns");
    const std::int64_t dist = (pcol - csrc_ + pcols_) % pcols_;
    return ((lj / nb_) * pcols_ + dist) * nb_ + lj % nb_;
  }

  /// Same shape, blocks, grid and sources.
  friend bool operator==(const block_cyclic&, const block_cyclic&) = default;

 private:
  static void require(bool ok, const char* name, std::int64_t value) {
    if (!ok) {
      throw std::invalid_argument(std::string("accrete::block_cyclic: invalid ") + name + " = " +
                                  std::to_string(value));
    }
  }

  static void check(std::int64_t v, std::int64_t n, const char* what, const char* dim) {
    if (v < 0 || v >= n) {
      throw std::out_of_range(std::string("accrete::block_cyclic: ") + what + " " + std::to_string(v) +
                              " out of range for " + dim + " = " + std::to_string(n));
    }
  }

  std::int64_t m_, n_, mb_, nb_;
  int prows_, pcols_, rsrc_, csrc_;
};

}  // namespace accrete
