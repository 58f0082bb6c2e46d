#pragma once
/// \file
// sparse_matrix<T>: a distributed sparse matrix (rows in contiguous ranges,
// PETSc's ownership) assembled from asynchronous indexed-slice updates, on
// the same assembly engine as convergent_matrix.
// Lets this header include accrete/detail/ headers (see detail/internal.hpp).
#ifndef ACCRETE_PUBLIC_INCLUDE
#define ACCRETE_PUBLIC_INCLUDE
#define ACCRETE_PUBLIC_INCLUDE_SPARSE_SPARSE_MATRIX
#endif

#include <complex>
#include <cstdint>
#include <memory>
#include <span>
#include <type_traits>

#include "accrete/assembly.hpp"

#ifdef ACCRETE_PUBLIC_INCLUDE_SPARSE_SPARSE_MATRIX
#undef ACCRETE_PUBLIC_INCLUDE
#undef ACCRETE_PUBLIC_INCLUDE_SPARSE_SPARSE_MATRIX
#endif

namespace accrete {

namespace detail {
template <class T>
struct sparse_state;
}

/// How a sparse_matrix assembles. strategy, reproducible, merge and
/// growing_pattern must be the same on every process (the constructor
/// checks); buffer_cap, coalesce_bytes and seed are each process's own.
struct sparse_matrix_options {
  /// packets (default: coalesced messages applied by the owner while the
  /// origin computes) or alltoall (one exchange at commit).
  update_strategy strategy = update_strategy::packets;
  /// Bytes of update data a process may hold buffered or in flight; when
  /// reached, update() makes progress and waits. At least 1 KiB.
  std::size_t buffer_cap = std::size_t{64} << 20;
  /// A target's coalescing buffer is sent once it holds this much.
  std::size_t coalesce_bytes = std::size_t{16} << 10;
  /// Seed of the per-process random order in which targets are visited.
  std::uint64_t seed = 0x5eed;
  /// Bitwise-reproducible sums: every stored value is the exact sum of its
  /// contributions (and its value before the round), rounded once, so the
  /// committed matrix has the same bits for any P, row partition, thread
  /// count or arrival order (as convergent_matrix_options::reproducible).
  bool reproducible = false;
  /// sum (+=, default), max or min (real types only). A new entry starts
  /// from merge(0, v), as an absent entry is zero.
  merge_op merge = merge_op::sum;
  /// false (default): the pattern is the one round 0 discovers, frozen by
  /// the first commit; later rounds add into its slots, and an entry
  /// outside it is an error (see commit()). true: later rounds may add
  /// entries; each commit merges them into the pattern.
  bool growing_pattern = false;
  /// With a frozen pattern, remember for each update where the entries of
  /// this process's own rows live, so that the same update in the next
  /// round (same rows and columns, in the same order of update calls: a
  /// Newton loop's element sweep) adds them through the remembered slots
  /// without a search, and sends its rows of other processes without
  /// checking them against the pattern again (they passed when
  /// remembered; a frozen pattern does not change). The owner of those
  /// rows remembers the slots of each piece it receives (found by its
  /// rows and columns, in any order) and adds a repeated one through them.
  /// Costs 4 bytes per entry of one round's updates, plus their index
  /// lists, and on the receiving side at most about twice the bytes of the
  /// values. Round 0 writes its own-row updates' slots over its log of
  /// their values, which it needs anyway to discover the pattern, and keeps
  /// that log until the next round has replayed them (then packed to 4
  /// bytes per entry).
  bool cache_slots = true;
};

/// Compressed sparse rows of one block of this process's rows: row i's
/// entries are col[k], value[k] for k in [row_ptr[i], row_ptr[i + 1]),
/// columns ascending. 32-bit column indices, 64-bit row pointers.
template <class T>
struct csr_block {
  std::span<const std::int64_t> row_ptr;  ///< local rows + 1 entries
  std::span<const std::int32_t> col;      ///< column of each entry (see the block)
  std::span<T> value;                     ///< value of each entry
};

/// An M x N sparse matrix of T (float, double, std::complex<float> or
/// std::complex<double>), assembled by asynchronous updates.
///
/// Distribution: process p owns the rows [row_begin, row_end) of the sizes
/// each passed (local_rows; M is their sum), and the "diagonal" columns
/// [col_begin, col_end) likewise (local_cols; N is their sum), PETSc's
/// MPIAIJ ownership. Columns are global in updates.
///
/// Storage after commit(): this process's rows in two CSR blocks, the
/// layout of PETSc's MatCreateMPIAIJWithSplitArrays: diag() holds the
/// entries of the diagonal columns (column indices local: col - col_begin),
/// offdiag() the others, with column indices into col_map() (ascending
/// global columns: the compressed map). Both blocks' values are one array.
///
/// Semantics (as convergent_matrix; docs/semantics.md, "Sparse matrices"):
///  - update(...) merges an indexed dense slice, A[rows[i], cols[j]] op=
///    B(i, j); indices may repeat. Invalid indices, ld or a null block throw
///    before anything is applied. The block may be reused on return.
///  - Pattern: round 0 (until the first commit) discovers the pattern from
///    the updates. With a frozen pattern (the default), an update with an
///    entry outside it throws accrete::error naming the entry, and nothing
///    of the update is applied anywhere: the origin checks every row, its
///    own against its pattern, other processes' against copies of their
///    columns (those it updated in round 0 arrive at the first commit; a
///    row it first updates later is asked of its owner then, one message
///    round trip per owner, and kept).
///  - Rounds, reopen and reset as for convergent_matrix: commit() is
///    collective and returns when every update of its round, issued
///    anywhere, has been applied; this process's values stay as committed
///    until it calls reopen(), reset() or its next commit().
///  - Atomicity: updates are applied by the owner of the rows one packet at
///    a time, so concurrent updates never lose a sum.
///  - Threads: update() may be called from several threads at once (as
///    convergent_matrix::update); every other member from the thread that
///    drives the runtime.
///  - Views (diag, offdiag, col_map, get) are this process's own rows and
///    are valid until the next commit or reset (a growing pattern may
///    reallocate them at commit).
template <class T>
class sparse_matrix {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::complex<float>> ||
                    std::is_same_v<T, std::complex<double>>,
                "sparse_matrix supports float, double, std::complex<float> and std::complex<double>");

