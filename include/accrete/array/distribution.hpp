// accrete/array/distribution.hpp -- how a dist_array's elements are dealt
// over a prows x pcols process grid. Pure index arithmetic: no MPI.
//
// Four distributions, each a pair of one-dimensional maps (`axis`):
//   block          near-equal contiguous blocks (Global Arrays' regular
//                  distribution): part k of an n-long axis over p parts
//                  holds [k*n/p, (k+1)*n/p);
//   irregular      user-given block boundaries (NGA_Create_irreg);
//   block_cyclic   ScaLAPACK's mb x nb blocks dealt cyclically;
//   element_cyclic Elemental's [MC,MR]: block-cyclic with 1 x 1 blocks.
// Grid part (r, c) is numbered r * pcols + c. Each part's elements form one
// column-major local array of local_rows x local_cols, and the elements a
// part owns in any global index range are consecutive in its local indices
// (true of all four), so any patch is one local rectangle per owner.
#pragma once
/// \file

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "accrete/matrix/block_cyclic.hpp"

namespace accrete {

/// A rectangle of global indices, half-open: rows [row_lo, row_hi), columns
/// [col_lo, col_hi). Empty when either range is empty.
struct patch {
  std::int64_t row_lo = 0,  ///< first row
      row_hi = 0,           ///< one past the last row
      col_lo = 0,           ///< first column
      col_hi = 0;           ///< one past the last column
  /// Rows in the patch (0 if the row range is empty or inverted).
  std::int64_t rows() const noexcept { return row_hi > row_lo ? row_hi - row_lo : 0; }
  /// Columns in the patch (0 if the column range is empty or inverted).
  std::int64_t cols() const noexcept { return col_hi > col_lo ? col_hi - col_lo : 0; }
  /// Elements in the patch.
  std::int64_t size() const noexcept { return rows() * cols(); }
  /// Whether the patch holds no element.
  bool empty() const noexcept { return size() == 0; }
  /// Same four bounds.
  friend bool operator==(const patch&, const patch&) = default;
};

/// Consecutive global indices [start, start + length).
struct index_run {
  std::int64_t start,  ///< first index
      length;          ///< number of indices
  /// Same start and length.
  friend bool operator==(const index_run&, const index_run&) = default;
};

/// One dimension of a distribution: global index -> (part, local index).
/// Either cyclic (blocks dealt round-robin over the parts, as ScaLAPACK) or
/// irregular (part k holds one contiguous range).
class axis {
 public:
  /// Blocks of `block` dealt cyclically over `parts`, block 0 on part `src`.
  static axis cyclic(std::int64_t n, std::int64_t block, int parts, int src = 0) {
    require(n >= 0, "extent", n);
    require(block >= 1, "block size", block);
    require(parts >= 1, "parts", parts);
    require(src >= 0 && src < parts, "source part", src);
    axis a;
    a.n_ = n;
    a.block_ = block;
    a.parts_ = parts;
    a.src_ = src;
    return a;
  }
  /// Part k holds [bounds[k], bounds[k + 1]); bounds[0] must be 0 and the
  /// bounds non-decreasing (empty parts are allowed). n = bounds.back().
  static axis irregular(std::vector<std::int64_t> bounds) {
    if (bounds.size() < 2) throw std::invalid_argument("accrete::axis: irregular bounds need at least 2 entries");
    require(bounds[0] == 0, "first bound (must be 0)", bounds[0]);
    for (std::size_t k = 1; k < bounds.size(); ++k)
      if (bounds[k] < bounds[k - 1])
        throw std::invalid_argument("accrete::axis: bound " + std::to_string(k) + " = " + std::to_string(bounds[k]) +
                                    " is below bound " + std::to_string(k - 1) + " = " +
                                    std::to_string(bounds[k - 1]));
    axis a;
    a.n_ = bounds.back();
    a.parts_ = int(bounds.size() - 1);
    a.bounds_ = std::move(bounds);
    return a;
  }
  /// Near-equal contiguous blocks (Global Arrays' regular distribution).
  static axis block(std::int64_t n, int parts) {
    require(n >= 0, "extent", n);
    require(parts >= 1, "parts", parts);
    std::vector<std::int64_t> b(std::size_t(parts) + 1);
    // floor(k * n / parts) without forming k * n, which overflows for n
    // near 2^63: k * (n / parts) <= n, and k * (n % parts) < parts^2.
    const std::int64_t q = n / parts, r = n % parts;
    for (int k = 0; k <= parts; ++k) b[std::size_t(k)] = k * q + std::int64_t(k) * r / parts;
    return irregular(std::move(b));
  }

