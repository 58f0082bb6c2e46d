// The MPI backend: communicators, segments and windows, one-sided transfers,
// active messages, and the polling half of the progress engine. This is the
// only part of accrete (with its siblings in this folder) that calls MPI.
#include "accrete/detail/backend.hpp"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <sched.h>
#include <time.h>

#include "accrete/detail/env.hpp"
#include "accrete/detail/future_state.hpp"
#include "accrete/error.hpp"
#include "accrete/progress.hpp"
#include "accrete/runtime.hpp"
#include "backend/mpi/mpi_check.hpp"
#include "backend/mpi/shm_ring.hpp"

namespace accrete::detail {
namespace {

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
  bool owns_mpi = false;
  bool verbose = false;
  int rank = 0, size = 1;
  MPI_Comm world = MPI_COMM_NULL, node = MPI_COMM_NULL, am = MPI_COMM_NULL;
  std::size_t seg_bytes = 0;
  MPI_Win node_win = MPI_WIN_NULL, world_win = MPI_WIN_NULL;
  bool world_is_node = false;
  std::vector<std::byte*> bases;  // per world rank; nullptr when remote

  // progress
  std::vector<completion> await_flush;  // remote puts/gets issued, not yet flushed
  std::vector<int> flush_targets;       // their targets, each once
  std::vector<std::uint8_t> flush_marked;  // per rank: listed in flush_targets
  bool flush_all = false;                  // a target was unknown: flush every rank
  int progress_depth = 0;                  // nesting of user_progress()
  std::vector<MPI_Request> reqs;        // other outstanding requests
  std::vector<completion> req_done;
  std::vector<int> req_idx;  // scratch for MPI_Testsome
  std::deque<completion> ready;
  // counted completions (see put_remote): issued, and flushed but not yet
  // applied; spare keeps a buffer's capacity between progress calls
  struct counted {
    state_base* s;
    std::intptr_t n;
  };
  std::vector<counted> await_flush_counted, ready_counted, spare_counted;
  // active messages
  std::vector<pending_send> sends;
  std::vector<std::size_t> inflight;
  std::vector<std::uint64_t> sent;
  struct inbound {
    int source;
    std::unique_ptr<std::byte[]> data;
    std::size_t size;
  };
  std::deque<inbound> inbox;
  // node-local active messages (shm_ring.hpp): per world rank, the ring we
  // write into (in that process's memory; empty when not on our node), and
  // the rings others write into us, with the sender's world rank
  MPI_Win ring_win = MPI_WIN_NULL;
  std::vector<shm_ring> out_rings;
  std::vector<std::pair<int, shm_ring>> in_rings;
  // node barrier: arrival count and generation, on separate cache lines in
  // the node's first process's memory
  MPI_Win sync_win = MPI_WIN_NULL;
  std::uint64_t* sync_count = nullptr;
  std::uint64_t* sync_gen = nullptr;
  int node_n = 1;  // processes in `node`
  unsigned skipped_probes = 0;
  bool last_active = false;  // the last user-level progress ran something
};

state_t st;

std::unordered_map<std::intptr_t, bool>& am_registry() {
  static std::unordered_map<std::intptr_t, bool> r;
  return r;
}

// Handlers travel as their distance from this symbol: the same in every
// process of one executable even under address-space randomisation.
void am_base_symbol(int, std::span<const std::byte>) {}

std::intptr_t handler_id(am_handler h) {
  return reinterpret_cast<std::intptr_t>(h) - reinterpret_cast<std::intptr_t>(&am_base_symbol);
}

// Segments are carved in 64-byte multiples so every base stays cache-aligned.
std::size_t round_up(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }

// Builds node windows and the world window over the same memory. Three
// layouts, chosen so that MPI_Win_create (which Open MPI 4.1 cannot do at
// P = 1 without osc/pt2pt) is only used when it is needed:
//   all processes on one node -> one MPI_Win_allocate_shared on world;
//   every process its own node -> MPI_Win_allocate on world;
// (decided on the largest node, so that every process takes the same branch)
//   otherwise -> MPI_Win_allocate_shared on the node + MPI_Win_create on world.
void open_windows(std::size_t bytes, std::byte** local, MPI_Win* node_win, MPI_Win* world_win, bool* world_is_node,
                  std::vector<std::byte*>& bases) {
  const int node_n = st.node_n;
  int max_node_n = 0;
  // The layout must be the same on every process (window creation is
  // collective): pretend nodes of k may leave one smaller node at the end.
  MPI_Allreduce(&node_n, &max_node_n, 1, MPI_INT, MPI_MAX, st.world);
  MPI_Info info;
  MPI_Info_create(&info);
  // Each slice is used on its own; MPI may place them non-contiguously.
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  MPI_Info_set(info, "same_disp_unit", "true");
  void* base = nullptr;
  bases.assign(st.size, nullptr);
  *world_is_node = false;
  if (node_n == st.size) {
    ACCRETE_MPI(MPI_Win_allocate_shared(MPI_Aint(bytes), 1, info, st.world, &base, node_win));
    *world_win = *node_win;
    *world_is_node = true;
  } else if (max_node_n == 1) {
    ACCRETE_MPI(MPI_Win_allocate(MPI_Aint(bytes), 1, info, st.world, &base, world_win));
    *node_win = MPI_WIN_NULL;
  } else {
    ACCRETE_MPI(MPI_Win_allocate_shared(MPI_Aint(bytes), 1, info, st.node, &base, node_win));
    ACCRETE_MPI(MPI_Win_create(base, MPI_Aint(bytes), 1, info, st.world, world_win));
  }
  MPI_Info_free(&info);
  *local = static_cast<std::byte*>(base);
  if (*node_win != MPI_WIN_NULL) {
    // Map node ranks to world ranks and ask MPI where each peer's slice is.
    MPI_Group wg, ng;
    MPI_Comm_group(st.world, &wg);
    MPI_Comm_group(st.node, &ng);
    std::vector<int> nr(node_n), wr(node_n);
    for (int i = 0; i < node_n; ++i) nr[i] = i;
    MPI_Group_translate_ranks(ng, node_n, nr.data(), wg, wr.data());
    MPI_Group_free(&wg);
    MPI_Group_free(&ng);
    for (int i = 0; i < node_n; ++i) {
      MPI_Aint sz;
      int du;
      void* p = nullptr;
      ACCRETE_MPI(MPI_Win_shared_query(*node_win, i, &sz, &du, &p));
      // A zero-byte slice may report a null base; give it a valid address.
      bases[wr[i]] = p ? static_cast<std::byte*>(p) : *local;
    }
    if (!*world_is_node) ACCRETE_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, *node_win));
  } else {
    bases[st.rank] = *local;
  }
  ACCRETE_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, *world_win));
}

