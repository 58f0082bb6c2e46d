// Progress and request queues: one-sided transfers waiting for a flush,
// tracked MPI requests, counted completions, and the two levels of progress
// (internal poll and user-level progress; see src/README.md).
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <string>
#include <thread>

#include "accrete/detail/future_state.hpp"
#include "accrete/error.hpp"
#include "accrete/progress.hpp"
#include "backend/mpi/state.hpp"

namespace accrete::detail {

namespace {
// Counts down the states of a batch of flushed counted completions (in
// their owner's thread). Every state is counted; the first exception a
// callback threw is returned.
std::exception_ptr count_down(const std::vector<state_t::counted>& batch) {
  std::exception_ptr err;
  for (const auto& c : batch) {
    c.s->deps -= c.n;
    if (c.s->deps == 0) {
      try {
        on_ready(c.s);
      } catch (...) {
        if (!err) err = std::current_exception();
      }
    }
    release(c.s);
  }
  return err;
}

// par: hands the flushed counted completions to their owners' queues, one
// batch per owner (no allocation per operation).
void post_counted_to_owners() {
  auto& all = st.await_flush_counted;
  for (const auto& q : st.counted_owners) {
    std::vector<state_t::counted> mine;
    for (const auto& c : all)
      if (c.owner == q.get()) mine.push_back(c);
    if (!mine.empty())
      post(*q, [mine = std::move(mine)] {
        if (std::exception_ptr e = count_down(mine)) std::rethrow_exception(e);
      });
  }
  all.clear();
  st.counted_owners.clear();
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
  if (st.par) {
    post_counted_to_owners();
  } else if (st.ready_counted.empty())
    st.ready_counted.swap(st.await_flush_counted);
  else
    st.ready_counted.insert(st.ready_counted.end(), st.await_flush_counted.begin(), st.await_flush_counted.end());
  st.await_flush_counted.clear();
  st.flush_targets.clear();
  st.atomic_operands.clear();
  return true;
}
}  // namespace

std::recursive_mutex& backend_mutex() noexcept {
  static std::recursive_mutex m;
  return m;
}

bool progress_thread_running() noexcept { return st.thread_on; }
bool backend_locking() noexcept { return st.par || st.thread_on; }
bool par_mode() noexcept { return st.par; }

// ---- queues held by threads (the PAR mode; backend.hpp) --------------------------

namespace {
// This thread's marker (its address) and its stack of held queues, the
// default queue at the bottom once made.
thread_local char thread_marker;
thread_local std::vector<std::shared_ptr<lpc_queue>> held;
thread_local int progress_depth = 0;  // nesting of user_progress() in this thread
std::shared_ptr<lpc_queue> the_master_queue = std::make_shared<lpc_queue>();

// Runs what the queues this thread holds have collected. Returns whether
// there was anything.
bool run_held() {
  bool any = false;
  std::exception_ptr err;
  for (std::size_t i = 0; i < held.size(); ++i) {
    // Looked at before it is copied: a copy's reference count is two
    // atomic read-modify-writes, which wait for the store buffer to drain
    // (most of user_progress's own time in bench_dht's 8-byte `lz` inserts
    // to self under MPICH, where every progress call found nothing held).
    if (held[i]->count.load(std::memory_order_acquire) == 0) continue;
    // Copied: a callback may push or pop queues.
    std::shared_ptr<lpc_queue> q = held[i];
    std::vector<completion> batch;
    {
      std::lock_guard<std::mutex> l(q->m);
      batch.swap(q->items);
      q->count.store(0, std::memory_order_relaxed);
    }
    any = true;
    for (auto& c : batch) {
      try {
        c();
      } catch (...) {
        if (!err) err = std::current_exception();
      }
    }
  }
  if (err) std::rethrow_exception(err);
  return any;
}
}  // namespace

const std::shared_ptr<lpc_queue>& default_queue() {
  if (held.empty()) {
    auto q = std::make_shared<lpc_queue>();
    q->holder.store(&thread_marker);
    held.push_back(std::move(q));
  }
  return held.front();
}

const std::shared_ptr<lpc_queue>& master_queue() { return the_master_queue; }

const std::shared_ptr<lpc_queue>& current_queue() {
  default_queue();
  return held.back();
}

bool holds_queue(const lpc_queue& q) noexcept { return q.holder.load(std::memory_order_acquire) == &thread_marker; }

void require_master(const char* what) {
  if (st.par && !holds_queue(*master_queue()))
    throw error(std::string(what) +
                ": called from a thread that does not hold the master persona; in the par thread mode, "
                "collectives and team and dist_object construction are made by the master persona's holder "
                "(docs/semantics.md, \"Threads\")");
}

void push_queue(const std::shared_ptr<lpc_queue>& q) {
  default_queue();
  const void* none = nullptr;
  if (!holds_queue(*q) && !q->holder.compare_exchange_strong(none, &thread_marker))
    throw error(
        "accrete: this persona (queue) is held by another thread; a persona is held by one thread at a "
        "time (release it there first, e.g. end its persona_scope or liberate_master_persona)");
  held.push_back(q);
}

void pop_queue(const std::shared_ptr<lpc_queue>& q) {
  if (held.size() < 2 || held.back() != q)
    throw error(
        "accrete: releasing a persona (queue) that is not on top of this thread's stack (persona_scopes "
        "end in the reverse order of their start, in the thread that started them)");
  held.pop_back();
  if (std::find(held.begin(), held.end(), q) == held.end()) q->holder.store(nullptr, std::memory_order_release);
}

void post(lpc_queue& q, completion c) {
  std::lock_guard<std::mutex> l(q.m);
  q.items.push_back(std::move(c));
  q.count.store(q.items.size(), std::memory_order_release);
}

completion to_caller(completion c) {
  if (!st.par) return c;
  return [q = current_queue(), c = std::move(c)]() mutable { post(*q, std::move(c)); };
}

void threads_init(bool par) {
  st.par = par;
  the_master_queue = std::make_shared<lpc_queue>();
  push_queue(the_master_queue);  // the initialising thread holds the master queue
}

void threads_finalize() {
  // The finalizing thread must hold the master queue (UPC++: the master
  // persona); it lets go of it and of any queue it pushed since.
  while (held.size() > 1) {
    std::shared_ptr<lpc_queue> q = held.back();
    held.pop_back();
    q->holder.store(nullptr);
  }
  the_master_queue = std::make_shared<lpc_queue>();
  st.par = false;
}

void note_flush_target(int rank) {
  backend_guard g;
  if (rank < 0) {
    st.flush_all = true;
  } else if (!st.flush_marked[rank]) {
    st.flush_marked[rank] = 1;
    st.flush_targets.push_back(rank);
  }
}

namespace {
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
    if (auto& t = st.req_ticket[idx[i]]) {
      t.reset();
      --st.watched;
    }
  }
  std::size_t w = 0;
  for (std::size_t i = 0; i < st.reqs.size(); ++i) {
    if (st.reqs[i] == MPI_REQUEST_NULL) continue;
    st.reqs[w] = st.reqs[i];
    st.req_done[w] = std::move(st.req_done[i]);
    st.req_ticket[w] = std::move(st.req_ticket[i]);
    ++w;
  }
  st.reqs.resize(w);
  st.req_done.resize(w);
  st.req_ticket.resize(w);
  return true;
}
}  // namespace

