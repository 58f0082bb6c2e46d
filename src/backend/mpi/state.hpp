#pragma once
// The MPI backend's own shared state and the functions its files share.
// Included only by src/backend/mpi/*.cpp: the one place that sees MPI types
// (the rest of accrete speaks through include/accrete/detail/backend.hpp).
#include <cstddef>
#include <array>
#include <cstdint>
#include <deque>
#include <atomic>
#include <exception>
#include <memory>
#include <thread>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <mpi.h>

#include "accrete/detail/backend.hpp"
#include "accrete/team.hpp"
#include "backend/mpi/mpi_check.hpp"
#include "backend/mpi/shm_ring.hpp"

namespace accrete::detail {

constexpr int am_tag = 17;
// MPI counts are int; one MPI call moves at most this many bytes.
constexpr std::size_t max_chunk = std::size_t{1} << 30;
// Deepest nesting of user-level progress (docs/semantics.md, "Progress").
constexpr int max_progress_depth = 1000;
// Flow control: bytes of active messages in flight toward one target before
// am_send waits for some to drain.
constexpr std::size_t am_inflight_cap = std::size_t{64} << 20;

struct pending_send {
  MPI_Request req;
  int rank;
  std::vector<std::byte> buf;
};

struct state_t {
  bool up = false;
  std::uint64_t generation = 0;  // runtime_generation(): which init() this runtime is, 0 when down
  bool owns_mpi = false;
  // The progress thread or the par mode is asked for, so MPI must give
  // MPI_THREAD_MULTIPLE (otherwise any level from SERIALIZED up will do).
  bool needs_multiple = false;
  bool verbose = false;
  int rank = 0, size = 1;
  MPI_Comm world = MPI_COMM_NULL, node = MPI_COMM_NULL, am = MPI_COMM_NULL;
  // Used only by the exit check (exit_check.cpp): its barrier cannot match a
  // collective that another process is still in.
  MPI_Comm exit_comm = MPI_COMM_NULL;
  // Set by world_abort: MPICH's MPI_Abort ends this process with exit(),
  // whose handler (the exit check) must then not start a second abort.
  std::atomic<bool> aborting{false};
  std::vector<MPI_Comm> channels;  // open_channel(); MPI_COMM_NULL when free
  std::size_t seg_bytes = 0;
  MPI_Win node_win = MPI_WIN_NULL, world_win = MPI_WIN_NULL;
  bool world_is_node = false;
  std::vector<std::byte*> bases;  // per world rank; nullptr when remote
  // The world window is Open MPI 4's osc/rdma, which crashes on a 64-bit
  // MPI_Compare_and_swap (init.cpp, avoid_osc_rdma): such atomics are refused.
  bool cas64_crashes = false;

