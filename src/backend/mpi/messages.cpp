// Active messages: handler registry and dispatch, node-local rings,
// MPI sends with flow control, and the receive side of polling.
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <string>

#include "accrete/detail/env.hpp"
#include "accrete/error.hpp"
#include "accrete/progress.hpp"
#include "backend/mpi/state.hpp"

namespace accrete::detail {

namespace {
// n bytes as MPI's (count, type): MPI_BYTE up to INT_MAX, and above it (an
// RPC carrying a 3 GB vector) one element of a type that many bytes long,
// as MPI's counts are int. The type is freed with this object, once the
// operation has started (MPI lets a started operation finish).
struct byte_count {
  int count;
  MPI_Datatype type = MPI_BYTE;
  explicit byte_count(std::size_t n) : count(int(n)) {
    if (n <= std::size_t(INT_MAX)) return;
    constexpr std::size_t block = std::size_t{1} << 30;
    MPI_Datatype gib;
    ACCRETE_MPI(MPI_Type_contiguous(int(block), MPI_BYTE, &gib));
    const int lens[2] = {int(n / block), int(n % block)};
    const MPI_Aint disps[2] = {0, MPI_Aint(n / block * block)};
    const MPI_Datatype types[2] = {gib, MPI_BYTE};
    ACCRETE_MPI(MPI_Type_create_struct(2, lens, disps, types, &type));
    ACCRETE_MPI(MPI_Type_commit(&type));
    MPI_Type_free(&gib);
    count = 1;
  }
  byte_count(const byte_count&) = delete;
  byte_count& operator=(const byte_count&) = delete;
  ~byte_count() {
    if (type != MPI_BYTE) MPI_Type_free(&type);
  }
};

// ---- buffers of the MPI path ----------------------------------------------------
// A message that goes through MPI needs a buffer of its own at both ends
// for as long as MPI or the inbox holds it. Allocated per message, one above
// glibc's mmap threshold (128 KiB) was mapped and unmapped every time and
// each of its 4 KiB pages faulted when first written: two processes sending
// each other 128 KiB RPCs at once (the rings full, so through MPI) spent
// about half their time so. Completed sends and handled messages therefore
// leave their buffers here for the next sends and receives. Bounded: at most
// 256 buffers and 32 MiB in all; one under 32 KiB is not kept (malloc serves
// those from its free lists) and neither is one over 32 MiB. When a buffer
// does not fit, larger ones held make room for it: a program that sends a
// few huge messages between many large ones (bench_extend_add's variants)
// otherwise fills the pool with the huge ones, and every large message
// after them maps and faults a fresh buffer.
struct message_pool_t {
  static constexpr std::size_t max_buffers = 256;
  static constexpr std::size_t max_bytes = std::size_t{32} << 20;
  static constexpr std::size_t min_capacity = std::size_t{32} << 10;
  std::vector<std::vector<std::byte>> free;
  std::size_t bytes = 0;  // capacity held in `free`
};
message_pool_t message_pool;

// A buffer of at least n bytes (size() >= n), from the pool when it has one.
std::vector<std::byte> receive_buffer(std::size_t n) {
  std::vector<std::byte> b = message_pool_take(n);
  if (b.size() < n) b.resize(n);  // a reused buffer keeps its size: only what it grows is zeroed
  return b;
}
}  // namespace

// The smallest pooled buffer that can hold n bytes, or an empty vector.
std::vector<std::byte> message_pool_take(std::size_t n) {
  auto& f = message_pool.free;
  std::size_t pick = f.size();
  for (std::size_t i = 0; i < f.size(); ++i)
    if (f[i].capacity() >= n && (pick == f.size() || f[i].capacity() < f[pick].capacity())) pick = i;
  if (pick == f.size()) return {};
  std::vector<std::byte> b = std::move(f[pick]);
  f[pick] = std::move(f.back());
  f.pop_back();
  message_pool.bytes -= b.capacity();
  return b;
}

void message_pool_give(std::vector<std::byte>&& buf) noexcept {
  auto& f = message_pool.free;
  const std::size_t cap = buf.capacity();
  if (cap < message_pool_t::min_capacity || cap > message_pool_t::max_bytes) return;
  while (f.size() == message_pool_t::max_buffers || message_pool.bytes + cap > message_pool_t::max_bytes) {
    auto big =
        std::max_element(f.begin(), f.end(), [](const auto& x, const auto& y) { return x.capacity() < y.capacity(); });
    if (big->capacity() <= cap) return;  // the new one is freed
    message_pool.bytes -= big->capacity();
    std::swap(*big, f.back());
    f.pop_back();
  }
  try {
    f.push_back(std::move(buf));
    message_pool.bytes += cap;
  } catch (const std::bad_alloc&) {
    // the buffer is simply freed
  }
}

void message_pool_clear() noexcept {
  message_pool.free = {};
  message_pool.bytes = 0;
}

namespace {
// The registered handlers by id, read on every message's dispatch. An
// open-addressed table of atomics: lookups take no lock and no division
// (std::unordered_map's two 64-bit divisions per lookup were 8.5% of an
// 8-byte bench_dht `lz` insert to self under MPICH), while am_register,
// under the backend lock, may run in one thread (the first assembly engine
// or sparse matrix of a type registers its handlers) as another dispatches
// outside the lock (par_threads_test, under ThreadSanitizer). An entry is
// never removed; id 0 marks a free place (only am_base_symbol has it, and
// it is never registered).
class handler_table {
 public:
  struct place {
    std::atomic<std::intptr_t> id{0};
    std::atomic<bool> internal{false};  // may run in internal progress
  };
  // Under the backend lock.
  void add(std::intptr_t id, bool internal) {
    for (std::size_t i = home(id), n = 0; n < capacity; i = (i + 1) & (capacity - 1), ++n) {
      const std::intptr_t at = places_[i].id.load(std::memory_order_relaxed);
      if (at == id || at == 0) {
        places_[i].internal.store(internal, std::memory_order_relaxed);
        places_[i].id.store(id, std::memory_order_release);  // publishes `internal` with it
        return;
      }
    }
    throw error("accrete: more than " + std::to_string(capacity) + " active-message handlers registered");
  }
  // The place of `id`, or null when it is not registered.
  const place* find(std::intptr_t id) const noexcept {
    if (id == 0) return nullptr;
    for (std::size_t i = home(id), n = 0; n < capacity; i = (i + 1) & (capacity - 1), ++n) {
      const std::intptr_t at = places_[i].id.load(std::memory_order_acquire);
      if (at == 0) return nullptr;
      if (at == id) return &places_[i];
    }
    return nullptr;
  }