MPI_Win segment_window() noexcept { return st.world_win; }
void after_flush(completion done, int rank) {
  backend_guard g;
  note_flush_target(rank);
  st.await_flush.push_back(to_caller(std::move(done)));
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
  backend_guard g;
  put_chunks(rank, offset, src, bytes);
  // MPI_Put is complete at the target only after a flush; puts issued
  // together share one flush at the next poll.
  note_flush_target(rank);
  st.await_flush.push_back(to_caller(std::move(done)));
}

void get_remote(int rank, std::uint64_t offset, void* dst, std::size_t bytes, completion done) {
  backend_guard g;
  get_chunks(rank, offset, dst, bytes);
  // Like puts, gets complete at the next flush: one MPI call for everything
  // outstanding instead of a request per get.
  note_flush_target(rank);
  st.await_flush.push_back(to_caller(std::move(done)));
}

void await_flush_then(int rank, completion done) {
  backend_guard g;
  note_flush_target(rank);
  st.await_flush.push_back(to_caller(std::move(done)));
}

namespace {
void await_counted(int rank, state_base* s) {
  note_flush_target(rank);
  // par: the state belongs to the issuing thread and is counted down there.
  lpc_queue* owner = nullptr;
  if (st.par) {
    const auto& q = current_queue();
    owner = q.get();
    if (std::find(st.counted_owners.begin(), st.counted_owners.end(), q) == st.counted_owners.end())
      st.counted_owners.push_back(q);
  }
  auto& v = st.await_flush_counted;
  if (!v.empty() && v.back().s == s && v.back().owner == owner) {
    ++v.back().n;
    return;
  }
  add_ref(s);
  v.push_back({s, 1, owner});
}

// Fulfils the counted completions whose transfers were flushed. Fulfilling
// may run user callbacks that re-enter progress, so the batch is taken out
// of the shared list first.
void run_counted() {
  std::vector<state_t::counted> batch;
  {
    backend_guard g;
    if (st.ready_counted.empty()) return;
    batch = std::move(st.spare_counted);
    batch.clear();
    batch.swap(st.ready_counted);
  }
  const std::exception_ptr err = count_down(batch);
  batch.clear();
  {
    backend_guard g;
    st.spare_counted = std::move(batch);
  }
  if (err) std::rethrow_exception(err);
}
}  // namespace

