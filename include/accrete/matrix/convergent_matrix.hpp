#pragma once
// convergent_matrix<T>: a dense block-cyclic matrix assembled from
// asynchronous indexed-slice += updates (after French et al., IPDPS 2015).
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "accrete/detail/backend.hpp"
#include "accrete/matrix/block_cyclic.hpp"
#include "accrete/matrix/process_grid.hpp"

namespace accrete {

/// Storage order of an update block.
enum class matrix_layout { col_major, row_major };

/// How updates travel (the default is the fastest; the other exists for
/// comparison). An MPI_Accumulate strategy existed before 0.3 and was
/// removed: it was 2.5-17x slower than `packets` and slower than the plain
/// MPI_Accumulate baseline in bench/hessian, MPI forbids the overlapping
/// target entries that repeated indices need, and it could not hold back a
/// fast process's next-round contributions without a remote read per
/// target (docs/semantics.md, "Rounds").
enum class update_strategy {
  /// Per-target packets of (row list, column list, dense sub-block):
  /// node-local targets are updated directly by the origin under the
  /// target's column-stripe locks; remote targets receive coalesced
  /// messages and apply them during progress.
  packets,
  /// Bin everything locally; one all-to-all exchange at commit. Buffers
  /// without bound (the memory cap does not apply).
  alltoall,
};

struct convergent_matrix_options {
  update_strategy strategy = update_strategy::packets;
  /// Bytes of update data a process may hold buffered or in flight (packets
  /// strategy). When reached, update() makes progress and waits. Packets
  /// larger than half of it are split. At least 1 KiB.
  std::size_t buffer_cap = std::size_t{64} << 20;
  /// A remote target's coalescing buffer is sent once it holds this much.
  std::size_t coalesce_bytes = std::size_t{256} << 10;
  /// Local leading dimension; 0 means max(1, local rows).
  std::int64_t lld = 0;
  /// Seed of the per-process random order in which targets are visited.
  std::uint64_t seed = 0x5eed;
};

/// Counters and time spent (seconds) by this process since construction or
/// the last reset_stats().
struct convergent_matrix_stats {
  std::uint64_t updates = 0;           // update calls
  std::uint64_t elements = 0;          // update elements submitted
  std::uint64_t direct_packets = 0;    // applied by this process into node-local storage
  std::uint64_t messages_sent = 0;     // coalesced messages to remote targets
  std::uint64_t packets_received = 0;  // packets applied on behalf of remote origins
  std::uint64_t bytes_sent = 0;        // payload bytes sent to remote targets
  std::size_t peak_buffered = 0;       // highest buffered + in-flight bytes
  double t_bin = 0, t_move = 0, t_apply = 0, t_wait = 0;
};

namespace detail {

// Type-independent part: layout, storage, the update protocol and commit.
class cm_core {
 public:
  cm_core(std::int64_t m, std::int64_t n, const process_grid& grid, std::int64_t mb, std::int64_t nb,
          std::size_t elem_size, const convergent_matrix_options& opt);
  cm_core(const cm_core&) = delete;
  cm_core& operator=(const cm_core&) = delete;
  virtual ~cm_core();

  const block_cyclic& layout() const noexcept { return layout_; }
  const process_grid& grid() const noexcept { return grid_; }
  std::int64_t local_rows() const noexcept { return lrows_; }
  std::int64_t local_cols() const noexcept { return lcols_; }
  std::int64_t lld() const noexcept { return lld_; }
  std::byte* local_bytes(const char* what) const;

  void commit();
  void reopen();
  void reset_storage();
  convergent_matrix_stats stats() const;
  void reset_stats();
  /// Commits completed by this process (the round its updates belong to).
  std::uint64_t round() const noexcept { return round_; }

