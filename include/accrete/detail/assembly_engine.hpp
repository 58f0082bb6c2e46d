#pragma once
// The assembly engine: everything a data structure needs to accumulate
// asynchronous indexed updates into parts owned by other processes, and to
// end a round with a collective commit. convergent_matrix is a thin typed
// layer over it (and dist_array's accumulate will be another).
//
// The rooms (src/assembly/, map in src/README.md):
//   engine.cpp    construction, the message handler, rounds and commit
//   storage.cpp   the parts' shared headers: stripe locks, open round, epoch
//   binning.cpp   owner binning and validation of an update's indices
//   exchange.cpp  the strategies (packets, alltoall) and coalescing buffers
//   kernels.hpp   the typed loops: direct stores, packing, receive-side apply
// Internal: nothing here is public API.
#include "accrete/detail/internal.hpp"
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "accrete/assembly.hpp"
#include "accrete/detail/backend.hpp"

namespace accrete::detail {

struct packet_view;    // packet_format.hpp
class exchange;        // src/assembly/exchange.hpp
struct engine_access;  // white-box tests only (tests/cm_atomic_test.cpp)

/// Map of one dimension: global index -> (owning part along this
/// dimension, local index in that part). Block-cyclic, or, when `starts`
/// is set (parts + 1 ascending offsets), contiguous ranges: part p owns
/// [starts[p], starts[p + 1]) (PETSc's row ownership, sparse_matrix).
struct axis_map {
  std::int64_t block = 1;  // block size
  int parts = 1;           // processes along this dimension
  int src = 0;             // part that owns the first block
  std::vector<std::int64_t> starts;  // contiguous ranges instead, if not empty
  int owner(std::int64_t i) const noexcept {
    if (!starts.empty()) return int(std::upper_bound(starts.begin(), starts.end(), i) - starts.begin()) - 1;
    return int(((i / block) + src) % parts);
  }
  std::int32_t local(std::int64_t i) const noexcept {
    if (!starts.empty()) return std::int32_t(i - starts[std::size_t(owner(i))]);
    return std::int32_t((i / (block * std::int64_t(parts))) * block + i % block);
  }
  /// owner(i) and local(i) with two divisions instead of four (32-bit ones
  /// when the values fit, which are several times faster): binning is on
  /// every update's path and dominated small updates.
  void split(std::int64_t i, int& part, std::int32_t& loc) const noexcept {
    if (parts == 1) {
      part = 0;
      loc = std::int32_t(i);
      return;
    }
    if (!starts.empty()) {
      part = owner(i);
      loc = std::int32_t(i - starts[std::size_t(part)]);
      return;
    }
    const std::int64_t q = std::uint64_t(i) <= UINT32_MAX && std::uint64_t(block) <= UINT32_MAX
                               ? std::int64_t(std::uint32_t(i) / std::uint32_t(block))
                               : i / block;
    const std::int64_t r = i - q * block;
    const std::int64_t t = q <= UINT32_MAX ? std::int64_t(std::uint32_t(q) / std::uint32_t(parts)) : q / parts;
    const int m = int(q - t * parts) + src;  // < 2 * parts
    part = m >= parts ? m - parts : m;
    loc = std::int32_t(t * block + r);
  }
};

/// What a data structure tells the engine about its distributed storage.
/// Checked (and agreed on by every process) before the engine is built.
struct assembly_shape {
  const char* name = "accrete::assembly";  // prefix of error messages
  std::int64_t rows = 0, cols = 0;          // global extent
  axis_map row_map, col_map;
  int my_part = 0;  // this process's part: row part * col_map.parts + column part
  std::int64_t lrows = 0, lcols = 0, lld = 0;  // this process's part, column-major
  std::size_t elem_size = 0;
  std::size_t storage_bytes = 0;  // header_bytes + lld * lcols * elem_size, overflow-checked
  update_strategy strategy = update_strategy::packets;
  std::size_t buffer_cap = 0, coalesce_bytes = 0;
  std::uint64_t seed = 0;
  // Reproducible sums (src/assembly/repro.hpp; only with merge_op::sum): a
  // contribution is added only where the sum is exact, else logged at its
  // owner; the settle kernel sums the log exactly at commit.
  bool reproducible = false;
  // Whole-update atomicity: an update's piece for one part travels in one
  // packet and is applied under all of its stripe locks at once.
  bool atomic_updates = false;
  // How contributions combine with elements; `user` calls user_merge, a
  // T (*)(T, T) of the typed layer's element type.
  merge_op merge = merge_op::sum;
  void (*user_merge)() = nullptr;
  // Whether the engine's storage holds the elements (lld x lcols after the
  // header, dense). A structure that keeps its own (sparse_matrix) sets
  // false: then there are no direct stores (every piece travels as a
  // packet, also to the origin's own part), the settle kernel runs at every
  // commit, and reset() calls the clear kernel instead of zeroing storage.
  bool element_storage = true;
  // The typed layer's object, for kernels that need more than the engine.
  void* context = nullptr;
};

class assembly_engine {
 public:
  /// Adds one received packet to this process's part (the typed kernel).
  using apply_kernel = void (*)(assembly_engine&, const packet_view&);
  /// Settles this process's log of inexact contributions into its elements
  /// and clears it (reproducible assembly only).
  using settle_kernel = void (*)(assembly_engine&);
  /// Bytes in front of each part: stripe locks, the epoch and open-round words.
  static constexpr std::int64_t nlocks = 64;
  static constexpr std::size_t header_bytes = 64 * nlocks + 64;