void await_flush_counted(int rank, state_base* s) {
  backend_guard g;
  await_counted(rank, s);
}

void put_remote(int rank, std::uint64_t offset, const void* src, std::size_t bytes, state_base* s) {
  backend_guard g;
  put_chunks(rank, offset, src, bytes);
  await_counted(rank, s);
}

void get_remote(int rank, std::uint64_t offset, void* dst, std::size_t bytes, state_base* s) {
  backend_guard g;
  get_chunks(rank, offset, dst, bytes);
  await_counted(rank, s);
}

void track_request(MPI_Request r, completion done) {
  backend_guard g;
  st.reqs.push_back(r);
  st.req_done.push_back(to_caller(std::move(done)));
  st.req_ticket.emplace_back();
}

void track_collective(MPI_Request r, completion done, const collective_ticket& t) {
  backend_guard g;
  track_request(r, std::move(done));
  if (collective_timeout() > 0) {
    st.req_ticket.back() = std::make_shared<const collective_ticket>(t);
    ++st.watched;
  }
}

// ---- progress -----------------------------------------------------------------

namespace {
// Internal progress; `rings`: also take node-local ring messages (user-level
// progress has just drained them itself, running handlers in place).
// Returns whether it moved anything on (the progress thread's back-off).
bool poll_impl(bool rings) {
  if (!st.up) return false;
  const bool rma_done = flush_rma();
#ifdef ACCRETE_SMPI
  const bool req_done = sim_collectives_progress() | test_requests();
#else
  const bool req_done = test_requests();
#endif
  const std::size_t sends_before = st.sends.size();
  test_sends();
  bool got = st.sends.size() != sends_before;
  if (rings) got |= receive_ring_messages(false);
  if (st.to_self_internal != 0) got |= run_internal_self_messages();
  // Probing for messages costs more than a flush; when this poll already
  // completed operations, the caller most likely waits for one of them. But
  // probe at least every 8th poll, so that a loop of RMA round trips cannot
  // starve a peer that waits for us to take its messages.
  if ((!rma_done && !req_done) || ++st.skipped_probes >= 8) {
    st.skipped_probes = 0;
    got |= receive_messages();
  }
  if (st.watched) watch_poll();
  return rma_done || req_done || got;
}

// What the progress thread threw, on the driving thread.
void rethrow_thread_error() {
  if (!st.thread_error) return;
  std::exception_ptr e = std::exchange(st.thread_error, nullptr);
  std::rethrow_exception(e);
}
}  // namespace

void poll() {
  backend_guard g;
  rethrow_thread_error();
  poll_impl(true);
}

void poll_sends() {
  backend_guard g;
  rethrow_thread_error();
  poll_impl(false);
}

bool in_user_progress() noexcept { return progress_depth > 0; }