void close_windows(MPI_Win node_win, MPI_Win world_win, bool world_is_node) {
  MPI_Win_unlock_all(world_win);
  if (world_is_node) {
    MPI_Win_free(&world_win);
    return;
  }
  MPI_Win_free(&world_win);
  if (node_win != MPI_WIN_NULL) {
    MPI_Win_unlock_all(node_win);
    MPI_Win_free(&node_win);
  }
}

// Completes every outstanding put and get with one flush per target.
// MPI_Win_flush_all is avoided on purpose: with MPICH 4.0.2 (ch4:ucx) it
// returned before small puts had left the origin buffer (reproduced by
// runtime_test RmaSizes at P = 3 with ACCRETE_NODE_SIZE=1), while per-target
// flushes are correct. Returns whether anything completed.
bool flush_rma() {
  if (st.await_flush.empty() && st.await_flush_counted.empty()) return false;
  if (st.flush_all) {
    for (int r = 0; r < st.size; ++r) ACCRETE_MPI(MPI_Win_flush(r, st.world_win));
  } else {
    for (int r : st.flush_targets) ACCRETE_MPI(MPI_Win_flush(r, st.world_win));
  }
  for (int r : st.flush_targets) st.flush_marked[r] = 0;
  st.flush_all = false;
  for (auto& c : st.await_flush) st.ready.push_back(std::move(c));
  st.await_flush.clear();
  if (st.ready_counted.empty())
    st.ready_counted.swap(st.await_flush_counted);
  else
    st.ready_counted.insert(st.ready_counted.end(), st.await_flush_counted.begin(), st.await_flush_counted.end());
  st.await_flush_counted.clear();
  st.flush_targets.clear();
  return true;
}

void note_flush_target(int rank) {
  if (rank < 0) {
    st.flush_all = true;
  } else if (!st.flush_marked[rank]) {
    st.flush_marked[rank] = 1;
    st.flush_targets.push_back(rank);
  }
}