  /// Bytes of a part's slice (header + lld x lcols elements), or 0 when
  /// that does not fit in memory (an overflow). A part without rows or
  /// without columns stores no element: its lld of max(1, 0) times its
  /// columns would ask for memory nobody reads (an empty 0 x 2^40 array
  /// asked for 8 TiB).
  static std::size_t storage_bytes_for(std::int64_t lrows, std::int64_t lcols, std::int64_t lld,
                                       std::size_t elem_size) noexcept;

  /// Collective over the world (every process is a part owner). `clear`
  /// zeroes the elements at reset() when the shape has no element_storage.
  assembly_engine(const assembly_shape& shape, apply_kernel apply, settle_kernel settle = nullptr,
                  settle_kernel clear = nullptr);
  assembly_engine(const assembly_engine&) = delete;
  assembly_engine& operator=(const assembly_engine&) = delete;
  /// Collective (a barrier: peers may still be reading or applying).
  ~assembly_engine();

  /// Throws unless the runtime this engine was made in is up and the
  /// engine is alive.
  void require_usable(const char* what) const;
  /// Whether require_usable would pass.
  bool usable() const noexcept;
  /// Same on every process: engines are numbered in construction order.
  std::uint32_t id() const noexcept { return id_; }
  /// The live engine with this id (ids are the same on every process), for
  /// a message from `source`; throws naming both when there is none. Call
  /// under lock().
  static assembly_engine& by_id(std::uint32_t id, int source);
  /// The first step of a collective member `what` of the structure: every
  /// process checks that it is usable and runs `check` (its own argument
  /// checks, which may throw), then all agree (detail::agree) that they
  /// call the same member of the same structure with the same `args`.
  /// Throws on every process if any of that fails on any process.
  template <class Check>
  void enter(const char* what, std::initializer_list<collective_arg> args, Check&& check) const {
    std::exception_ptr bad;
    try {
      require_usable(what);
      check();
    } catch (...) {
      bad = std::current_exception();
    }
    agree_member(what, bad, args);
  }
  std::byte* local_bytes(const char* what) const;
  /// This process's storage, unchecked (for the kernels).
  std::byte* storage() const noexcept { return block_.local() + header_bytes; }
  /// Checks an update's indices and block; throws naming the bad value.
  void validate(std::span<const std::int64_t> rows, std::span<const std::int64_t> cols, std::int64_t ld,
                matrix_layout lay, const void* block) const;
  /// The part of validate() that is not about the indices: for an update
  /// whose indices are known valid (a cached repeat of a validated one).
  void validate_block(std::size_t nr, std::size_t nc, std::int64_t ld, matrix_layout lay, const void* block) const;
  /// A[rows[i], cols[j]] += block(i, j) (src/assembly/kernels.hpp;
  /// instantiated by the typed layers for their element types).
  template <class T>
  void update(const T* block, std::int64_t ld, std::span<const std::int64_t> rows, std::span<const std::int64_t> cols,
              matrix_layout lay);

