#pragma once
// convergent_matrix<T>: a dense block-cyclic matrix assembled from
// asynchronous indexed-slice += updates (after French et al., IPDPS 2015).
#include <array>
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

/// How updates travel (the default is the fastest; the others exist for
/// comparison).
enum class update_strategy {
  /// Per-target packets of (row list, column list, dense sub-block):
  /// node-local targets are updated directly by the origin under the
  /// target's column-stripe locks; remote targets receive coalesced
  /// messages and apply them during progress.
  packets,
  /// MPI_Accumulate(MPI_SUM) with an indexed datatype per target into the
  /// storage window, flushed at commit.
  accumulate,
  /// Bin everything locally; one MPI_Alltoallv at commit. Buffers without
  /// bound (the memory cap does not apply).
  alltoall,
};

struct convergent_matrix_options {
  update_strategy strategy = update_strategy::packets;
  /// Bytes of update data a process may hold buffered or in flight (packets
  /// strategy). When reached, update() makes progress and waits.
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
  std::byte* local_bytes() const noexcept { return block_.local() + header_; }

  void commit();
  void reset_storage();
  convergent_matrix_stats stats() const;
  void reset_stats();

 protected:
  // One thread's binning of an update's row and column lists by owner.
  struct binned {
    std::vector<std::int32_t> row_start, col_start;  // per grid row/col: start in lists below
    std::vector<std::int32_t> row_pos, row_loc;      // position in update, local index on owner
    std::vector<std::int32_t> col_pos, col_loc;
    std::vector<int> targets;  // grid ranks with work, in visit order
  };
  void validate(std::span<const std::int64_t> rows, std::span<const std::int64_t> cols, std::int64_t ld,
                matrix_layout lay, const void* block) const;
  void bin(std::span<const std::int64_t> rows, std::span<const std::int64_t> cols, binned& b);
  // Where a grid rank's storage is, if node-local.
  std::byte* peer_data(int grid_rank) const noexcept;
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
  // Reserves space for one packet in the coalescing buffer of a remote
  // target and returns where to write it (caller holds comm_mu_).
  std::byte* packet_slot(int grid_rank, std::size_t bytes);
  void flush_target(int grid_rank);
  void wait_for_room();
  // Applies one received message (packets strategy) / buffer of packets.
  void apply_packets(std::span<const std::byte> packets);
  virtual void apply_packet(const std::int32_t* lrow, std::int32_t nr, const std::int32_t* lcol, std::int32_t nc,
                            const std::byte* values) = 0;
  // accumulate strategy: one MPI_Accumulate of nr x nc packed values.
  void accumulate_packet(int grid_rank, const std::int32_t* lrow, std::int32_t nr, const std::int32_t* lcol,
                         std::int32_t nc, const void* values);
  virtual MPI_Datatype mpi_type() const noexcept = 0;

  static void on_message(int source, std::span<const std::byte> payload);
  void wait_request(MPI_Request& r, const char* what);
  void check_timeout(double start, const char* what);
  std::uint64_t& epoch() const noexcept { return *reinterpret_cast<std::uint64_t*>(block_.local() + header_ - 64); }

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
  std::uint32_t round_ = 0;
  std::uint64_t alive_ = 0;
  // A message can arrive while this process is still inside the
  // constructor's barrier (the sender left it first); the derived part
  // is not built yet, so such messages wait here until activate().
  bool active_ = false;
  std::vector<std::pair<int, std::vector<std::byte>>> early_;
  void activate();

  // Shared by updating threads (guarded by comm_mu_ unless noted).
  struct sync;
  std::unique_ptr<sync> sync_;
  std::vector<std::vector<std::byte>> outbox_;  // per grid rank coalescing buffers
  std::size_t buffered_ = 0;
  std::vector<std::uint64_t> sent_msgs_;  // per grid rank, this round
  std::uint64_t received_[2] = {0, 0};    // messages received per round parity
  convergent_matrix_stats stats_;
  std::uint64_t rng_;

 public:
  // For the test suite and benchmarks.
  std::size_t buffer_cap() const noexcept { return opt_.buffer_cap; }
};

}  // namespace detail

/// A dense m x n matrix of T (float or double), 2D block-cyclic over a
/// process_grid with mb x nb blocks, assembled by asynchronous updates.
///
/// Storage: each process's part is ScaLAPACK-compatible (column-major,
/// numroc dimensions, leading dimension lld), so local() + descriptor() go
/// straight to PBLAS/ScaLAPACK after commit().
///
/// Semantics:
///  - update(...) adds an indexed slice: A[rows[i], cols[j]] += B(i, j).
///    Indices may repeat (they add). The block may be reused as soon as
///    update returns. Invalid input throws before any part is applied.
///  - Atomicity: every element's += is applied under the target's lock for
///    that column block, so concurrent updates never lose or tear a sum.
///    An update is applied at some time after the call and before the next
///    commit() returns; values read before commit are unspecified.
///  - commit() is collective over the grid: when it returns anywhere, every
///    update issued anywhere before commit was called has been applied.
///    Rounds of updates and commits may repeat.
///  - Progress: update makes internal progress (remote packets addressed to
///    this process are applied while it updates or waits).
///  - Threads: update() may be called concurrently from several threads of
///    a process (MPI must provide at least MPI_THREAD_SERIALIZED); no other
///    accrete call may run concurrently with them. commit() and the other
///    members from one thread.
///  - The grid must span the world team (every process takes part); set
///    ACCRETE_COMMIT_TIMEOUT (seconds) to abort, naming the missing
///    processes, when a commit cannot complete.
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

  std::int64_t rows() const noexcept { return layout().rows(); }
  std::int64_t cols() const noexcept { return layout().cols(); }
  using cm_core::grid;
  using cm_core::layout;
  using cm_core::lld;
  using cm_core::local_cols;
  using cm_core::local_rows;

  /// This process's local block (column-major, leading dimension lld()).
  T* local() noexcept { return reinterpret_cast<T*>(local_bytes()); }
  const T* local() const noexcept { return reinterpret_cast<const T*>(local_bytes()); }

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

  /// Collective: see the class comment.
  void commit() { cm_core::commit(); }

  /// Collective, after commit: A(j, i) = A(i, j) for i < j (copies the
  /// upper triangle into the lower).
  void fill_lower();
  /// Collective, after commit: A = (A + A^T) / 2.
  void symmetrize();

  /// Collective: sets every element to zero (and synchronises, so no update
  /// of the next round can be lost to the reset).
  void reset() { reset_storage(); }

  /// Reads one element from its owner (non-collective; meaningful after
  /// commit).
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
  using cm_core::reset_stats;
  using cm_core::stats;

 private:
  void apply_packet(const std::int32_t* lrow, std::int32_t nr, const std::int32_t* lcol, std::int32_t nc,
                    const std::byte* values) override;
  MPI_Datatype mpi_type() const noexcept override;
  void transpose_into(bool upper_only, bool average);
};

extern template class convergent_matrix<float>;
extern template class convergent_matrix<double>;

}  // namespace accrete