 private:
  static constexpr std::size_t capacity = 1024;  // a power of two
  static std::size_t home(std::intptr_t id) noexcept {
    return std::size_t((std::uint64_t(id) * 0x9E3779B97F4A7C15u) >> 54);  // the top 10 bits
  }
  static_assert(capacity == std::size_t{1} << (64 - 54));
  place places_[capacity];
};

// Constant-initialised: ready before any static initialiser registers a
// handler, and no guard to test on each lookup.
constinit handler_table handlers;

// Handlers travel as their distance from this symbol: the same in every
// process of one executable even under address-space randomisation.
void am_base_symbol(int, std::span<const std::byte>) {}

std::intptr_t handler_id(am_handler h) {
  return reinterpret_cast<std::intptr_t>(h) - reinterpret_cast<std::intptr_t>(&am_base_symbol);
}

bool internal_ok(std::span<const std::byte> msg) {
  std::intptr_t id;
  if (msg.size() < sizeof id) return false;
  std::memcpy(&id, msg.data(), sizeof id);
  const handler_table::place* p = handlers.find(id);
  return p && p->internal.load(std::memory_order_relaxed);
}

// Takes one received message: handlers marked safe for internal progress
// run at once, the others wait in the inbox (in a copy when `msg` is not
// ours to keep).
void deliver(int source, std::span<const std::byte> msg, std::vector<std::byte>&& owned) {
  if (internal_ok(msg)) {
    dispatch(source, msg);
    message_pool_give(std::move(owned));
    return;
  }
  if (owned.empty()) {
    owned = receive_buffer(msg.size());
    std::memcpy(owned.data(), msg.data(), msg.size());
  }
  st.inbox.push_back({source, std::move(owned), msg.size()});
}
}  // namespace

void test_sends() {
  std::size_t w = 0;
  for (std::size_t i = 0; i < st.sends.size(); ++i) {
    int done = 0;
    ACCRETE_MPI(MPI_Test(&st.sends[i].req, &done, MPI_STATUS_IGNORE));
    if (done) {
      st.inflight[st.sends[i].rank] -= st.sends[i].buf.size();
      st.inflight_total -= st.sends[i].buf.size();
      message_pool_give(std::move(st.sends[i].buf));
      continue;
    }
    if (w != i) st.sends[w] = std::move(st.sends[i]);
    ++w;
  }
  st.sends.resize(w);
}

std::intptr_t am_handler_id(am_handler h) noexcept { return handler_id(h); }

am_handler am_handler_of(std::intptr_t id, int source) {
  if (!handlers.find(id))
    throw error("accrete: active message with unknown handler id " + std::to_string(id) + " from rank " +
                std::to_string(source));
  return reinterpret_cast<am_handler>(reinterpret_cast<std::intptr_t>(&am_base_symbol) + id);
}

void dispatch(int source, std::span<const std::byte> msg) {
  // Counted before it can be refused: finalize_drain waits until every
  // message sent was handled, and a refused one is as done as it will get
  // (counted after the checks, one refused message hung finalize).
  st.handled.fetch_add(1, std::memory_order_relaxed);
  std::intptr_t id;
  if (msg.size() < sizeof id)
    throw error("accrete: truncated active message (" + std::to_string(msg.size()) + " bytes) from rank " +
                std::to_string(source));
  std::memcpy(&id, msg.data(), sizeof id);
  am_handler h = am_handler_of(id, source);
  h(source, msg.subspan(sizeof id));
}

// Takes every message waiting in this process's node-local ring. At user
// level every handler runs straight from the ring (no copy); in internal
// progress, or when a handler's own progress re-enters, only internal
// handlers do and the others are copied to the inbox.
bool receive_ring_messages(bool user_level) {
  const auto take = [user_level](int src, std::span<const std::byte> m, bool in_place) {
    if (user_level && in_place)
      dispatch(src, m);
    else
      deliver(src, m, {});
  };
  std::size_t n = 0;
  if (st.in_ring) n += st.in_ring.drain(take);
  if (st.in_bulk) n += st.in_bulk.drain(take);
  return n != 0;
}

// A spare message buffer (the largest seen recently), so that sending
// allocates nothing in the steady state. One, not a pool: each recycling
// is on the path of every message. A large buffer it does not keep goes to
// the pool: freed, it gave its pages back to the system (glibc trims the
// heap), and the next large message faulted them in again (`perf record -e
// page-faults` over bench_extend_add --n 40 --reps 30 at P = 2: 34,000
// faults in the copy into the message, 19,000 with the pool taking them).
namespace {
ACCRETE_THREAD_LOCAL std::vector<std::byte> spare_message;

void recycle(std::vector<std::byte>&& m) {
  if (m.capacity() > spare_message.capacity()) std::swap(m, spare_message);
  if (m.capacity() >= message_pool_t::min_capacity) {
    backend_guard g;
    message_pool_give(std::move(m));
  }
}
}  // namespace

// Runs the internal handlers among the messages to self; the others stay
// for user-level progress (run_self_messages). Under the backend lock.
bool run_internal_self_messages() {
  bool ran = false;
  // A handler may send to self again (to the back): look at each message
  // present at the start once.
  for (std::size_t i = 0, n = st.to_self.size(); i < n && st.to_self_internal != 0; ++i) {
    state_t::self_message m = std::move(st.to_self.front());
    st.to_self.pop_front();
    if (!m.internal) {
      st.to_self.push_back(std::move(m));
      continue;
    }
    --st.to_self_internal;
    dispatch(st.rank, m.bytes);
    recycle(std::move(m.bytes));
    ran = true;
  }
  return ran;
}

// User level: runs the messages to self, outside the backend lock, also
// those their handlers send (a request's reply: a round trip to self in one
// progress call, as through the ring), but not forever: a handler that
// always sends to self again leaves the rest to the next call.
void run_self_messages(std::size_t n) {
  for (std::size_t i = 0, budget = n + 64; i < budget; ++i) {
    state_t::self_message m;
    {
      backend_guard g;
      if (st.to_self.empty()) break;
      m = std::move(st.to_self.front());
      st.to_self.pop_front();
      st.to_self_internal -= m.internal;
    }
    dispatch(st.rank, m.bytes);
    recycle(std::move(m.bytes));
  }
}

namespace {
// Ring sizes per receiving process: ACCRETE_AM_RING_BYTES (messages of up
// to small_message_max bytes) and ACCRETE_AM_BULK_RING_BYTES (larger ones), each
// rounded up to a power of two; 0 turns the bulk ring off (its messages go
// through MPI), and ACCRETE_AM_RING_BYTES=0 both. Every process of the node
// writes into them. The default small ring holds ~64 8-KiB messages.
//
// Why two: a ring takes messages of up to a quarter of its size, and one
// large enough for 128 KiB RPCs slowed small ones (bench_dht at P = 2: up to
// 11% with a single 2 MiB ring, small messages cycling through more memory
// than the caches hold), while with 512 KiB those RPCs went through MPI
// (bench_extend_add's accrete_rpc 0.77-0.84 of plain MPI against 0.85-0.99
// with 2 MiB; bench/extend_add/README.md).
//
// Why the bulk ring holds 8 MiB: a burst of large RPCs that meets a full ring
// goes through MPI, which costs more per message than the ring. At 2 MiB, 16
// of extend-add's 128 KiB RPCs fit and n = 40 sends 80 to one target at once:
// accrete_rpc 0.97-0.99 of plain MPI, 1.01-1.02 with 8 MiB (five interleaved
// rounds per MPI, P = 2, bench/extend_add/results/bulk_ring_size/). Small
// messages never enter it, so its size does not push them out of the caches.
constexpr std::size_t small_message_max = std::size_t{16} << 10;
std::size_t ring_bytes(const char* var, std::size_t fallback) {
  // At most 1 GiB: a ring is node-shared memory per process.
  const std::size_t cap = env_bytes(var, 0, std::size_t{1} << 30).value_or(fallback);
  if (cap == 0) return 0;
  std::size_t p = 256;
  while (p < cap) p <<= 1;
  return p;
}
}  // namespace

// Collective over the node: every process allocates its rings, clears
// them, and maps the rings of every node process (itself included) to
// write into.
void open_rings() {
  const std::size_t cap = ring_bytes("ACCRETE_AM_RING_BYTES", std::size_t{512} << 10);
  const std::size_t bulk = cap ? ring_bytes("ACCRETE_AM_BULK_RING_BYTES", std::size_t{8} << 20) : 0;
  st.out_rings.clear();
  st.out_bulk.clear();
  st.ring_of.assign(st.size, -1);
  st.in_ring = shm_ring();
  st.in_bulk = shm_ring();
  if (cap == 0) return;
  const int node_n = st.node_n;
  std::vector<int> world_of(node_n);
  ACCRETE_MPI(MPI_Allgather(&st.rank, 1, MPI_INT, world_of.data(), 1, MPI_INT, st.node));
  // [small ring][bulk ring], the bulk ring absent when off
  const std::size_t small_bytes = shm_ring::header_bytes + cap;
  const std::size_t bulk_bytes = bulk ? shm_ring::header_bytes + bulk : 0;
  void* base = nullptr;
  allocate_shared(small_bytes + bulk_bytes, MPI_INFO_NULL, st.node, &base, &st.ring_win);
  auto* mine = static_cast<std::byte*>(base);
  shm_ring::clear(mine, cap);
  st.in_ring = shm_ring(mine, cap);
  if (bulk) {
    shm_ring::clear(mine + small_bytes, bulk);
    st.in_bulk = shm_ring(mine + small_bytes, bulk);
  }
  ACCRETE_MPI(MPI_Barrier(st.node));  // every ring is clear before anyone writes
  st.out_rings.reserve(std::size_t(node_n));
  st.out_bulk.reserve(std::size_t(node_n));
  const std::vector<void*> slices = shared_bases(st.ring_win, base);
  for (int i = 0; i < node_n; ++i) {
    auto* theirs = static_cast<std::byte*>(slices[std::size_t(i)]);
    st.ring_of[world_of[i]] = std::int32_t(st.out_rings.size());
    st.out_rings.emplace_back(theirs, cap);
    st.out_bulk.push_back(bulk ? shm_ring(theirs + small_bytes, bulk) : shm_ring());
  }
}

void close_rings() {
  st.out_rings.clear();
  st.out_bulk.clear();
  st.ring_of.clear();
  st.in_ring = shm_ring();
  st.in_bulk = shm_ring();
  if (st.ring_win != MPI_WIN_NULL) MPI_Win_free(&st.ring_win);
}

#ifdef ACCRETE_SMPI
// Delivers the received messages whose data is in, in the order they were
// matched (per source that is the order they were sent).
bool deliver_arrivals() {
  bool got = false;
  while (!st.arrivals.empty()) {
    int done = 0;
    ACCRETE_MPI(MPI_Test(&st.arrivals.front().req, &done, MPI_STATUS_IGNORE));
    if (!done) break;
    state_t::arriving a = std::move(st.arrivals.front());
    st.arrivals.pop_front();
    std::span<const std::byte> msg(a.data.data(), std::size_t(a.count));
    deliver(a.source, msg, std::move(a.data));
    got = true;
  }
  return got;
}
#endif

// Receives every message that has arrived. Handlers marked safe for internal
// progress run at once (they only move data); the others wait in the inbox
// for user-level progress.
bool receive_messages() {
  bool got = false;
#ifdef ACCRETE_SMPI
  got = deliver_arrivals();
#endif
  for (;; got = true) {
    int flag = 0;
    MPI_Status s;
#ifdef ACCRETE_SMPI
    // SimGrid's SMPI has no matched probe. Probe then receive from the
    // probed source is equivalent here: one thread at a time receives on
    // this communicator, and messages from one source keep their order.
    ACCRETE_MPI(MPI_Iprobe(MPI_ANY_SOURCE, am_tag, st.am, &flag, &s));
#else
    MPI_Message m;
    ACCRETE_MPI(MPI_Improbe(MPI_ANY_SOURCE, am_tag, st.am, &flag, &m, &s));
#endif
    if (!flag) break;
#ifdef ACCRETE_SMPI
    int count = 0;
    MPI_Get_count(&s, MPI_BYTE, &count);
#else
    MPI_Count count = 0;
    ACCRETE_MPI(MPI_Get_elements_x(&s, MPI_BYTE, &count));
#endif
    std::vector<std::byte> buf = receive_buffer(std::size_t(count));
#ifdef ACCRETE_SMPI
    // SMPI's probe finds a message as soon as it is sent, before its data
    // has crossed the simulated network, and a blocking receive then stops
    // this process for the whole transfer (on a real machine a probe sees
    // an eager message once it is here). Measured at P = 32 on two
    // simulated nodes: a third of each process's update loop was spent so.
    // So the receive runs on while we compute; deliver_arrivals() keeps
    // the order. (A real MPI keeps the blocking receive: MPI_Imrecv there
    // made Hessian `paper` 15% slower at P = 4 with node size 1 under Open
    // MPI, large messages over shared memory moving only inside MPI calls.)
    state_t::arriving a{s.MPI_SOURCE, count, std::move(buf), MPI_REQUEST_NULL};
    ACCRETE_MPI(MPI_Irecv(a.data.data(), count, MPI_BYTE, s.MPI_SOURCE, am_tag, st.am, &a.req));
    st.arrivals.push_back(std::move(a));
#else
    {
      const byte_count bc{static_cast<std::size_t>(count)};
      ACCRETE_MPI(MPI_Mrecv(buf.data(), bc.count, bc.type, &m, MPI_STATUS_IGNORE));
    }
    std::span<const std::byte> msg(buf.data(), std::size_t(count));
    deliver(s.MPI_SOURCE, msg, std::move(buf));
#endif
  }
#ifdef ACCRETE_SMPI
  got |= deliver_arrivals();
#endif
  return got;
}

// ---- active messages ----------------------------------------------------------

void am_register(am_handler h, bool internal) {
  backend_guard g;
  handlers.add(handler_id(h), internal);
}

std::vector<std::byte> message_buffer(std::size_t payload_bytes) {
  const std::size_t want = am_header_bytes + payload_bytes;
  std::vector<std::byte> v;
  if (spare_message.capacity() >= want) {
    v = std::move(spare_message);
    spare_message = {};
  } else {
    // The spare is too small or gone (the last one went to MPI or to
    // self): reuse a kept buffer that holds the message, else grow the
    // spare once, to the full size.
    {
      backend_guard g;
      v = message_pool_take(want);
    }
    if (v.capacity() == 0) {
      v = std::move(spare_message);
      spare_message = {};
    }
  }
  v.clear();
  v.reserve(std::max<std::size_t>(64, want));
  v.resize(am_header_bytes);
  return v;
}

namespace {
constexpr std::size_t self_queue_bytes = 2048;

// Sends msg through rank's node ring for its size if rank has one and it
// has room.
bool ring_push(int rank, std::vector<std::byte>& msg) {
  const int slot = st.ring_of[rank];
  if (slot < 0) return false;
  sim_charge();
  shm_ring& ring = (msg.size() <= small_message_max ? st.out_rings : st.out_bulk)[std::size_t(slot)];
  if (!ring || msg.size() > ring.max_message() || !ring.try_push(st.rank, msg)) return false;
  ++st.sent[rank];
  recycle(std::move(msg));
  return true;
}
}  // namespace

void am_send_owned(int rank, am_handler h, std::vector<std::byte>&& msg) {
  require_initialized("active message send");
  backend_guard g;
  auto id = handler_id(h);
  std::memcpy(msg.data(), &id, sizeof id);
  if (rank == st.rank) {
    // To self, a large message runs from its own buffer (the copy into the
    // ring was most of the cost of an 8 KiB RPC reply to self), and so does
    // one the ring has no room for; a small one goes through the ring, which
    // runs it cheaper than this queue (bench_dht, P = 1: 8-byte round trips
    // ~8% faster through the ring, 8 KiB ones ~15% faster without it, 512 B
    // about even).
    if (msg.size() < self_queue_bytes && ring_push(rank, msg)) return;
    ++st.sent[rank];
    const bool internal = internal_ok(msg);
    st.to_self_internal += internal;
    st.to_self.push_back({std::move(msg), internal});
    return;
  }
#ifdef ACCRETE_SMPI
  if (msg.size() > std::size_t(INT_MAX))
    throw error("accrete: active message of " + std::to_string(msg.size()) + " bytes exceeds INT_MAX under SMPI");
#endif
  // Node-local: through the ring when it has room (messages need not stay
  // in order, so a full ring simply sends this one through MPI).
  if (ring_push(rank, msg)) return;
  unsigned spins = 0;
  while (st.inflight[rank] > 0 && st.inflight[rank] + msg.size() > am_inflight_cap) {
    poll();
    if (st.inflight[rank] + msg.size() > am_inflight_cap) idle_backoff(spins);
  }
  st.inflight[rank] += msg.size();
  st.inflight_total += msg.size();
  ++st.sent[rank];
  st.sends.push_back({MPI_REQUEST_NULL, rank, std::move(msg)});
  auto& s = st.sends.back();
  const byte_count bc(s.buf.size());
  ACCRETE_MPI(MPI_Isend(s.buf.data(), bc.count, bc.type, rank, am_tag, st.am, &s.req));
}

void am_send(int rank, am_handler h, std::span<const std::byte> payload) {
  std::vector<std::byte> msg = message_buffer(payload.size());
  msg.insert(msg.end(), payload.begin(), payload.end());
  am_send_owned(rank, h, std::move(msg));
}

std::uint64_t am_sent_to(int rank) noexcept {
  backend_guard g;
  return st.sent[rank];
}

std::size_t am_inflight_bytes() noexcept {
  backend_guard g;
  return st.inflight_total;
}

}  // namespace accrete::detail