bool test_requests() {
  if (st.reqs.empty()) return false;
  int outcount = 0;
  auto& idx = st.req_idx;
  idx.resize(st.reqs.size());
  ACCRETE_MPI(MPI_Testsome(int(st.reqs.size()), st.reqs.data(), &outcount, idx.data(), MPI_STATUSES_IGNORE));
  if (outcount <= 0) return false;  // includes MPI_UNDEFINED (all null)
  for (int i = 0; i < outcount; ++i) {
    auto& c = st.req_done[idx[i]];
    if (c) st.ready.push_back(std::move(c));
    c = nullptr;
  }
  std::size_t w = 0;
  for (std::size_t i = 0; i < st.reqs.size(); ++i) {
    if (st.reqs[i] == MPI_REQUEST_NULL) continue;
    st.reqs[w] = st.reqs[i];
    st.req_done[w] = std::move(st.req_done[i]);
    ++w;
  }
  st.reqs.resize(w);
  st.req_done.resize(w);
  return true;
}

void test_sends() {
  std::size_t w = 0;
  for (std::size_t i = 0; i < st.sends.size(); ++i) {
    int done = 0;
    ACCRETE_MPI(MPI_Test(&st.sends[i].req, &done, MPI_STATUS_IGNORE));
    if (done) {
      st.inflight[st.sends[i].rank] -= st.sends[i].buf.size();
      continue;
    }
    if (w != i) st.sends[w] = std::move(st.sends[i]);
    ++w;
  }
  st.sends.resize(w);
}

void dispatch(int source, std::span<const std::byte> msg) {
  std::intptr_t id;
  if (msg.size() < sizeof id)
    throw error("accrete: truncated active message (" + std::to_string(msg.size()) + " bytes) from rank " +
                std::to_string(source));
  std::memcpy(&id, msg.data(), sizeof id);
  auto it = am_registry().find(id);
  if (it == am_registry().end())
    throw error("accrete: active message with unknown handler id " + std::to_string(id) + " from rank " +
                std::to_string(source));
  auto h = reinterpret_cast<am_handler>(reinterpret_cast<std::intptr_t>(&am_base_symbol) + id);
  h(source, msg.subspan(sizeof id));
}

bool internal_ok(std::span<const std::byte> msg) {
  std::intptr_t id;
  if (msg.size() < sizeof id) return false;
  std::memcpy(&id, msg.data(), sizeof id);
  auto it = am_registry().find(id);
  return it != am_registry().end() && it->second;
}

// Takes one received message: handlers marked safe for internal progress
// run at once, the others wait in the inbox (in a copy when `msg` is not
// ours to keep).
void deliver(int source, std::span<const std::byte> msg, std::unique_ptr<std::byte[]> owned) {
  if (internal_ok(msg)) {
    dispatch(source, msg);
    return;
  }
  if (!owned) {
    owned = std::make_unique_for_overwrite<std::byte[]>(msg.size());
    std::memcpy(owned.get(), msg.data(), msg.size());
  }
  st.inbox.push_back({source, std::move(owned), msg.size()});
}

// Takes every message waiting in this process's node-local rings. At user
// level every handler runs straight from the ring (no copy); in internal
// progress, or when a handler's own progress re-enters, only internal
// handlers do and the others are copied to the inbox.
bool receive_ring_messages(bool user_level) {
  std::size_t n = 0;
  for (auto& [source, ring] : st.in_rings)
    n += ring.drain([src = source, user_level](std::span<const std::byte> m, bool in_place) {
      if (user_level && in_place)
        dispatch(src, m);
      else
        deliver(src, m, nullptr);
    });
  return n != 0;
}

// Ring size per (sender, receiver) pair on a node: ACCRETE_AM_RING_BYTES,
// rounded up to a power of two; 0 turns the rings off (every message goes
// through MPI). The default holds ~16 8-KiB messages per pair.
std::size_t ring_capacity() {
  // At most 1 GiB: a ring is node-shared memory per (sender, receiver) pair.
  const std::size_t cap = env_bytes("ACCRETE_AM_RING_BYTES", 0, std::size_t{1} << 30).value_or(std::size_t{128} << 10);
  if (cap == 0) return 0;
  std::size_t p = 256;
  while (p < cap) p <<= 1;
  return p;
}