  /// Global indices along this axis.
  std::int64_t extent() const noexcept { return n_; }
  /// Parts the axis is divided over.
  int parts() const noexcept { return parts_; }
  /// Whether the axis is cyclic (else irregular: one range per part).
  bool is_cyclic() const noexcept { return bounds_.empty(); }
  /// Block size of a cyclic axis (0 for irregular ones).
  std::int64_t block() const noexcept { return block_; }
  /// Part holding block 0 of a cyclic axis.
  int src() const noexcept { return src_; }
  /// An irregular axis's part bounds (parts() + 1 values; empty if cyclic).
  const std::vector<std::int64_t>& bounds() const noexcept { return bounds_; }

  /// Part owning global index i (0 <= i < extent()).
  int owner(std::int64_t i) const noexcept {
    if (is_cyclic()) return int((i / block_ + src_) % parts_);
    return int(std::upper_bound(bounds_.begin(), bounds_.end(), i) - bounds_.begin()) - 1;
  }
  /// Local index of global index i on its owner.
  std::int64_t local(std::int64_t i) const noexcept {
    if (is_cyclic()) return (i / block_) / parts_ * block_ + i % block_;
    return i - bounds_[std::size_t(owner(i))];
  }
  /// Indices part k holds.
  std::int64_t local_size(int k) const noexcept {
    if (is_cyclic()) return numroc(n_, block_, k, src_, parts_);
    return bounds_[std::size_t(k) + 1] - bounds_[std::size_t(k)];
  }
  /// Global index of local index l on part k.
  std::int64_t global(int k, std::int64_t l) const noexcept {
    if (is_cyclic()) return ((l / block_) * parts_ + (k - src_ + parts_) % parts_) * block_ + l % block_;
    return bounds_[std::size_t(k)] + l;
  }
  /// Calls f(part, global_start, local_start, length) for the maximal runs
  /// of [lo, hi) that are contiguous both globally and on one part, in
  /// increasing global order.
  template <class F>
  void for_each_run(std::int64_t lo, std::int64_t hi, F&& f) const {
    for (std::int64_t i = lo; i < hi;) {
      const int k = owner(i);
      const std::int64_t end =
          is_cyclic() ? std::min(hi, (i / block_ + 1) * block_) : std::min(hi, bounds_[std::size_t(k) + 1]);
      f(k, i, local(i), end - i);
      i = end;
    }
  }

  /// The global indices part k holds, as maximal runs in increasing order.
  std::vector<index_run> owned_runs(int k) const {
    std::vector<index_run> runs;
    if (!is_cyclic()) {
      if (local_size(k) > 0) runs.push_back({bounds_[std::size_t(k)], local_size(k)});
      return runs;
    }
    // Part k's blocks are every parts-th block from its first; adjacent ones
    // merge only when there is a single part.
    for (std::int64_t b = (k - src_ + parts_) % parts_; b * block_ < n_; b += parts_) {
      const std::int64_t lo = b * block_, len = std::min(block_, n_ - lo);
      if (!runs.empty() && runs.back().start + runs.back().length == lo)
        runs.back().length += len;
      else
        runs.push_back({lo, len});
    }
    return runs;
  }

  /// Same extent, blocks, parts and bounds.
  friend bool operator==(const axis&, const axis&) = default;

 private:
  static void require(bool ok, const char* what, std::int64_t v) {
    if (!ok) throw std::invalid_argument(std::string("accrete::axis: invalid ") + what + " = " + std::to_string(v));
  }
  std::int64_t n_ = 0, block_ = 0;
  int parts_ = 1, src_ = 0;
  std::vector<std::int64_t> bounds_;
};

/// The factory a distribution came from.
enum class distribution_kind { block, irregular, block_cyclic, element_cyclic };

/// A 2D distribution: a row axis over prows parts and a column axis over
/// pcols parts.
class distribution {
 public:
  /// Near-equal contiguous blocks over a prows x pcols grid.
  static distribution block(std::int64_t rows, std::int64_t cols, int prows, int pcols) {
    check_shape("block", rows, cols, prows, pcols);
    return {distribution_kind::block, axis::block(rows, prows), axis::block(cols, pcols)};
  }
  /// Part (r, c) holds rows [row_bounds[r], row_bounds[r+1]) and columns
  /// [col_bounds[c], col_bounds[c+1]); the grid is (row_bounds.size() - 1)
  /// x (col_bounds.size() - 1).
  static distribution irregular(std::vector<std::int64_t> row_bounds, std::vector<std::int64_t> col_bounds) {
    return {distribution_kind::irregular, axis::irregular(std::move(row_bounds)),
            axis::irregular(std::move(col_bounds))};
  }
  /// ScaLAPACK's block-cyclic layout (descriptor-compatible storage).
  static distribution block_cyclic(const accrete::block_cyclic& bc) {
    return {distribution_kind::block_cyclic, axis::cyclic(bc.rows(), bc.row_block(), bc.grid_rows(), bc.src_row()),
            axis::cyclic(bc.cols(), bc.col_block(), bc.grid_cols(), bc.src_col())};
  }
  /// Elemental's [MC,MR]: element (i, j) on part (i mod prows, j mod pcols).
  static distribution element_cyclic(std::int64_t rows, std::int64_t cols, int prows, int pcols) {
    check_shape("element_cyclic", rows, cols, prows, pcols);
    return {distribution_kind::element_cyclic, axis::cyclic(rows, 1, prows), axis::cyclic(cols, 1, pcols)};
  }