 protected:
  // One thread's binning of an update's row and column lists by owner.
  struct binned {
    std::vector<std::int32_t> row_start, col_start;  // per grid row/col: start in lists below
    std::vector<std::int32_t> row_pos, row_loc;      // position in update, local index on owner
    std::vector<std::int32_t> col_pos, col_loc;
    std::vector<int> targets;  // grid ranks with work, in visit order
  };
  // Throws unless the runtime is up and this matrix is alive.
  void require_usable(const char* what) const;
  void validate(std::span<const std::int64_t> rows, std::span<const std::int64_t> cols, std::int64_t ld,
                matrix_layout lay, const void* block) const;
  void bin(std::span<const std::int64_t> rows, std::span<const std::int64_t> cols, binned& b);
  // Where a grid rank's storage is, if node-local and open for round `r`.
  std::byte* direct_target(int grid_rank, std::uint64_t r) const noexcept;
  // Stripe locks of a node-local target (column block -> lock).
  void lock_stripe(int grid_rank, std::int64_t stripe) const noexcept;
  void unlock_stripe(int grid_rank, std::int64_t stripe) const noexcept;
  bool try_lock_stripe(int grid_rank, std::int64_t stripe) const noexcept;
  // Calls cols(begin, end) for runs of columns sharing a stripe, each under
  // that stripe's lock; busy stripes are skipped and retried later, so a
  // preempted lock holder (oversubscribed nodes) does not stall the caller.
  template <class F>
  void with_stripes(int grid_rank, const std::int32_t* lcol, std::int32_t nc, F&& cols);
  std::int64_t stripe_of(std::int32_t lcol) const noexcept { return (lcol / layout_.col_block()) % nlocks_; }
  // Largest packet (bytes) one message may carry; bigger ones are split.
  std::size_t max_packet_bytes() const noexcept;
  // Reserves space for one packet in the coalescing buffer of a remote
  // target and returns where to write it (caller holds the lock).
  std::byte* packet_slot(int grid_rank, std::size_t bytes);
  void flush_target(int grid_rank);
  // Makes progress until `bytes` more fit under the memory cap.
  void wait_for_room(std::size_t bytes);
  // Applies a validated message of packets to local storage.
  void apply_packets(std::span<const std::byte> packets);
  virtual void apply_packet(const std::int32_t* lrow, std::int32_t nr, const std::int32_t* lcol, std::int32_t nc,
                            const std::byte* values) = 0;

  static void on_message(int source, std::span<const std::byte> payload);
  // Applies (or holds, if it belongs to a round not open here) one message.
  void receive(int source, std::uint32_t round, std::span<const std::byte> packets);
  void reopen_locked();
  void publish_open() noexcept;
  void wait_request(MPI_Request& r, double start, const char* what);
  void check_timeout(double start, const char* what);
  std::uint64_t& epoch() const noexcept { return *reinterpret_cast<std::uint64_t*>(block_.local() + header_ - 64); }
  std::uint64_t& open_word(int grid_rank) const noexcept {
    return *reinterpret_cast<std::uint64_t*>(block_.peer(world_of_[grid_rank]) + header_ - 56);
  }

  block_cyclic layout_;
  process_grid grid_;
  convergent_matrix_options opt_;
  std::size_t esize_;
  std::int64_t lrows_, lcols_, lld_;
  std::vector<int> world_of_;         // grid rank -> world rank
  std::vector<std::int64_t> lld_of_;  // grid rank -> its leading dimension
  std::int64_t nlocks_;
  std::size_t header_;
  shared_block block_;
  std::uint32_t id_;
  int me_;  // grid rank of this process
  // Rounds (docs/semantics.md): round_ counts the commits this process has
  // completed; its updates belong to round round_. open_ is the newest
  // round whose contributions may land in local storage: it lags round_
  // from the end of a commit until reopen() (explicit, or implied by the
  // next commit or reset), so the committed values stay put while this
  // process reads them.
  std::uint64_t round_ = 0;
  std::uint64_t open_ = 0;
  std::uint64_t alive_ = 0;
  bool in_commit_ = false;
  // A message can arrive while this process is still inside the
  // constructor's barrier (the sender left it first); the derived part
  // is not built yet, so such messages wait in held_ until activate().
  bool active_ = false;
  struct held_message {
    int source;
    std::uint32_t round;
    std::vector<std::byte> packets;
  };
  std::vector<held_message> held_;
  void activate();

