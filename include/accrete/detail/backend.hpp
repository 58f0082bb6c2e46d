#pragma once
// The interface between accrete's runtime and its one transport backend
// (src/backend/mpi/). Everything above this line speaks in world ranks,
// segment offsets, completions, messages and opaque request handles; only
// the backend sees MPI (this header does not include <mpi.h>, so neither
// does any data structure built on it).
#include "accrete/detail/internal.hpp"
#include "accrete/detail/lpc_queue.hpp"
#include "accrete/array/distribution.hpp"
#include "accrete/detail/scalar_type.hpp"
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace accrete::detail {

/// Work to run when an operation completes. Completions are queued by
/// internal progress and run by user-level progress (see src/README.md).
using completion = std::function<void()>;

struct state_base;         // future_state.hpp
struct collective_ticket;  // below

/// Throws accrete::not_initialized naming `what` unless the runtime is up.
void require_initialized(const char* what);
bool runtime_up() noexcept;
/// Which runtime is up: 1 after the first init(), 2 after finalize() and
/// init() again, and so on; 0 while none is. Objects remember the one they
/// were made in: under another they only free their own memory.
std::uint64_t runtime_generation() noexcept;
/// True once a runtime has been finalized (or left by a forked child) and
/// none is up: releasing shared memory is then a no-op, since the segment
/// and every object in it ended with that runtime.
bool runtime_ended() noexcept;

int world_rank() noexcept;
int world_size() noexcept;

/// Bytes in every process's segment (all segments have the same size).
std::size_t segment_bytes() noexcept;
/// True when `rank` shares memory with the caller (direct load/store).
bool is_node_local(int rank) noexcept;
/// Base address of `rank`'s segment in this process, or nullptr when
/// `rank` is not node-local.
std::byte* segment_base(int rank) noexcept;

/// Validates that [offset, offset+bytes) lies inside rank's segment; throws
/// accrete::bad_global_ptr naming `what`, the rank, offset and size.
void check_range(const char* what, int rank, std::uint64_t offset, std::size_t bytes);

/// One-sided copies through the world window (remote targets). `done` runs
/// at user-level progress after the transfer is complete at the target (put)
/// or in the local buffer (get). Transfers of any size are split as MPI needs.
void put_remote(int rank, std::uint64_t offset, const void* src, std::size_t bytes, completion done);
void get_remote(int rank, std::uint64_t offset, void* dst, std::size_t bytes, completion done);
/// The same with completion by counting: one dependency of `s` is fulfilled
/// (at user-level progress) when the transfer completes. Consecutive
/// operations on one state share one queue entry, so a flood of transfers
/// completing one promise costs no allocation or callback per operation.
/// The backend holds a reference on `s` while the operation is pending.
void put_remote(int rank, std::uint64_t offset, const void* src, std::size_t bytes, state_base* s);
void get_remote(int rank, std::uint64_t offset, void* dst, std::size_t bytes, state_base* s);

/// Memory fence that makes direct stores into node-local segments visible
/// to other processes before a subsequent synchronisation.
void memory_sync() noexcept;

// ---- progress --------------------------------------------------------------

/// Internal progress: moves data (tests requests, flushes, receives
/// messages) and queues completions, but runs no user code.
void poll();
/// poll() without taking the node-local rings' messages: for a sender's
/// periodic progress, which must complete its MPI requests but, at internal
/// level, would copy the user messages waiting in its rings out to the
/// inbox (user-level progress runs them in place).
void poll_sends();
/// User-level progress: poll(), then run queued completions and handlers.
void user_progress();
/// Whether the calling thread is inside user_progress() (so running a
/// completion or handler it called).
bool in_user_progress() noexcept;
/// Whether the last user_progress() ran any completion or handler.
bool last_progress_active() noexcept;
/// Whether every process of the world shares this node.
bool world_on_one_node() noexcept;
/// Barrier over this node's processes (every one must call it) through a
/// counter in node-shared memory; makes user-level progress while waiting
/// (and checks `t` against ACCRETE_COLLECTIVE_TIMEOUT, when given).
/// Why: MPI_Ibarrier + test costs several microseconds on one node.
void node_barrier(const collective_ticket* t = nullptr);
/// Queue a completion to run at the next user-level progress.
void defer(completion c);
/// True when nothing is outstanding in the backend.
bool quiescent() noexcept;
/// True while this process's own transfers or messages wait for a flush or
/// a send to complete (accrete::progress_required).
bool outgoing_pending() noexcept;
/// Gives up the processor in a spin-wait: sched_yield, or under SimGrid SMPI
/// 1 us of simulated sleep (all simulated processes share one OS thread; a
/// sched_yield there would never let the process being waited for run).
void os_yield() noexcept;
/// Under SimGrid SMPI: charges the computation since the last MPI call to
/// the simulated clock now, before a store that node peers can see. SMPI
/// charges a burst only at the next MPI call, so without this a peer would
/// see the store (a barrier arrival, a ring message) at the simulated time
/// the burst began, and wait too little. Nothing at all in real builds.
#ifdef ACCRETE_SMPI
void sim_charge() noexcept;
/// Under SimGrid SMPI: the simulated clock (MPI_Wtime), in seconds.
double sim_clock() noexcept;
#else
inline void sim_charge() noexcept {}
#endif

// ---- the backend lock and the progress thread ---------------------------------
// With the progress thread (init_options::progress_thread), the backend's
// state is shared by two threads. One recursive lock guards it: every
// backend function that touches queued state takes it (backend_guard), and
// the progress thread holds it for each of its polls. The assembly engine's
// lock is the same lock, so a received packet is applied under it. Without
// the thread, backend_guard costs one predictable branch.

/// The backend lock (recursive: poll() runs inside guarded functions).
std::recursive_mutex& backend_mutex() noexcept;
/// Whether the progress thread runs (set at init, cleared at finalize,
/// both on the driving thread while the thread is not running).
bool progress_thread_running() noexcept;

/// What the progress thread has done: polls it made, and those that moved
/// something on (tests and benchmarks show that it worked).
struct progress_thread_stats {
  bool running = false;
  std::uint64_t passes = 0, active_passes = 0;
};
progress_thread_stats progress_thread_counts() noexcept;

/// Whether backend_guard locks: with the progress thread, or in the PAR
/// thread mode (set at init, cleared at finalize).
bool backend_locking() noexcept;

/// Holds the backend lock while more than one thread may use the backend.
class backend_guard {
 public:
  backend_guard() : locked_(backend_locking()) {
    if (locked_) backend_mutex().lock();
  }
  ~backend_guard() {
    if (locked_) backend_mutex().unlock();
  }
  backend_guard(const backend_guard&) = delete;
  backend_guard& operator=(const backend_guard&) = delete;

 private:
  bool locked_;
};

// ---- threads: the PAR mode ------------------------------------------------------
// In the PAR thread mode (init_options::threads) several threads use the
// runtime. Work that must run in a particular thread goes to a queue that
// thread holds: each thread holds its own default queue and, for the
// thread that initialised the runtime until it lets go, the master queue.
// A completion runs in the thread that held the current queue when the
// operation started, during that thread's user-level progress; RPC bodies
// run in the master queue's holder. In the SEQ mode (the default) one
// thread holds both queues and completions run as they always did.

/// Whether the runtime runs in the PAR thread mode.
bool par_mode() noexcept;
/// In the PAR mode, throws accrete::error naming `what` unless this thread
/// holds the master queue: collectives and the calls that must match across
/// processes (team and dist_object construction) belong to its holder, so
/// that every process makes them in one order.
void require_master(const char* what);
/// In the PAR mode, `c` wrapped to run in the current queue's thread (when
/// run anywhere, the wrapper posts `c` there); `c` itself otherwise.
completion to_caller(completion c);

// ---- active messages ---------------------------------------------------------
// A message is a byte payload delivered to a handler on the target during
// its user-level progress. Handlers are identified by their address relative
// to a base symbol, valid because every process runs the same executable;
// ids are validated on receipt.

using am_handler = void (*)(int source, std::span<const std::byte> payload);

/// Sends `payload` to `rank`, handled there by `h`. The payload is copied
/// (or owned) before return. Flow control: if too many bytes to `rank` are
/// still in flight, this makes internal progress until they drain.
void am_send(int rank, am_handler h, std::span<const std::byte> payload);
/// Bytes a message must reserve at its front for the header written by
/// am_send_owned.
inline constexpr std::size_t am_header_bytes = sizeof(std::intptr_t);
/// Like am_send, but takes ownership of `msg`, whose first am_header_bytes
/// are reserved for the header (no copy of the payload).
void am_send_owned(int rank, am_handler h, std::vector<std::byte>&& msg);
/// A byte vector to build a message in, holding am_header_bytes reserved
/// for the header (append the payload). Vectors of messages that
/// went through a node-local ring (whose bytes were copied, not kept) are
/// recycled here, so a steady stream of RPCs allocates no message buffers.
/// `payload_bytes`, when known, sizes it: a buffer of that capacity is
/// taken from the recycled ones or allocated once, instead of growing
/// while the payload is written. Per thread; a nested caller simply gets a
/// new vector.
std::vector<std::byte> message_buffer(std::size_t payload_bytes = 0);
/// Every handler must be registered (in every process) before messages for
/// it arrive. `internal` handlers only move data and may run during
/// internal progress; the others run at user-level progress.
void am_register(am_handler h, bool internal);
/// Number of messages sent to each rank so far (for termination counting).
std::uint64_t am_sent_to(int rank) noexcept;
/// Bytes of active messages sent but not yet complete, over all targets.
std::size_t am_inflight_bytes() noexcept;

// ---- collectives over the world, for data structures ---------------------------
// On accrete's private world communicator, indexed by world rank. Every
// process must call them in the same order (as MPI collectives).

/// An outstanding non-blocking collective (an MPI request inside the
/// backend). Move-only. A request dropped while pending (after an error)
/// is abandoned, not waited for.
class request {
 public:
  request() noexcept = default;
  request(request&& o) noexcept;
  request& operator=(request&& o) noexcept;
  request(const request&) = delete;
  request& operator=(const request&) = delete;
  ~request() = default;
  /// Internal progress only (no user code): true once complete.
  bool test();
  /// Blocks in MPI until complete, without accrete progress.
  void wait();
  bool pending() const noexcept { return pending_; }

 private:
  friend struct request_access;
  alignas(8) unsigned char handle_[8] = {};  // the MPI_Request (size checked by the backend)
  bool pending_ = false;
};

/// A private channel for one structure's collectives (a duplicate of the
/// world communicator; collective). Why: a process that is in another
/// collective (a user barrier, another matrix's commit) must never match a
/// commit's sums, which would make them silently wrong; on its own channel
/// the commit waits instead, and the commit timeout names the process.
int open_channel();
/// Frees a channel (no-op after finalize, which frees them all).
void close_channel(int channel) noexcept;
/// Starts an element-wise sum over all processes of `n` counts
/// (MPI_Iallreduce on `channel`); `in` and `out` must stay valid until done.
request world_iallreduce_sum(int channel, const std::uint64_t* in, std::uint64_t* out, int n);
/// Starts a barrier over all processes on `channel`.
request world_ibarrier(int channel);
/// Waits for a world collective with internal progress, ending the job
/// under ACCRETE_COLLECTIVE_TIMEOUT (the ticket names it).
void wait_collective(request& r, const collective_ticket& t);
/// Blocking: every process's values (the same count on each), in world
/// rank order: element [w * mine.size() + k] is rank w's mine[k]. `what`
/// names the caller for ACCRETE_COLLECTIVE_TIMEOUT (as in the functions
/// below).
std::vector<std::int64_t> world_allgather(std::span<const std::int64_t> mine, const char* what);
/// Blocking: element-wise sum over all processes of `count` values of type
/// `t`, in place.
void world_allreduce_sum(void* inout, int count, scalar_type t, const char* what);
/// One process's share of a collective matrix file transfer: the file is
/// the m x n matrix column-major, raw elements of `type`, no header (the
/// format of accrete/matrix/mpiio.hpp). This process moves the elements at
/// rows `row_runs` x columns `col_runs`, held column-major at `local` with
/// leading dimension lld (lrows x lcols of them).
struct matrix_file {
  std::string path;
  const char* what;  // the caller's name, for messages ("dist_array::save")
  scalar_type type;
  std::int64_t m, n;
  std::vector<index_run> row_runs, col_runs;
  std::byte* local;
  std::int64_t lrows, lcols, lld;
};
/// Collective over the world (MPI-IO; a write ends with a barrier, so the
/// file is complete everywhere on return). A read checks the file holds
/// exactly m * n elements and throws std::runtime_error naming both sizes
/// otherwise; std::invalid_argument (on every process, via agree) if m or
/// n exceed MPI's int or a part's lld is below its rows.
void world_matrix_file_io(const matrix_file& f, bool write);
/// Blocking: the smallest value over all processes.
std::int64_t world_min(std::int64_t mine, const char* what);
/// Ends the whole job at once (after a diagnostic), with this exit code.
[[noreturn]] void world_abort(int code);

/// One argument of a collective call that every process must give alike:
/// its name as the user wrote it, its value as 64 bits, and how to print
/// that value in a message (null: as a whole number).
struct collective_arg {
  const char* name;
  std::int64_t value;
  std::string (*show)(std::int64_t) = nullptr;
};
/// FNV-1a of bytes, for arguments longer than 64 bits (a list of bounds,
/// a path): printed as "with hash ...".
std::int64_t arg_hash(const void* data, std::size_t bytes) noexcept;
std::string show_hash(std::int64_t v);
std::string show_double(std::int64_t bits);
std::string show_float(std::int64_t bits);
std::string show_scalar_type(std::int64_t t);
/// Options of the assembled structures: a merge_op, an update_strategy, a flag.
std::string show_merge(std::int64_t v);
std::string show_strategy(std::int64_t v);
std::string show_bool(std::int64_t v);
/// An element value of a collective call (fill's value, add's alpha), bit
/// for bit: floating-point values print as numbers, complex ones by hash.
template <class T>
collective_arg value_arg(const char* name, const T& v) noexcept {
  if constexpr (std::is_integral_v<T>) {
    return {name, std::int64_t(v)};
  } else if constexpr (std::is_same_v<T, double>) {
    std::int64_t b;
    __builtin_memcpy(&b, &v, 8);
    return {name, b, &show_double};
  } else if constexpr (std::is_same_v<T, float>) {
    std::int32_t b;
    __builtin_memcpy(&b, &v, 4);
    return {name, b, &show_float};
  } else {
    return {name, arg_hash(&v, sizeof v), &show_hash};
  }
}

/// Collective over the world: the first step of every collective
/// constructor and of every collective data-structure call. Every process
/// reports whether its own arguments were valid (`local` holds its
/// exception, or is null) and the arguments that must be equal everywhere.
/// Throws on every process, before anything is allocated, when
///  - a process rejected its arguments: that process its own exception, the
///    others accrete::collective_misuse naming the lowest failing rank and
///    quoting its message;
///  - the processes are in different collective calls, or an argument
///    differs: accrete::collective_misuse naming the call, the argument, its
///    values and the ranks that gave each.
/// `what` is the call as the user knows it ("accrete::dist_array",
/// "accrete_matrix_create"). Waits with internal progress, under
/// ACCRETE_COLLECTIVE_TIMEOUT. At most 24 arguments.
void agree(const char* what, std::exception_ptr local, std::span<const collective_arg> args = {});
inline void agree(const char* what, std::exception_ptr local, std::initializer_list<collective_arg> args) {
  agree(what, local, std::span<const collective_arg>(args.begin(), args.size()));
}
/// A collective constructor behind a language binding (C, Python):
/// `prepare` runs this process's own checks and conversions (it may
/// throw); `make` then calls the C++ constructor, whose agreement compares
/// every process's arguments. A process whose `prepare` failed still takes
/// part in that agreement, with its exception, so that the others fail too
/// instead of waiting for it forever.
template <class Prepare, class Make>
void construct_collectively(const char* what, Prepare&& prepare, Make&& make) {
  std::exception_ptr bad;
  try {
    prepare();
  } catch (...) {
    bad = std::current_exception();
  }
  if (bad) agree(what, bad, std::span<const collective_arg>());  // throws on every process
  make();
}

// ---- collective watch (ACCRETE_COLLECTIVE_TIMEOUT) -------------------------------------
// Every accrete collective counts itself, per team, in a record of the
// process that other processes can read; with ACCRETE_COLLECTIVE_TIMEOUT set,
// a collective still incomplete after that many seconds ends the job with a
// message naming the call and the processes that have not entered it (and
// what they are in instead). src/backend/mpi/collective_watch.cpp.

/// A collective call in progress on this process.
struct collective_ticket {
  const char* what = nullptr;
  double start = 0;
  std::uint64_t team_key = 0, count = 0;  // the count-th collective of this process on the team
  std::vector<int> members;               // world ranks of the team (empty: the world)
  bool blocking = false;                  // this process waits in it (named in its record)
};
/// The watch key of the world team.
inline constexpr std::uint64_t world_team_key = 1;
/// Starts watching a collective on the team `key` with `members` (empty:
/// the world). `blocking`: the caller waits in it until it completes.
collective_ticket collective_begin(const char* what, std::uint64_t key, std::span<const int> members, bool blocking);
inline collective_ticket collective_begin(const char* what) { return collective_begin(what, world_team_key, {}, true); }
/// The caller left a blocking collective.
void collective_end(const collective_ticket& t) noexcept;
/// Ends the job with the diagnosis if `t` has run past the timeout.
void collective_check(const collective_ticket& t);
/// ACCRETE_COLLECTIVE_TIMEOUT in seconds, 0 when unset.
double collective_timeout() noexcept;

/// All-to-all of byte blocks of any size (MPI's counts are int): sends
/// sbuf[sdisp[k], sdisp[k] + scount[k]) to world rank k and returns what
/// every rank sent here, concatenated in rank order, with rcount/rdisp
/// filled in. `wait` completes a request (so callers choose how to make
/// progress while they wait). Exchanges that fit MPI's int counts go in one
/// MPI_Ialltoallv; larger ones in rounds of at most 1 GiB per rank.
/// `int_limit` is the largest count taken as fitting (tests lower it to
/// exercise the rounds with small data).
std::vector<std::byte> alltoallv_bytes(const std::byte* sbuf, const std::vector<std::size_t>& scount,
                                       const std::vector<std::size_t>& sdisp, std::vector<std::size_t>& rcount,
                                       std::vector<std::size_t>& rdisp, const std::function<void(request&)>& wait,
                                       std::size_t int_limit = 2147483647);

// ---- shared blocks ------------------------------------------------------------

/// shared_blocks whose windows are open (the runtime's own included): tests
/// check that a failed collective construction left none behind.
std::size_t live_shared_blocks() noexcept;

/// A collectively allocated block of node-shared memory (one slice per
/// process, each of its own size), reachable by direct load/store from every
/// process of the node. Used by data structures (convergent_matrix,
/// dist_array) whose storage must be addressable by node peers and too large
/// for the general segment.
class shared_block {
 public:
  shared_block() = default;
  /// Collective over world: every process contributes `bytes` (may differ).
  /// Its slices are also reachable by one-sided reads from every process
  /// (one window over the world, open for the block's lifetime).
  explicit shared_block(std::size_t bytes);
  shared_block(const shared_block&) = delete;
  shared_block& operator=(const shared_block&) = delete;
  shared_block(shared_block&& o) noexcept;
  shared_block& operator=(shared_block&& o) noexcept;
  ~shared_block();
  /// This process's slice; every slice starts on a 64-byte boundary (in
  /// every process's view of it).
  std::byte* local() const noexcept { return local_; }
  std::size_t local_bytes() const noexcept { return bytes_; }
  /// A node peer's slice (nullptr if `rank` is not node-local).
  std::byte* peer(int rank) const noexcept;
  /// Blocking read of `bytes` at `offset` of `rank`'s slice: direct copy if
  /// node-local, else MPI_Get + flush.
  void read(int rank, std::size_t offset, void* dst, std::size_t bytes) const;
  /// Like read(), but gives up after `seconds` when a remote target does not
  /// answer (with passive-target RMA some MPIs need the target to make
  /// progress). Returns whether the bytes arrived. For diagnostics only: a
  /// read that gave up stays pending until MPI finalizes or aborts.
  bool try_read(int rank, std::size_t offset, void* dst, std::size_t bytes, double seconds) const;
  /// Memory barrier over this block's node window: makes direct stores
  /// into node peers' slices visible to them before a following
  /// synchronisation (MPI_Win_sync on the block's own window).
  void sync() const noexcept;

  /// One-sided operation on a rectangle of a (remote) peer's slice: `rows` x
  /// `cols` elements of type `t`, element (i, j) at byte `offset` +
  /// (j * ld + i) * size; the origin is column-major with leading dimension
  /// `origin_ld`. acc adds element-wise (MPI_Accumulate with MPI_SUM: atomic
  /// per element with respect to every other acc). Starts the transfer
  /// (derived datatypes cached per shape) and returns once it is locally
  /// complete (put/acc: the origin may be reused; get: the data has
  /// arrived). Complete at the target only after flush(rank) or
  /// flush_all().
  enum class rma_op { put, get, acc };
  void rect(rma_op op, int rank, std::size_t offset, std::int64_t rows, std::int64_t cols, std::int64_t ld,
            scalar_type t, void* origin, std::int64_t origin_ld) const;
  /// The same for a list of single elements at element displacements
  /// `disps` from `offset` (distinct: MPI forbids overlapping accumulate
  /// targets); the origin holds disps.size() contiguous elements.
  void elements(rma_op op, int rank, std::size_t offset, std::span<const std::int64_t> disps, scalar_type t,
                void* origin) const;
  /// Atomic on the 64-bit integer at `offset` of `rank`'s slice: returns
  /// the old value and adds `v` (or replaces it by `v`), complete at the
  /// target on return (MPI_Fetch_and_op + flush).
  std::int64_t fetch_op(int rank, std::size_t offset, std::int64_t v, bool replace) const;
  /// Remote completion of every operation this process issued on the block
  /// (to `rank`, or to all), plus a memory barrier for direct stores.
  void flush(int rank) const;
  void flush_all() const;
  /// Local completion of every operation issued on the block.
  void flush_local_all() const;

  /// The MPI windows (opaque; src/backend/mpi/windows.cpp keeps a list of
  /// the open ones so that finalize() can close them).
  struct windows;

 private:
  void release() noexcept;
  std::byte* local_ = nullptr;
  std::size_t bytes_ = 0;
  windows* wins_ = nullptr;
  std::byte** peers_ = nullptr;  // indexed by world rank; nullptr if remote
  // Per world rank: where its slice starts past its window's base (0..63),
  // so that every slice starts on a cache line; added to the displacements
  // of one-sided operations.
  std::uint8_t* pads_ = nullptr;
  std::size_t disp(int rank, std::size_t offset) const noexcept { return offset + pads_[rank]; }
};

}  // namespace accrete::detail