// Collective over the node: every process allocates one ring per node
// process (itself included), clears them, and maps the rings it writes into.
void open_rings() {
  const std::size_t cap = ring_capacity();
  st.out_rings.assign(st.size, shm_ring());
  st.in_rings.clear();
  if (cap == 0) return;
  const int node_n = st.node_n;
  std::vector<int> world_of(node_n);
  ACCRETE_MPI(MPI_Allgather(&st.rank, 1, MPI_INT, world_of.data(), 1, MPI_INT, st.node));
  const std::size_t one = shm_ring::header_bytes + cap;
  void* base = nullptr;
  ACCRETE_MPI(MPI_Win_allocate_shared(MPI_Aint(one * node_n), 1, MPI_INFO_NULL, st.node, &base, &st.ring_win));
  auto mine = static_cast<std::byte*>(base);
  int me = 0;
  MPI_Comm_rank(st.node, &me);
  for (int i = 0; i < node_n; ++i) {
    shm_ring::clear(mine + one * i);
    st.in_rings.emplace_back(world_of[i], shm_ring(mine + one * i, cap));
  }
  ACCRETE_MPI(MPI_Barrier(st.node));  // every ring is clear before anyone writes
  for (int i = 0; i < node_n; ++i) {
    MPI_Aint sz;
    int du;
    void* p = nullptr;
    ACCRETE_MPI(MPI_Win_shared_query(st.ring_win, i, &sz, &du, &p));
    st.out_rings[world_of[i]] = shm_ring(static_cast<std::byte*>(p) + one * me, cap);
  }
}

void open_node_sync() {
  int me = 0;
  MPI_Comm_rank(st.node, &me);
  void* base = nullptr;
  ACCRETE_MPI(MPI_Win_allocate_shared(me == 0 ? 128 : 0, 1, MPI_INFO_NULL, st.node, &base, &st.sync_win));
  if (me == 0) std::memset(base, 0, 128);
  MPI_Aint sz;
  int du;
  void* p = nullptr;
  ACCRETE_MPI(MPI_Win_shared_query(st.sync_win, 0, &sz, &du, &p));
  st.sync_count = static_cast<std::uint64_t*>(p);
  st.sync_gen = st.sync_count + 8;
  ACCRETE_MPI(MPI_Barrier(st.node));
}

void close_node_sync() {
  if (st.sync_win != MPI_WIN_NULL) MPI_Win_free(&st.sync_win);
  st.sync_count = st.sync_gen = nullptr;
}

void close_rings() {
  st.out_rings.clear();
  st.in_rings.clear();
  if (st.ring_win != MPI_WIN_NULL) MPI_Win_free(&st.ring_win);
}

// Receives every message that has arrived. Handlers marked safe for internal
// progress run at once (they only move data); the others wait in the inbox
// for user-level progress.
void receive_messages() {
  for (;;) {
    int flag = 0;
    MPI_Message m;
    MPI_Status s;
    ACCRETE_MPI(MPI_Improbe(MPI_ANY_SOURCE, am_tag, st.am, &flag, &m, &s));
    if (!flag) return;
    int count = 0;
    MPI_Get_count(&s, MPI_BYTE, &count);
    // Uninitialised: MPI overwrites every byte.
    auto buf = std::make_unique_for_overwrite<std::byte[]>(std::size_t(count));
    ACCRETE_MPI(MPI_Mrecv(buf.get(), count, MPI_BYTE, &m, MPI_STATUS_IGNORE));
    std::span<const std::byte> msg(buf.get(), std::size_t(count));
    deliver(s.MPI_SOURCE, msg, std::move(buf));
  }
}

}  // namespace

// ---- lifecycle ----------------------------------------------------------------