  // Shared by updating threads (guarded by the lock unless noted).
  struct sync;
  std::unique_ptr<sync> sync_;
  std::vector<std::vector<std::byte>> outbox_;  // per grid rank coalescing buffers
  std::atomic<std::size_t> buffered_{0};        // bytes in outboxes (read without the lock)
  std::vector<std::uint64_t> sent_msgs_;        // per grid rank, this round
  std::uint64_t received_ = 0;                  // messages of round open_ applied
  std::uint64_t updates_since_commit_ = 0;
  convergent_matrix_stats stats_;
  std::atomic<std::uint64_t> rng_;

 public:
  // For the test suite and benchmarks.
  std::size_t buffer_cap() const noexcept { return opt_.buffer_cap; }
  std::size_t held_messages() const;
};

}  // namespace detail

/// A dense m x n matrix of T (float or double), 2D block-cyclic over a
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
///    ACCRETE_COMMIT_TIMEOUT (seconds) to abort, naming the missing
///    processes, when a commit cannot complete.
///  - Every member throws accrete::error once the matrix is destroyed or
///    the runtime finalized.
template <class T>
class convergent_matrix : private detail::cm_core {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "convergent_matrix supports float and double");

 public:
  using value_type = T;

  /// Collective over the grid's processes.
  convergent_matrix(std::int64_t m, std::int64_t n, const process_grid& grid, std::int64_t mb = 64,
                    std::int64_t nb = 64, const convergent_matrix_options& opt = {})
      : cm_core(m, n, grid, mb, nb, sizeof(T), opt) {
    activate();
  }
  ~convergent_matrix() { active_ = false; }
  convergent_matrix(const convergent_matrix&) = delete;
  convergent_matrix& operator=(const convergent_matrix&) = delete;

  std::int64_t rows() const noexcept { return layout().rows(); }
  std::int64_t cols() const noexcept { return layout().cols(); }
  using cm_core::grid;
  using cm_core::layout;
  using cm_core::lld;
  using cm_core::local_cols;
  using cm_core::local_rows;

  /// This process's local block (column-major, leading dimension lld()).
  /// The pointer is valid until the matrix is destroyed or the runtime
  /// finalized.
  T* local() { return reinterpret_cast<T*>(local_bytes("local")); }
  const T* local() const { return reinterpret_cast<const T*>(local_bytes("local")); }

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
  void commit() { cm_core::commit(); }

  /// Non-collective: this process is done reading the committed values;
  /// held and future contributions of the next round may land in its part
  /// from now on. A no-op when the part is already open.
  void reopen() { cm_core::reopen(); }

  /// Commits this process has completed.
  using cm_core::round;

  /// Collective, after commit and before any process reopens: A(j, i) =
  /// A(i, j) for i < j (copies the upper triangle into the lower). Square
  /// matrices only (std::invalid_argument otherwise).
  void fill_lower();
  /// Collective, like fill_lower: A = (A + A^T) / 2.
  void symmetrize();

  /// Collective, between rounds: sets every element to zero and opens the
  /// next round. Throws accrete::collective_misuse on every process if any
  /// process has issued updates since its last commit started (they would
  /// race with the zeroing).
  void reset() { reset_storage(); }

  /// Reads one element from its owner's storage (non-collective; the
  /// committed value while the owner has not reopened).
  T get(std::int64_t i, std::int64_t j) const;

  /// ScaLAPACK descriptor of the local storage (creates the grid's BLACS
  /// context on first use: collective the first time).
  std::array<int, 9> descriptor() const;

  /// Collective MPI-IO: the file is the plain column-major global matrix of
  /// T, no header. load() checks the file size (a file of another element
  /// type or shape is rejected with an exception).
  void save(const std::string& path) const;
  void load(const std::string& path);

  using cm_core::buffer_cap;
  using cm_core::held_messages;
  using cm_core::reset_stats;
  using cm_core::stats;

 private:
  void apply_packet(const std::int32_t* lrow, std::int32_t nr, const std::int32_t* lcol, std::int32_t nc,
                    const std::byte* values) override;
  void transpose_into(bool upper_only, bool average);
};

extern template class convergent_matrix<float>;
extern template class convergent_matrix<double>;

}  // namespace accrete