  /// Which factory made it.
  distribution_kind kind() const noexcept { return kind_; }
  /// Global rows.
  std::int64_t rows() const noexcept { return rows_.extent(); }
  /// Global columns.
  std::int64_t cols() const noexcept { return cols_.extent(); }
  /// Rows of the grid of parts.
  int grid_rows() const noexcept { return rows_.parts(); }
  /// Columns of the grid of parts.
  int grid_cols() const noexcept { return cols_.parts(); }
  /// Parts: grid_rows() x grid_cols(); part (r, c) is number r * grid_cols() + c.
  int parts() const noexcept { return rows_.parts() * cols_.parts(); }
  /// The row dimension (its global() maps a part row's local index to a global row).
  const axis& row_axis() const noexcept { return rows_; }
  /// The column dimension.
  const axis& col_axis() const noexcept { return cols_; }

  /// Part owning element (i, j). Throws std::out_of_range naming the bad index.
  int locate(std::int64_t i, std::int64_t j) const {
    check(i, rows(), "row");
    check(j, cols(), "column");
    return rows_.owner(i) * cols_.parts() + cols_.owner(j);
  }
  /// Rows that `part` holds (throws std::out_of_range for a bad part).
  std::int64_t local_rows(int part) const { return rows_.local_size(check_part(part) / cols_.parts()); }
  /// Columns that `part` holds.
  std::int64_t local_cols(int part) const { return cols_.local_size(check_part(part) % cols_.parts()); }
  /// The patch a part owns (NGA_Distribution) -- block and irregular
  /// distributions only; a cyclic part is not a patch (throws).
  patch owned(int part) const {
    if (!(rows_.bounds().size() && cols_.bounds().size()))
      throw std::logic_error("accrete::distribution::owned: a cyclic distribution's parts are not patches");
    const auto r = std::size_t(check_part(part) / cols_.parts()), c = std::size_t(part % cols_.parts());
    return {rows_.bounds()[r], rows_.bounds()[r + 1], cols_.bounds()[c], cols_.bounds()[c + 1]};
  }
  /// Block-cyclic layout of a block_cyclic or element_cyclic distribution
  /// (for ScaLAPACK descriptors and the matrix file functions).
  accrete::block_cyclic as_block_cyclic() const {
    if (!rows_.is_cyclic() || !cols_.is_cyclic())
      throw std::logic_error("accrete::distribution::as_block_cyclic: not a cyclic distribution");
    return {rows(), cols(), rows_.block(), cols_.block(), rows_.parts(), cols_.parts(), rows_.src(), cols_.src()};
  }

  /// Same kind and axes.
  friend bool operator==(const distribution&, const distribution&) = default;

 private:
  distribution(distribution_kind k, axis r, axis c) : kind_(k), rows_(std::move(r)), cols_(std::move(c)) {}
  // The factories' arguments, named as the caller gave them.
  static void check_shape(const char* fn, std::int64_t rows, std::int64_t cols, int prows, int pcols) {
    auto fail = [fn](const std::string& what) {
      throw std::invalid_argument(std::string("accrete::distribution::") + fn + ": " + what);
    };
    if (rows < 0) fail("rows = " + std::to_string(rows) + " is negative");
    if (cols < 0) fail("cols = " + std::to_string(cols) + " is negative");
    if (prows < 1 || pcols < 1)
      fail("grid " + std::to_string(prows) + " x " + std::to_string(pcols) + ": both must be at least 1");
  }
  static void check(std::int64_t v, std::int64_t n, const char* what) {
    if (v < 0 || v >= n)
      throw std::out_of_range(std::string("accrete::distribution: ") + what + " index " + std::to_string(v) +
                              " out of range [0, " + std::to_string(n) + ")");
  }
  int check_part(int part) const {
    if (part < 0 || part >= parts())
      throw std::out_of_range("accrete::distribution: part " + std::to_string(part) + " out of range [0, " +
                              std::to_string(parts()) + ")");
    return part;
  }
  distribution_kind kind_;
  axis rows_, cols_;
};

}  // namespace accrete