void backend_init(const init_options& opts) {
  if (st.up) throw collective_misuse("accrete::init: called twice without finalize");
  int inited = 0, finalized = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  if (finalized) throw not_initialized("accrete::init: MPI has already been finalized");
  if (!inited) {
    int provided;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    st.owns_mpi = true;
  } else {
    st.owns_mpi = false;
  }
  MPI_Comm_dup(MPI_COMM_WORLD, &st.world);
  MPI_Comm_dup(MPI_COMM_WORLD, &st.am);
  MPI_Comm_set_errhandler(st.world, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(st.am, MPI_ERRORS_RETURN);
  MPI_Comm_rank(st.world, &st.rank);
  MPI_Comm_size(st.world, &st.size);

  int node_size = 0;
  if (opts.node_size)
    node_size = *opts.node_size;
  else if (auto e = env_int("ACCRETE_NODE_SIZE", 0, INT32_MAX))
    node_size = int(*e);
  if (node_size < 0) throw error("accrete::init: negative node_size " + std::to_string(node_size));
  MPI_Comm real_node;
  MPI_Comm_split_type(st.world, MPI_COMM_TYPE_SHARED, st.rank, MPI_INFO_NULL, &real_node);
  if (node_size > 0) {
    int lr;
    MPI_Comm_rank(real_node, &lr);
    MPI_Comm_split(real_node, lr / node_size, lr, &st.node);
    MPI_Comm_free(&real_node);
  } else {
    st.node = real_node;
  }
  MPI_Comm_size(st.node, &st.node_n);

  std::size_t seg = std::size_t{256} << 20;
  if (opts.segment_size) {
    seg = *opts.segment_size;
    if (seg < 64 || seg > (std::size_t{1} << 46))
      throw std::invalid_argument("accrete::init: segment_size " + std::to_string(seg) +
                                  " is outside [64, 2^46] bytes");
  }
  else if (auto e = env_bytes("ACCRETE_SEGMENT_SIZE", 64, std::size_t{1} << 46))
    seg = *e;
  st.seg_bytes = round_up(std::max<std::size_t>(seg, 64), 64);
  std::byte* local = nullptr;
  open_windows(st.seg_bytes, &local, &st.node_win, &st.world_win, &st.world_is_node, st.bases);
  open_rings();
  open_node_sync();

  st.inflight.assign(st.size, 0);
  st.flush_marked.assign(st.size, 0);
  st.flush_targets.clear();
  st.flush_all = false;
  st.sent.assign(st.size, 0);
  st.verbose = opts.verbose.value_or(env_int("ACCRETE_VERBOSE", 0, INT32_MAX).value_or(0) != 0);
  st.up = true;
  if (st.verbose && st.rank == 0) {
    char ver[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(ver, &len);
    std::string v(ver, std::min<int>(len, 60));
    std::replace(v.begin(), v.end(), '\n', ' ');
    const int nn = st.node_n;
    std::fprintf(stderr,
                 "accrete: %d processes, node size %d (%s), segment %zu bytes, windows: %s, progress: "
                 "user-driven, MPI: %s\n",
                 st.size, nn, node_size > 0 ? "pretend" : "real", st.seg_bytes,
                 st.world_is_node ? "one shared" : (nn == 1 ? "allocate" : "shared + create"), v.c_str());
  }
}

void backend_finalize() {
  if (!st.up) throw not_initialized("accrete::finalize: the runtime is not initialized");
  // Drain everything we started, then agree that everyone is done.
  unsigned spins = 0;
  while (!quiescent()) {
    user_progress();
    idle_backoff(spins);
  }
  memory_sync();
  MPI_Barrier(st.world);
  close_windows(st.node_win, st.world_win, st.world_is_node);
  st.node_win = st.world_win = MPI_WIN_NULL;
  close_rings();
  close_node_sync();
  MPI_Comm_free(&st.node);
  MPI_Comm_free(&st.am);
  MPI_Comm_free(&st.world);
  st.up = false;
  st.ready.clear();
  st.inbox.clear();
  if (st.owns_mpi) MPI_Finalize();
}

bool runtime_up() noexcept { return st.up; }

void require_initialized(const char* what) {
  if (!st.up) throw not_initialized(std::string("accrete: ") + what + " called while the runtime is not initialized");
}

int world_rank() noexcept { return st.rank; }
int world_size() noexcept { return st.size; }
MPI_Comm world_comm() noexcept { return st.world; }
MPI_Comm node_comm() noexcept { return st.node; }
std::size_t segment_bytes() noexcept { return st.seg_bytes; }
bool is_node_local(int rank) noexcept { return rank >= 0 && rank < st.size && st.bases[rank] != nullptr; }
std::byte* segment_base(int rank) noexcept { return is_node_local(rank) ? st.bases[rank] : nullptr; }

void check_range(const char* what, int rank, std::uint64_t offset, std::size_t bytes) {
  require_initialized(what);
  if (rank < 0 || rank >= st.size)
    throw bad_global_ptr(std::string("accrete: ") + what + ": rank " + std::to_string(rank) + " out of range [0, " +
                         std::to_string(st.size) + ")");
  if (offset > st.seg_bytes || bytes > st.seg_bytes - offset)
    throw bad_global_ptr(std::string("accrete: ") + what + ": " + std::to_string(bytes) + " bytes at offset " +
                         std::to_string(offset) + " of rank " + std::to_string(rank) + " run past its segment of " +
                         std::to_string(st.seg_bytes) + " bytes");
}

MPI_Win segment_window() noexcept { return st.world_win; }
void after_flush(completion done, int rank) {
  note_flush_target(rank);
  st.await_flush.push_back(std::move(done));
}

void memory_sync() noexcept {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (st.up) MPI_Win_sync(st.node_win != MPI_WIN_NULL ? st.node_win : st.world_win);
}

// ---- RMA ----------------------------------------------------------------------

namespace {
void put_chunks(int rank, std::uint64_t offset, const void* src, std::size_t bytes) {
  auto p = static_cast<const std::byte*>(src);
  for (std::size_t off = 0; off < bytes; off += max_chunk) {
    int n = int(std::min(max_chunk, bytes - off));
    ACCRETE_MPI(MPI_Put(p + off, n, MPI_BYTE, rank, MPI_Aint(offset + off), n, MPI_BYTE, st.world_win));
  }
}
void get_chunks(int rank, std::uint64_t offset, void* dst, std::size_t bytes) {
  auto p = static_cast<std::byte*>(dst);
  for (std::size_t off = 0; off < bytes; off += max_chunk) {
    int n = int(std::min(max_chunk, bytes - off));
    ACCRETE_MPI(MPI_Get(p + off, n, MPI_BYTE, rank, MPI_Aint(offset + off), n, MPI_BYTE, st.world_win));
  }
}
}  // namespace

void put_remote(int rank, std::uint64_t offset, const void* src, std::size_t bytes, completion done) {
  put_chunks(rank, offset, src, bytes);
  // MPI_Put is complete at the target only after a flush; puts issued
  // together share one flush at the next poll.
  note_flush_target(rank);
  st.await_flush.push_back(std::move(done));
}

void get_remote(int rank, std::uint64_t offset, void* dst, std::size_t bytes, completion done) {
  get_chunks(rank, offset, dst, bytes);
  // Like puts, gets complete at the next flush: one MPI call for everything
  // outstanding instead of a request per get.
  note_flush_target(rank);
  st.await_flush.push_back(std::move(done));
}

namespace {
void await_counted(int rank, state_base* s) {
  note_flush_target(rank);
  auto& v = st.await_flush_counted;
  if (!v.empty() && v.back().s == s) {
    ++v.back().n;
    return;
  }
  add_ref(s);
  v.push_back({s, 1});
}

// Fulfils the counted completions whose transfers were flushed. Fulfilling
// may run user callbacks that re-enter progress, so the batch is taken out
// of the shared list first.
void run_counted() {
  if (st.ready_counted.empty()) return;
  std::vector<state_t::counted> batch = std::move(st.spare_counted);
  batch.clear();
  batch.swap(st.ready_counted);
  std::exception_ptr err;
  for (auto [s, n] : batch) {
    s->deps -= n;
    if (s->deps == 0) {
      try {
        on_ready(s);
      } catch (...) {
        if (!err) err = std::current_exception();
      }
    }
    release(s);
  }
  batch.clear();
  st.spare_counted = std::move(batch);
  if (err) std::rethrow_exception(err);
}
}  // namespace

void put_remote(int rank, std::uint64_t offset, const void* src, std::size_t bytes, state_base* s) {
  put_chunks(rank, offset, src, bytes);
  await_counted(rank, s);
}

void get_remote(int rank, std::uint64_t offset, void* dst, std::size_t bytes, state_base* s) {
  get_chunks(rank, offset, dst, bytes);
  await_counted(rank, s);
}

void track_request(MPI_Request r, completion done) {
  st.reqs.push_back(r);
  st.req_done.push_back(std::move(done));
}

// ---- progress -----------------------------------------------------------------

namespace {
// Internal progress; `rings`: also take node-local ring messages (user-level
// progress has just drained them itself, running handlers in place).
void poll_impl(bool rings) {
  if (!st.up) return;
  const bool rma_done = flush_rma();
  const bool req_done = test_requests();
  test_sends();
  if (rings) receive_ring_messages(false);
  // Probing for messages costs more than a flush; when this poll already
  // completed operations, the caller most likely waits for one of them. But
  // probe at least every 8th poll, so that a loop of RMA round trips cannot
  // starve a peer that waits for us to take its messages.
  if ((!rma_done && !req_done) || ++st.skipped_probes >= 8) {
    st.skipped_probes = 0;
    receive_messages();
  }
}
}  // namespace

void poll() { poll_impl(true); }

void user_progress() {
  require_initialized("progress()");
  // Handlers that wait (and so make progress) inside handlers nest frames;
  // past this depth the stack would soon overflow without a word.
  struct nesting {
    nesting() {
      if (st.progress_depth >= max_progress_depth)
        throw error("accrete: user-level progress nested " + std::to_string(max_progress_depth) +
                    " deep (RPC bodies or callbacks that wait on work that runs more of them, recursively); "
                    "the limit guards the stack");
      ++st.progress_depth;
    }
    ~nesting() { --st.progress_depth; }
  } depth;
  const bool ran_ring = receive_ring_messages(true);
  poll_impl(false);
  // A wait loop should yield only when progress found nothing to do: a
  // process serving requests must keep serving (measured: 3.4x more RPC
  // round trips per second when busy progress does not yield).
  st.last_active = ran_ring || !st.ready.empty() || !st.inbox.empty() || !st.ready_counted.empty();
  run_counted();
  // Completions and handlers may issue new operations (and re-enter
  // progress through wait()); take work one item at a time so that nesting
  // is safe and nothing is run twice.
  while (!st.ready.empty()) {
    completion c = std::move(st.ready.front());
    st.ready.pop_front();
    c();
  }
  while (!st.inbox.empty()) {
    auto m = std::move(st.inbox.front());
    st.inbox.pop_front();
    dispatch(m.source, std::span<const std::byte>(m.data.get(), m.size));
  }
}

bool world_on_one_node() noexcept { return st.world_is_node; }

void node_barrier() {
  require_initialized("barrier()");
  memory_sync();
  const std::uint64_t g = std::atomic_ref(*st.sync_gen).load(std::memory_order_acquire);
  if (std::atomic_ref(*st.sync_count).fetch_add(1, std::memory_order_acq_rel) == std::uint64_t(st.node_n - 1)) {
    // Last to arrive: reset for the next barrier, then release the others.
    std::atomic_ref(*st.sync_count).store(0, std::memory_order_relaxed);
    std::atomic_ref(*st.sync_gen).store(g + 1, std::memory_order_release);
  } else {
    unsigned spins = 0;
    while (std::atomic_ref(*st.sync_gen).load(std::memory_order_acquire) == g) {
      user_progress();
      idle_backoff(spins);
    }
  }
  memory_sync();
}

void defer(completion c) { st.ready.push_back(std::move(c)); }

bool last_progress_active() noexcept { return st.last_active; }

bool quiescent() noexcept {
  return st.await_flush.empty() && st.await_flush_counted.empty() && st.ready_counted.empty() && st.reqs.empty() &&
         st.ready.empty() && st.sends.empty() && st.inbox.empty();
}

// ---- active messages ----------------------------------------------------------

void am_register(am_handler h, bool internal) { am_registry()[handler_id(h)] = internal; }

namespace {
thread_local std::vector<std::byte> spare_message;
}

std::vector<std::byte> message_buffer() {
  std::vector<std::byte> v = std::move(spare_message);
  spare_message = {};
  v.clear();
  v.reserve(64);
  v.resize(am_header_bytes);
  return v;
}

void am_send_owned(int rank, am_handler h, std::vector<std::byte>&& msg) {
  require_initialized("active message send");
  auto id = handler_id(h);
  std::memcpy(msg.data(), &id, sizeof id);
  if (msg.size() > std::size_t(INT_MAX))
    throw error("accrete: active message of " + std::to_string(msg.size()) + " bytes exceeds INT_MAX");
  // Node-local: through the ring when it has room (messages need not stay
  // in order, so a full ring simply sends this one through MPI).
  if (shm_ring& ring = st.out_rings[rank]; ring && msg.size() <= ring.max_message() && ring.try_push(msg)) {
    ++st.sent[rank];
    if (msg.capacity() > spare_message.capacity()) spare_message = std::move(msg);
    return;
  }
  unsigned spins = 0;
  while (st.inflight[rank] > 0 && st.inflight[rank] + msg.size() > am_inflight_cap) {
    poll();
    if (st.inflight[rank] + msg.size() > am_inflight_cap) idle_backoff(spins);
  }
  st.inflight[rank] += msg.size();
  ++st.sent[rank];
  st.sends.push_back({MPI_REQUEST_NULL, rank, std::move(msg)});
  auto& s = st.sends.back();
  ACCRETE_MPI(MPI_Isend(s.buf.data(), int(s.buf.size()), MPI_BYTE, rank, am_tag, st.am, &s.req));
}

void am_send(int rank, am_handler h, std::span<const std::byte> payload) {
  std::vector<std::byte> msg = message_buffer();
  msg.insert(msg.end(), payload.begin(), payload.end());
  am_send_owned(rank, h, std::move(msg));
}

std::uint64_t am_sent_to(int rank) noexcept { return st.sent[rank]; }

std::size_t am_inflight_bytes() noexcept {
  std::size_t t = 0;
  for (auto& s : st.sends) t += s.buf.size();
  return t;
}

// ---- shared blocks --------------------------------------------------------------

shared_block::shared_block(std::size_t bytes) {
  require_initialized("shared_block");
  bytes_ = bytes;
  std::vector<std::byte*> bases;
  open_windows(std::max<std::size_t>(bytes, 1), &local_, &node_win_, &world_win_, &world_is_node_, bases);
  peers_ = new std::byte*[bases.size()];
  std::copy(bases.begin(), bases.end(), peers_);
}

shared_block::shared_block(shared_block&& o) noexcept { *this = std::move(o); }

shared_block& shared_block::operator=(shared_block&& o) noexcept {
  if (this != &o) {
    release();
    local_ = std::exchange(o.local_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    node_win_ = std::exchange(o.node_win_, MPI_WIN_NULL);
    world_win_ = std::exchange(o.world_win_, MPI_WIN_NULL);
    world_is_node_ = o.world_is_node_;
    peers_ = std::exchange(o.peers_, nullptr);
  }
  return *this;
}

shared_block::~shared_block() { release(); }

void shared_block::release() noexcept {
  if (world_win_ != MPI_WIN_NULL && st.up) close_windows(node_win_, world_win_, world_is_node_);
  world_win_ = node_win_ = MPI_WIN_NULL;
  delete[] peers_;
  peers_ = nullptr;
  local_ = nullptr;
}

void shared_block::read(int rank, std::size_t offset, void* dst, std::size_t bytes) const {
  if (offset > bytes_ && rank == st.rank) throw error("accrete::shared_block::read: offset past the slice");
  if (std::byte* p = peer(rank)) {
    memory_sync();
    std::memcpy(dst, p + offset, bytes);
    return;
  }
  auto d = static_cast<std::byte*>(dst);
  for (std::size_t off = 0; off < bytes; off += max_chunk) {
    int n = int(std::min(max_chunk, bytes - off));
    ACCRETE_MPI(MPI_Get(d + off, n, MPI_BYTE, rank, MPI_Aint(offset + off), n, MPI_BYTE, world_win_));
  }
  ACCRETE_MPI(MPI_Win_flush(rank, world_win_));
}

bool shared_block::try_read(int rank, std::size_t offset, void* dst, std::size_t bytes, double seconds) const {
  if (peer(rank)) {
    read(rank, offset, dst, bytes);
    return true;
  }
  if (bytes > max_chunk) throw error("accrete::shared_block::try_read: " + std::to_string(bytes) + " bytes is too large");
  MPI_Request r;
  ACCRETE_MPI(MPI_Rget(dst, int(bytes), MPI_BYTE, rank, MPI_Aint(offset), int(bytes), MPI_BYTE, world_win_, &r));
  const double until = MPI_Wtime() + seconds;
  for (;;) {
    int done = 0;
    ACCRETE_MPI(MPI_Test(&r, &done, MPI_STATUS_IGNORE));
    if (done) return true;
    if (MPI_Wtime() > until) return false;
    sched_yield();
  }
}

void shared_block::sync() const noexcept {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const MPI_Win w = node_win_ != MPI_WIN_NULL ? node_win_ : world_win_;
  if (st.up && w != MPI_WIN_NULL) MPI_Win_sync(w);
}

std::byte* shared_block::peer(int rank) const noexcept {
  return (rank >= 0 && rank < st.size && peers_) ? peers_[rank] : nullptr;
}

}  // namespace accrete::detail