void user_progress() {
  require_initialized("progress()");
  // Handlers that wait (and so make progress) inside handlers nest frames;
  // past this depth the stack would soon overflow without a word.
  struct nesting {
    nesting() {
      if (progress_depth >= max_progress_depth)
        throw error("accrete: user-level progress nested " + std::to_string(max_progress_depth) +
                    " deep (RPC bodies or callbacks that wait on work that runs more of them, recursively); "
                    "the limit guards the stack");
      ++progress_depth;
    }
    ~nesting() { --progress_depth; }
  } depth;
  // RPC bodies run in the thread that holds the master queue. In the SEQ
  // mode no lock guards the backend, so that thread alone may make progress
  // (UPC++'s seq rule); another one would race it inside MPI.
  const bool master = holds_queue(*the_master_queue);
  if (!st.par && !master)
    throw error(
        "accrete::progress: called from a thread that does not hold the master persona, in the seq thread "
        "mode, where only that thread may make progress (wait() included); for several communicating "
        "threads use the par mode: compile with UPCXX_THREADMODE=1 or set ACCRETE_THREAD_MODE=par "
        "(docs/semantics.md, \"Threads\")");
  std::size_t self_waiting = 0;
  {
    backend_guard g;
    rethrow_thread_error();
    // While the backend lock is taken (progress thread, PAR mode), user
    // handlers must not run under it (other threads would stall behind
    // user code), so ring messages take the copying path like internal
    // polls do.
    const bool ran_ring = master && receive_ring_messages(!backend_locking());
    poll_impl(!master);
    // A wait loop should yield only when progress found nothing to do: a
    // process serving requests must keep serving (measured: 3.4x more RPC
    // round trips per second when busy progress does not yield).
    if (master) self_waiting = st.to_self.size();
    st.last_active =
        ran_ring || !st.ready.empty() || !st.inbox.empty() || !st.ready_counted.empty() || self_waiting != 0;
  }
  run_counted();
  // Completions and handlers may issue new operations (and re-enter
  // progress through wait()); take work one item at a time so that nesting
  // is safe and nothing is run twice. User code runs outside the lock.
  for (;;) {
    completion c;
    {
      backend_guard g;
      if (st.ready.empty()) break;
      c = std::move(st.ready.front());
      st.ready.pop_front();
    }
    c();
  }
  run_held();
  for (;;) {
    if (!master) break;
    state_t::inbound m;
    {
      backend_guard g;
      if (st.inbox.empty()) break;
      m = std::move(st.inbox.front());
      st.inbox.pop_front();
    }
    dispatch(m.source, std::span<const std::byte>(m.data.data(), m.size));
    backend_guard g;
    message_pool_give(std::move(m.data));
  }
  if (self_waiting != 0) run_self_messages(self_waiting);
}

#ifdef ACCRETE_SMPI
void sim_charge() noexcept {
  if (!st.up) return;
  smpi_bench_end();
  smpi_bench_begin();
}

double sim_clock() noexcept { return MPI_Wtime(); }
#endif

void os_yield() noexcept {
#ifdef ACCRETE_SMPI
  smpi_usleep(1);
#else
  sched_yield();
#endif
}

void defer(completion c) {
  backend_guard g;
  st.ready.push_back(to_caller(std::move(c)));
}

bool last_progress_active() noexcept {
  backend_guard g;
  return st.last_active;
}

bool outgoing_pending() noexcept {
  backend_guard g;
  return !st.await_flush.empty() || !st.await_flush_counted.empty() || !st.sends.empty();
}

bool quiescent() noexcept {
  backend_guard g;
#ifdef ACCRETE_SMPI
  if (!st.arrivals.empty()) return false;
#endif
  return st.await_flush.empty() && st.await_flush_counted.empty() && st.ready_counted.empty() && st.reqs.empty() &&
         st.ready.empty() && st.sends.empty() && st.inbox.empty() && st.to_self.empty();
}

}  // namespace accrete::detail

// ---- progress thread ------------------------------------------------------------

namespace accrete::detail {

namespace {
// The thread's loop: internal progress only (flushes, requests, sends,
// receiving messages; internal handlers, i.e. convergent_matrix packets,
// are applied, user handlers are queued for the driving thread). It takes
// the lock only when free: a driving thread inside accrete makes the same
// progress itself. Idle passes back off from 10 us to 200 us, so an idle
// thread costs well under a percent of a core.
void progress_loop() {
  using namespace std::chrono_literals;
  auto pause = 10us;
  while (!st.thread_stop.load(std::memory_order_acquire)) {
    bool active = false;
    {
      std::unique_lock<std::recursive_mutex> g(backend_mutex(), std::try_to_lock);
      if (g.owns_lock() && !st.thread_error) {
        ++st.thread_passes;
        try {
          active = poll_impl(true);
        } catch (...) {
          st.thread_error = std::current_exception();
        }
        if (active) ++st.thread_active_passes;
      }
    }
    if (active) {
      pause = 10us;
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(pause);
      pause = std::min<std::chrono::microseconds>(pause * 2, 200us);
    }
  }
}
}  // namespace

void start_progress_thread() {
  st.thread_stop.store(false);
  st.thread_passes = st.thread_active_passes = 0;
  st.thread_on = true;
  st.thread = std::thread(progress_loop);
}

void stop_progress_thread() {
  if (!st.thread_on) return;
  st.thread_stop.store(true, std::memory_order_release);
  st.thread.join();
  st.thread_on = false;
}

progress_thread_stats progress_thread_counts() noexcept {
  backend_guard g;
  return {st.thread_on, st.thread_passes, st.thread_active_passes};
}

}  // namespace accrete::detail