  // progress
  std::vector<completion> await_flush;     // remote puts/gets issued, not yet flushed
  std::vector<int> flush_targets;          // their targets, each once
  std::vector<std::uint8_t> flush_marked;  // per rank: listed in flush_targets
  bool flush_all = false;                  // a target was unknown: flush every rank
  std::vector<MPI_Request> reqs;           // other outstanding requests
  std::vector<completion> req_done;
  // Parallel to reqs: the collective a request belongs to, watched for
  // ACCRETE_COLLECTIVE_TIMEOUT (null: not a collective, or no timeout);
  // `watched` counts the non-null ones.
  std::vector<std::shared_ptr<const collective_ticket>> req_ticket;
  std::size_t watched = 0;
  std::vector<int> req_idx;  // scratch for MPI_Testsome
  std::deque<completion> ready;
  // counted completions (see put_remote): issued, and flushed but not yet
  // applied; spare keeps a buffer's capacity between progress calls
  struct counted {
    state_base* s;
    std::intptr_t n;
    lpc_queue* owner;  // par: the queue of the thread that issued it (else null)
  };
  std::vector<counted> await_flush_counted, ready_counted, spare_counted;
  // par: the owners named in await_flush_counted, kept alive until the flush
  std::vector<std::shared_ptr<lpc_queue>> counted_owners;
  // Operands of atomics issued and not yet flushed: MPI may read an origin
  // buffer until the operation completes. Stable addresses (a deque);
  // emptied by every flush.
  std::deque<std::array<std::byte, 16>> atomic_operands;
  // active messages
  std::vector<pending_send> sends;
  std::vector<std::size_t> inflight;
  // their sum: the engine asks for it on every packet it buffers
  std::size_t inflight_total = 0;
  std::vector<std::uint64_t> sent;
  // Messages run here (every source, this process too): finalize_drain()
  // compares the sums of `sent` and this over all processes.
  std::atomic<std::uint64_t> handled{0};
  struct inbound {
    int source;
    std::vector<std::byte> data;  // from message_pool_take: may be longer than the message
    std::size_t size;
  };
  std::deque<inbound> inbox;
  // Messages to this process itself: the sender's buffer, moved here and
  // run from it (no copy through a ring or MPI). Internal handlers run at
  // any poll, the others at user-level progress.
  struct self_message {
    std::vector<std::byte> bytes;
    bool internal;
  };
  std::deque<self_message> to_self;
  std::size_t to_self_internal = 0;  // how many of them internal handlers take
#ifdef ACCRETE_SMPI
  // messages being received, delivered in the order they were matched
  // (messages.cpp says why they are not received in place under SMPI)
  struct arriving {
    int source;
    int count;
    std::vector<std::byte> data;
    MPI_Request req;
  };
  std::deque<arriving> arrivals;
#endif
  // node-local active messages (shm_ring.hpp): two rings per process, which
  // every process of its node writes into, one for messages of up to
  // small_message_max bytes and one for larger ones (messages.cpp says why). Per
  // node peer the views of its rings we write through, found through
  // ring_of (per world rank: the index in out_rings and out_bulk, -1 off
  // the node; 4 bytes per rank, docs/scaling.md), and our own rings, which
  // we drain (empty when off).
  MPI_Win ring_win = MPI_WIN_NULL;
  std::vector<shm_ring> out_rings, out_bulk;
  std::vector<std::int32_t> ring_of;
  shm_ring in_ring, in_bulk;
  // node barrier: arrival count and generation, on separate cache lines in
  // the node's first process's memory
  MPI_Win sync_win = MPI_WIN_NULL;
  std::uint64_t* sync_count = nullptr;
  std::uint64_t* sync_gen = nullptr;
  int node_n = 1;  // processes in `node`
  unsigned skipped_probes = 0;
  bool last_active = false;  // the last user-level progress ran something
  // progress thread (progress.cpp): runs between init and finalize when
  // asked for. Everything it touches is guarded by the backend lock except
  // thread_stop; thread_error is what it threw, rethrown on the driving
  // thread by the next poll.
  bool thread_on = false;
  bool par = false;  // the PAR thread mode (init_options::threads)
  std::thread thread;
  std::atomic<bool> thread_stop{false};
  std::exception_ptr thread_error;
  std::uint64_t thread_passes = 0, thread_active_passes = 0;
};

extern state_t st;

// ---- MPI handles for the backend's own files --------------------------------------

/// Private duplicate of the world communicator (accrete's own traffic).
MPI_Comm world_comm() noexcept;
/// Processes of this (possibly pretend) node.
MPI_Comm node_comm() noexcept;
/// The world window over every process's segment (displacement unit 1,
/// offsets are segment offsets), locked with MPI_Win_lock_all from init to
/// finalize.
MPI_Win segment_window() noexcept;
/// Queue `done` to run after the next flush of the segment window (for
/// operations issued with MPI_Put/MPI_Get/MPI_Accumulate on it); `rank` is
/// the target (-1: unknown, flush all targets).
void after_flush(completion done, int rank = -1);
/// Track an MPI request; `done` runs at user-level progress once it
/// completes.
void track_request(MPI_Request r, completion done);

// ---- shared between the backend's files ---------------------------------------------

// windows.cpp
void open_windows(std::size_t bytes, std::byte** local, MPI_Win* node_win, MPI_Win* world_win, bool* world_is_node,
                  std::vector<std::byte*>& bases);
void close_windows(MPI_Win node_win, MPI_Win world_win, bool world_is_node);
// MPI_Ibarrier (under SMPI a recursive-doubling sum: sim_collectives.cpp
// says why).
void ibarrier(MPI_Comm comm, MPI_Request* r);
// collectives.cpp: this process's next number in a per-communicator
// sequence (one sequence per keyval, created on first use); members that
// call it once per collective agree on the numbers.
std::uint32_t comm_sequence(MPI_Comm comm, int& keyval);
#ifdef ACCRETE_SMPI
// sim_collectives.cpp: MPI_Iallreduce(MPI_SUM) of n uint64 as a generalized
// request that internal progress completes; n = 0 is a barrier.
void sim_iallreduce_sum(MPI_Comm comm, const std::uint64_t* in, std::uint64_t* out, int n, MPI_Request* r);
// Moves the running ones on; true if one completed.
bool sim_collectives_progress();
#endif
// MPI_Win_allocate_shared of `bytes` on `comm` (displacement unit 1);
// `base` is a void** as in MPI. Under SMPI every process gets the largest
// size (windows.cpp says why).
void allocate_shared(std::size_t bytes, MPI_Info info, MPI_Comm comm, void* base, MPI_Win* win);
// Collective over `node`: where each node process's slice of the shared
// window `w` is (`mine`: the caller's), by node rank.
std::vector<void*> shared_bases(MPI_Win w, void* mine);
// Frees the windows of every shared_block still alive, in creation order
// (the same on every process: blocks are created collectively). finalize()
// calls it so that objects outliving the runtime do not leave windows open
// across MPI_Finalize, which MPICH's UCX layer aborts on.
void close_live_blocks();
// progress.cpp
void note_flush_target(int rank);
/// An operation on `rank`'s part of the world window was issued: complete
/// it at the next flush by running `done` (at user-level progress) or by
/// fulfilling one dependency of `s`.
///@{
void await_flush_then(int rank, completion done);
void await_flush_counted(int rank, state_base* s);
///@}
/// track_request for a collective's request, watched under
/// ACCRETE_COLLECTIVE_TIMEOUT.
void track_collective(MPI_Request r, completion done, const collective_ticket& t);
// collective_watch.cpp: the records and the timeout (init and finalize),
// the check internal progress makes, and a wait on one request with it.
void watch_init();
void watch_finalize() noexcept;
void watch_poll();
// user_level: user-level progress while waiting (RPC bodies and callbacks
// run), for waits that peers may need answers from; else internal only.
void wait_request(MPI_Request* r, const collective_ticket& t, bool user_level = false);
// Starts the progress thread (the last step of init) / stops and joins it
// (the first step of finalize).
void start_progress_thread();
// The thread mode (progress.cpp): at init, the calling thread holds the
// master queue; at finalize it lets go of every queue it pushed.
void threads_init(bool par);
void threads_finalize();
/// Closes what finalize() and a clean exit without it both close: windows
/// (also of live data structures), rings, node sync, datatypes and
/// communicators; marks the runtime down.
void close_runtime();
void stop_progress_thread();
// messages.cpp
void open_rings();
void close_rings();
bool receive_ring_messages(bool user_level);
bool receive_messages();
bool run_internal_self_messages();
/// Runs the n messages to self waiting at the caller's last look (and those
/// their handlers add, within a budget). User level, outside the lock.
void run_self_messages(std::size_t n);
void test_sends();
// Buffers of messages that go through MPI, kept for reuse; under the
// backend lock (messages.cpp says why).
std::vector<std::byte> message_pool_take(std::size_t n);
void message_pool_give(std::vector<std::byte>&& buf) noexcept;
void message_pool_clear() noexcept;
void dispatch(int source, std::span<const std::byte> msg);
/// A handler's id as messages carry it, and back (throws accrete::error
/// naming `source` for an id no handler has): for a message that carries
/// another message to run, as the message path of strided puts carries
/// its remote completion.
std::intptr_t am_handler_id(am_handler h) noexcept;
am_handler am_handler_of(std::intptr_t id, int source);
/// MPI_Get_library_version's text (callable before MPI_Init): the MPI
/// library, for the choices that depend on it.
std::string mpi_library_version();
// node_barrier.cpp
void open_node_sync();
void close_node_sync();
// team.cpp: collective_begin for a collective on team `t`.
collective_ticket team_collective_begin(const char* what, const team& t, bool blocking);

}  // namespace accrete::detail