  void commit();
  void reopen();
  void reset();
  assembly_stats stats() const;
  void reset_stats();
  /// Commits completed by this process (the round its updates belong to).
  std::uint64_t round() const noexcept { return round_.load(std::memory_order_relaxed); }
  std::size_t buffer_cap() const noexcept { return shape_.buffer_cap; }
  std::size_t held_messages() const;

  /// Reads `bytes` at element offset (li, lj) of `part`'s storage.
  void read(int part, std::int64_t li, std::int64_t lj, void* dst, std::size_t bytes) const;
  /// A part's storage if it is node-local (direct load/store), else nullptr.
  std::byte* part_storage(int part) const noexcept {
    std::byte* p = block_.peer(world_of_[std::size_t(part)]);
    return p ? p + header_bytes : nullptr;
  }
  /// The shared block under the parts (one-sided access to remote parts;
  /// a part's element storage starts header_bytes into its slice).
  const shared_block& block() const noexcept { return block_; }
  /// World rank that owns a part, and that part's leading dimension.
  int world_of(int part) const noexcept { return world_of_[std::size_t(part)]; }
  std::int64_t lld_of(int part) const noexcept { return lld_of_[std::size_t(part)]; }
  /// Reproducible assembly: contributions to this process's part whose
  /// addition would have rounded, as (column-major local index, value).
  struct spill {
    std::int64_t index;
    double value;
  };
  void log_spills(std::span<const spill> s);
  /// Copies this process's part (lld x local columns) under all of its
  /// stripe locks.
  void snapshot(void* dst) const;
  std::vector<spill>& spills() noexcept { return spills_; }
  const assembly_shape& shape() const noexcept { return shape_; }

  // ---- for the kernels and strategies (src/assembly/) ------------------------------
  // One thread's binning of an update's row and column lists by owner.
  struct binned {
    std::vector<std::int32_t> row_start, col_start;  // per row/column part: start in lists below
    std::vector<std::int32_t> row_pos, row_loc;      // position in update, local index on owner
    std::vector<std::int32_t> col_pos, col_loc;
    std::vector<int> targets;  // parts with work, in visit order
  };
  void bin(std::span<const std::int64_t> rows, std::span<const std::int64_t> cols, binned& b);
  // A part's storage, if node-local and open for round `r`.
  std::byte* direct_target(int part, std::uint64_t r) const noexcept;
  // Calls cols(begin, end) for runs of columns sharing a stripe, each under
  // that stripe's lock; with atomic_updates, cols(0, nc) once under all of
  // them, and if a stripe is busy and !wait, nothing (returns false)
  // (src/assembly/kernels.hpp).
  template <class F>
  bool with_stripes(int part, const std::int32_t* lcol, std::int32_t nc, F&& cols, bool wait = true);
  // Largest packet (bytes) one message may carry; bigger ones are split.
  std::size_t max_packet_bytes() const noexcept;
  // Atomic updates: throws std::invalid_argument unless an nr x nc piece
  // for `target` (elements of elem_size bytes) fits one packet.
  void require_whole_piece(int target, std::int32_t nr, std::int32_t nc, std::size_t elem_size) const;
  // Space for one packet in the coalescing buffer of `part` (lock held).
  std::byte* packet_slot(int part, std::size_t bytes);
  std::recursive_mutex& lock() const noexcept;
  exchange& strategy() const noexcept { return *exchange_; }
  /// A structure without element storage may apply an update of its own
  /// rows itself, under lock() (as received packets are applied), when
  /// own_part_open(); still under lock() it calls counted_in_place(),
  /// which counts the elements as update() counts a direct store (and the
  /// update, if no update() call counted it already), then, outside
  /// lock(), applied_in_place() with the same count, which lets the
  /// strategy make progress as after any update.
  bool own_part_open() const noexcept { return direct_target(shape_.my_part, round()) != nullptr; }
  void counted_in_place(std::size_t elements, bool new_update);
  void applied_in_place(std::size_t elements);

 private:
  friend class packets_exchange;
  friend class alltoall_exchange;
  friend struct engine_access;

