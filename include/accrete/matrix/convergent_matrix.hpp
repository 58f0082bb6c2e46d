#pragma once
/// \file
// convergent_matrix<T>: a dense block-cyclic matrix assembled from
// asynchronous indexed-slice += updates (after French et al., IPDPS 2015).
// Lets this header include accrete/detail/ headers (see detail/internal.hpp).
#ifndef ACCRETE_PUBLIC_INCLUDE
#define ACCRETE_PUBLIC_INCLUDE
#define ACCRETE_PUBLIC_INCLUDE_MATRIX_CONVERGENT_MATRIX
#endif

#include <array>
#include <complex>
#include <cstdint>
#include <span>
#include <string>

#include "accrete/assembly.hpp"
#include "accrete/detail/assembly_engine.hpp"
#include "accrete/matrix/block_cyclic.hpp"
#include "accrete/matrix/process_grid.hpp"

#ifdef ACCRETE_PUBLIC_INCLUDE_MATRIX_CONVERGENT_MATRIX
#undef ACCRETE_PUBLIC_INCLUDE
#undef ACCRETE_PUBLIC_INCLUDE_MATRIX_CONVERGENT_MATRIX
#endif

namespace accrete {

/// How a convergent_matrix assembles; every process must pass the same
/// options (the constructor checks).
struct convergent_matrix_options {
  /// packets (default: buffered, coalesced messages applied by the owner,
  /// overlapping the computation) or alltoall (one exchange at commit).
  update_strategy strategy = update_strategy::packets;
  /// Bytes of update data a process may hold buffered or in flight (packets
  /// strategy). When reached, update() makes progress and waits. Packets
  /// larger than half of it are split. At least 1 KiB. It also bounds the
  /// coalescing buffers' memory: each part's buffer reserves at most an
  /// even share of it beyond its first packet (assembly_stats::peak_reserved).
  std::size_t buffer_cap = std::size_t{64} << 20;
  /// A remote target's coalescing buffer is sent once it holds this much.
  /// 16 KiB (256 KiB before 2026-11): the data leaves while the process
  /// still computes. Simulated on two Edison-like nodes (bench/scale,
  /// P = 32) a round took 0.0040-0.0043 s at 16 KiB, 0.0073 s at 256 KiB; real
  /// one-node runs were within noise of each other (bench/hessian/README.md).
  std::size_t coalesce_bytes = std::size_t{16} << 10;
  /// Local leading dimension; 0 means max(1, local rows).
  std::int64_t lld = 0;
  /// Seed of the per-process random order in which targets are visited.
  std::uint64_t seed = 0x5eed;
  /// Bitwise-reproducible assembly: the committed matrix is the same, bit
  /// for bit, for the same multiset of updates, whatever P, grid shape,
  /// block sizes, strategy, node size, thread count or arrival order: each
  /// element is the exact sum of its round's contributions (and its value
  /// before the round), rounded once. Contributions are added where the
  /// sum is exact and logged (16 bytes each) where it is not; the log is
  /// summed exactly at commit. Complex elements are two such sums (real
  /// and imaginary parts). Costs an exactness check per contribution and
  /// the log (docs/semantics.md, "Reproducible assembly").
  bool reproducible = false;
  /// Whole-update atomicity: each update's contribution to one process's
  /// part is applied as one unit with respect to every other update (and to
  /// snapshot_local()), as in the UPC++ ConvergentMatrix; by default only
  /// each element's merge is atomic. An update's piece for one part then
  /// travels in one packet, so it must fit half of buffer_cap (a larger one
  /// throws before anything is applied). update_symmetric's unit is one
  /// column of its block. Not with `reproducible`, which defers inexact
  /// contributions to commit. Costs waiting: a piece holds all of its
  /// stripe locks at once (docs/semantics.md, "Whole-update atomicity").
  bool atomic_updates = false;
  /// How updates combine with elements: sum (+=, the default), max or min
  /// (accrete/assembly.hpp; real types only: complex numbers have no order). For a user-supplied function use the
  /// constructor that takes a merge_function (merge_op::user here without
  /// one is rejected). `reproducible` concerns sums: max and min are
  /// order-independent already, and a user function is rejected with it.
  merge_op merge = merge_op::sum;
};

/// What a process counts while assembling (accrete/assembly.hpp).
using convergent_matrix_stats = assembly_stats;

/// A dense m x n matrix of T (float, double, std::complex<float> or
/// std::complex<double>: ScaLAPACK's s, d, c, z), 2D block-cyclic over a
/// process_grid with mb x nb blocks, assembled by asynchronous updates.
///
/// Storage: each process's part is ScaLAPACK-compatible (column-major,
/// numroc dimensions, leading dimension lld), so local() + descriptor() go
/// straight to PBLAS/ScaLAPACK after commit().
///
/// Semantics (the full reference is docs/semantics.md):
///  - update(...) adds an indexed slice: A[rows[i], cols[j]] += B(i, j).
///    Indices may repeat (they add). The block may be reused as soon as
///    update returns. Invalid input throws before any part is applied;
///    after validation an update fails only by running out of memory or by
///    a transport error, and the matrix is then unspecified.
///  - Atomicity: every element's += is applied under the target's lock for
///    that column block, so concurrent updates never lose or tear a sum.
///    An update is applied at some time after the call and before the
///    commit() that ends its round returns; values read before then are
///    unspecified.
///  - Rounds: a process's updates belong to round r when it has completed r
///    commits. commit() is collective over the grid: when it returns
///    anywhere, every update of the round it ends, issued anywhere, has been
///    applied. An update issued while commit() runs on the calling process
///    (by an RPC or a .then callback that the commit's progress runs)
///    belongs to the next round.
///  - Stability: after commit() returns, this process's part keeps the
///    committed values until this process calls reopen(), reset() or its
///    next commit(). Contributions of the next round addressed to it, from
///    faster processes or from itself, are held (in memory, at the receiver
///    or as messages) until then. Call reopen() once done reading, so the
///    next round's updates are applied while it computes.
///  - Progress: update makes internal progress (remote packets addressed to
///    this process are applied while it updates or waits).
///  - Threads: update() may be called concurrently from several threads of
///    a process (MPI must provide at least MPI_THREAD_SERIALIZED); no other
///    accrete call may run concurrently with them. commit() and the other
///    members from one thread. Callbacks run by commit's progress may call
///    update() and stats() on any matrix; commit() inside them throws.
///  - The grid must span the world team (every process takes part); set
///    ACCRETE_COMMIT_TIMEOUT or ACCRETE_COLLECTIVE_TIMEOUT (seconds) to
///    abort, naming the missing processes, when a commit cannot complete.
///  - Collective arguments: the constructor and the collective members
///    (fill_lower, symmetrize, save, load) first check that every process
///    passes the same shape, blocks, grid, element type, strategy,
///    reproducible, atomic_updates and merge (or the same member and
///    path); otherwise every process throws accrete::collective_misuse
///    naming the argument and the ranks, before anything is allocated.
///    lld, buffer_cap, coalesce_bytes and seed are each process's own.
///  - Every member throws accrete::error once the matrix is destroyed, and
///    accrete::not_initialized once the runtime it was made in is
///    finalized (also under a later init(); destroying it then frees only
///    its own memory).
template <class T>
class convergent_matrix {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::complex<float>> ||
                    std::is_same_v<T, std::complex<double>>,
                "convergent_matrix supports float, double, std::complex<float> and std::complex<double>");