 public:
  /// The element type.
  using value_type = T;
  /// Collective over the world team. local_rows and local_cols are this
  /// process's share (>= 0); M and N, their sums, must be below 2^31.
  sparse_matrix(std::int64_t local_rows, std::int64_t local_cols, const sparse_matrix_options& opt = {});
  sparse_matrix(const sparse_matrix&) = delete;
  sparse_matrix& operator=(const sparse_matrix&) = delete;
  /// Collective.
  ~sparse_matrix();

  std::int64_t rows() const noexcept;       ///< M
  std::int64_t cols() const noexcept;       ///< N
  std::int64_t row_begin() const noexcept;  ///< first row of this process
  std::int64_t row_end() const noexcept;    ///< one past its last row
  std::int64_t col_begin() const noexcept;  ///< first diagonal column of this process
  std::int64_t col_end() const noexcept;    ///< one past its last diagonal column

  /// A[rows[i], cols[j]] op= block(i, j), where block(i, j) is block[i + j*ld]
  /// (col_major) or block[i*ld + j] (row_major): an element matrix in one call.
  /// Either layout gives the same result; a repeated update of a contiguous
  /// row-major block (ld == cols.size() >= 8) is added in one run over its
  /// entries, the fastest path of later rounds.
  void update(const T* block, std::int64_t ld, std::span<const std::int64_t> rows, std::span<const std::int64_t> cols,
              matrix_layout lay = matrix_layout::col_major);
  /// A[i, j] op= value.
  void update(T value, std::int64_t i, std::int64_t j) {
    const std::int64_t r[1] = {i}, c[1] = {j};
    update(&value, 1, r, c);
  }
  /// Collective: ends the round; builds or extends the pattern when the
  /// round brought new entries.
  void commit();
  /// Non-collective: done reading; the next round's contributions may land.
  void reopen();
  /// Collective, between rounds: every stored value becomes zero (the
  /// pattern stays) and the next round opens.
  void reset();
  /// Commits this process has completed.
  std::uint64_t round() const noexcept;
  /// Whether later rounds add only into the existing pattern.
  bool pattern_frozen() const noexcept;

  /// Stored entries of this process's rows (both blocks).
  std::int64_t local_nnz() const noexcept;
  /// The diagonal block (local column indices).
  csr_block<T> diag() const;
  /// The off-diagonal block (column indices into col_map()).
  csr_block<T> offdiag() const;
  /// Ascending global columns of the off-diagonal block.
  std::span<const std::int64_t> col_map() const;
  /// The stored value of A(i, j) for a row of this process (zero when the
  /// entry is not in the pattern). Throws std::out_of_range for other rows.
  T get(std::int64_t i, std::int64_t j) const;
  /// What this process counted (accrete/assembly.hpp).
  assembly_stats stats() const;

 private:
  std::unique_ptr<detail::sparse_state<T>> s_;
};

extern template class sparse_matrix<float>;
extern template class sparse_matrix<double>;
extern template class sparse_matrix<std::complex<float>>;
extern template class sparse_matrix<std::complex<double>>;

}  // namespace accrete