  // Once per column on every update's path: a shift when the column block
  // is a power of two, else a 32-bit division (the 64-bit division it
  // replaces was 5% of a 64 x 64 update's time).
  std::int64_t stripe_of(std::int32_t lcol) const noexcept {
    const std::uint32_t b = stripe_shift_ >= 0 ? std::uint32_t(lcol) >> stripe_shift_ : std::uint32_t(lcol) / stripe_block_;
    return b % nlocks;
  }
  void lock_stripe(int part, std::int64_t stripe) const noexcept;
  bool try_lock_stripe(int part, std::int64_t stripe) const noexcept;
  void unlock_stripe(int part, std::int64_t stripe) const noexcept;
  void flush_target(int part);
  void flush_all();  // every buffer with data
  std::size_t buffered_for(int part) const noexcept {
    const std::int32_t b = box_of_[std::size_t(part)];
    return b < 0 ? 0 : outbox_[std::size_t(b)].bytes.size();
  }
  void wait_for_room(std::size_t bytes);
  void apply_packets(std::span<const std::byte> packets);
  static void on_message(int source, std::span<const std::byte> payload);
  // Applies (or holds, if it belongs to a round not open here) one message.
  void receive(int source, std::uint32_t round, std::span<const std::byte> packets);
  void reopen_locked();
  void agree_member(const char* what, std::exception_ptr bad, std::initializer_list<collective_arg> args) const;
  void publish_open() noexcept;
  // Waits for a collective, making user-level progress (callbacks may
  // update), aborting after ACCRETE_COMMIT_TIMEOUT.
  void wait(request& r, double start, const char* what);
  void check_timeout(double start, const char* what);
  // A barrier over all processes (with fences) that waits like wait().
  void barrier_wait(double start);
  std::uint64_t& epoch() const noexcept;
  std::uint64_t& open_word(int part) const noexcept;

  assembly_shape shape_;
  apply_kernel apply_;
  settle_kernel settle_;
  settle_kernel clear_;
  std::unique_ptr<exchange> exchange_;
  std::vector<int> world_of_;         // part -> world rank
  std::vector<std::int64_t> lld_of_;  // part -> its leading dimension
  int stripe_shift_ = -1;             // log2(column block) if a power of two
  std::uint32_t stripe_block_ = 1;    // column block, saturated (local columns are 32-bit)
  shared_block block_;
  std::uint32_t id_ = 0;
  std::uint64_t generation_ = 0;  // the runtime it was made in (runtime_generation)
  int channel_ = -1;  // commit's collectives (open_channel)
  // Rounds (docs/semantics.md): round_ counts the commits this process has
  // completed; its updates belong to round round_. open_ is the newest
  // round whose contributions may land in local storage: it lags round_
  // from the end of a commit until reopen() (explicit, or implied by the
  // next commit or reset), so the committed values stay put while this
  // process reads them. round_ is atomic only so that updating threads may
  // read it without the lock (commit does not run concurrently with them).
  std::atomic<std::uint64_t> round_{0};
  std::uint64_t open_ = 0;
  std::uint64_t alive_ = 0;
  bool in_commit_ = false;
  // Messages that arrive during the destructor's barrier are held, never
  // applied.
  bool active_ = false;
  struct held_message {
    int source;
    std::uint32_t round;
    std::vector<std::byte> packets;
  };
  std::vector<held_message> held_;

  // Shared by updating threads (guarded by lock() unless noted).
  // Coalescing buffers of the parts that have data (a part with none has
  // no buffer: 4 bytes per part, not a 24-byte vector, docs/scaling.md),
  // found through box_of_ (per part: index in outbox_, -1 none).
  struct outbox {
    int part;
    std::vector<std::byte> bytes;
  };
  std::vector<outbox> outbox_;
  std::vector<std::int32_t> box_of_;
  std::atomic<std::size_t> buffered_{0};        // bytes in outboxes (read without the lock)
  std::size_t reserved_ = 0;                    // capacity of the outboxes (lock held)
  std::uint64_t sent_ = 0;                      // messages sent this round
  std::uint64_t received_ = 0;                  // messages of round open_ applied
  std::uint64_t updates_since_commit_ = 0;
  assembly_stats stats_;
  std::atomic<std::uint64_t> rng_;
  // Reproducible: appended by whichever thread applies (under spill_lock_),
  // settled by the owner in commit.
  std::vector<spill> spills_;
  std::mutex spill_lock_;
};

}  // namespace accrete::detail