 public:
  /// The element type.
  using value_type = T;

  /// An element-wise merge: must be associative and commutative (the
  /// result of a round is then independent of arrival order; accrete
  /// cannot check it), and a function of the program itself, the same on
  /// every process (it is identified like an RPC function; checked).
  using merge_function = T (*)(T, T);

  /// Collective over the grid's processes.
  convergent_matrix(std::int64_t m, std::int64_t n, const process_grid& grid, std::int64_t mb = 64,
                    std::int64_t nb = 64, const convergent_matrix_options& opt = {});
  /// Collective: the same with A = merge(A, v) as the update rule
  /// (opt.merge is ignored; merge_op::user is reported by merge()).
  convergent_matrix(std::int64_t m, std::int64_t n, const process_grid& grid, std::int64_t mb, std::int64_t nb,
                    merge_function merge, const convergent_matrix_options& opt = {});
  convergent_matrix(const convergent_matrix&) = delete;
  convergent_matrix& operator=(const convergent_matrix&) = delete;

  /// How updates combine with the stored element (sum unless chosen).
  merge_op merge() const noexcept { return engine_.shape().merge; }
  /// Global rows (m).
  std::int64_t rows() const noexcept { return layout_.rows(); }
  /// Global columns (n).
  std::int64_t cols() const noexcept { return layout_.cols(); }
  /// The process grid the matrix is distributed over.
  const process_grid& grid() const noexcept { return grid_; }
  /// The block-cyclic layout (global <-> local indices, ScaLAPACK's).
  const block_cyclic& layout() const noexcept { return layout_; }
  /// Leading dimension of this process's part.
  std::int64_t lld() const noexcept { return engine_.shape().lld; }
  /// Rows of this process's part.
  std::int64_t local_rows() const noexcept { return engine_.shape().lrows; }
  /// Columns of this process's part.
  std::int64_t local_cols() const noexcept { return engine_.shape().lcols; }
  /// The global indices of this process's part: element (li, lj) of
  /// local() (at li + lj * lld()) is A(global_row(li), global_col(lj)).
  /// Throws std::out_of_range unless 0 <= li < local_rows() (lj: columns).
  /// Non-collective, no communication.
  ///@{
  std::int64_t global_row(std::int64_t li) const;
  std::int64_t global_col(std::int64_t lj) const;
  ///@}

  /// This process's local block (column-major, leading dimension lld()).
  /// The pointer is valid until the matrix is destroyed or the runtime
  /// finalized.
  ///@{
  T* local() { return reinterpret_cast<T*>(engine_.local_bytes("local")); }
  const T* local() const { return reinterpret_cast<const T*>(engine_.local_bytes("local")); }
  ///@}

  /// A[rows[i], cols[j]] += block(i, j), where block(i, j) is
  /// block[i + j*ld] (col_major) or block[i*ld + j] (row_major).
  void update(const T* block, std::int64_t ld, std::span<const std::int64_t> rows, std::span<const std::int64_t> cols,
              matrix_layout lay = matrix_layout::col_major);

  /// Symmetric update restricted to the upper triangle: for every i, j with
  /// ix[i] <= ix[j], A[ix[i], ix[j]] += block(i, j). Use fill_lower() after
  /// commit to mirror the triangle.
  void update_symmetric(const T* block, std::int64_t ld, std::span<const std::int64_t> ix,
                        matrix_layout lay = matrix_layout::col_major);

  /// A[i, j] += value.
  void update(T value, std::int64_t i, std::int64_t j) {
    const std::int64_t r[1] = {i}, c[1] = {j};
    update(&value, 1, r, c);
  }

  /// Collective: ends the round (see the class comment). Throws
  /// accrete::error if called from a callback that a commit of this matrix
  /// is running.
  void commit() { engine_.commit(); }

  /// Non-collective: this process is done reading the committed values;
  /// held and future contributions of the next round may land in its part
  /// from now on. A no-op when the part is already open.
  void reopen() { engine_.reopen(); }

  /// Commits this process has completed.
  std::uint64_t round() const noexcept { return engine_.round(); }

  /// Collective, after commit and before any process reopens: A(j, i) =
  /// A(i, j) for i < j (copies the upper triangle into the lower). Square
  /// matrices only (std::invalid_argument otherwise). Complex matrices are
  /// taken as Hermitian, as p?posv and a Gauss-Newton J^H J read them:
  /// A(j, i) = conj(A(i, j)), the diagonal untouched. (A complex-symmetric
  /// matrix, A = A^T, is assembled with update() on both triangles.)
  void fill_lower();
  /// Collective, like fill_lower: A = (A + A^T) / 2, or (A + A^H) / 2 for
  /// complex T (so the diagonal becomes real).
  void symmetrize();

  /// Collective, between rounds: sets every element to zero and opens the
  /// next round. Throws accrete::collective_misuse on every process if any
  /// process has issued updates since its last commit started (they would
  /// race with the zeroing).
  void reset() { engine_.reset(); }

  /// Reads one element from its owner's storage (non-collective; the
  /// committed value while the owner has not reopened).
  T get(std::int64_t i, std::int64_t j) const;

  /// Copies this process's part (lld() x local_cols() elements,
  /// column-major) into dst, holding all of the part's locks: no update is
  /// being applied to it meanwhile. Non-collective, no progress; callable
  /// during a round (between this process's updates, or from a callback).
  /// With atomic_updates the copy holds each update's contribution to this
  /// part entirely or not at all; without, possibly part of one. Throws
  /// std::invalid_argument if dst is smaller than lld() * local_cols().
  void snapshot_local(std::span<T> dst) const;

  /// ScaLAPACK descriptor of the local storage (creates the grid's BLACS
  /// context on first use: collective the first time).
  std::array<int, 9> descriptor() const;

  /// Collective MPI-IO: the file is the plain column-major global matrix of
  /// T (complex: real and imaginary parts interleaved, as in memory), no
  /// header. load() checks the file size (a file of another element
  /// type or shape is rejected with an exception).
  ///@{
  void save(const std::string& path) const;
  void load(const std::string& path);
  ///@}

  /// This process's assembly counters and times since construction or
  /// reset_stats() (messages, bytes, bin/apply/wait seconds, ...).
  convergent_matrix_stats stats() const { return engine_.stats(); }
  /// Zeroes this process's counters.
  void reset_stats() { engine_.reset_stats(); }
  /// The buffer cap in force (for the test suite and benchmarks).
  std::size_t buffer_cap() const noexcept { return engine_.buffer_cap(); }
  /// Messages held for the next round (for the test suite and benchmarks).
  std::size_t held_messages() const { return engine_.held_messages(); }

 private:
  friend struct detail::engine_access;
  void transpose_into(bool upper_only, bool average);
  block_cyclic layout_;
  process_grid grid_;
  detail::assembly_engine engine_;
};

extern template class convergent_matrix<float>;
extern template class convergent_matrix<double>;
extern template class convergent_matrix<std::complex<float>>;
extern template class convergent_matrix<std::complex<double>>;

}  // namespace accrete
