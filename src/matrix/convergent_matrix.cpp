// convergent_matrix: binning, packets, direct node-local application under
// stripe locks, coalesced messages to remote owners, rounds and the commit
// protocol.
//
// Message format (packets strategy), after the active-message header:
//   u32 matrix id | u32 round | packet*   (packets: detail/packet_format.hpp)
// Commit counts messages: each process learns how many messages were sent
// to it this round (MPI_Ireduce_scatter_block) and progresses until that
// many have been applied. A message of the round after the receiver's open
// one (a fast sender, or an update issued during a commit) is held, not
// applied, until the receiver opens that round, so the committed values
// stay put while their owner reads them (docs/semantics.md, "Rounds").
// Node-local origins store directly only into parts open for their round
// (a word in each part's shared header says which round is open); for a
// part still closed they send a message like a remote origin would.
//
// Locking: one lock (backend_mutex) guards the outboxes, counters and
// stats and serialises backend calls. It is never held while user-level
// progress runs callbacks, because those may call update() (re-entrant
// progress); commit() takes it only around its own steps.
#include "accrete/matrix/convergent_matrix.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <numeric>
#include <thread>
#include <unordered_map>

#include <sched.h>

#include "accrete/collectives.hpp"
#include "accrete/detail/env.hpp"
#include "accrete/detail/packet_format.hpp"
#include "accrete/error.hpp"
#include "accrete/matrix/mpiio.hpp"
#include "accrete/matrix/scalapack.hpp"
#include "accrete/progress.hpp"

namespace accrete {
namespace detail {
namespace {

constexpr std::int64_t nlocks = 64;
constexpr std::uint64_t alive_magic = 0xacc7e7eULL;
// One message carries at most this many bytes (MPI counts are int).
constexpr std::size_t max_message_bytes = std::size_t{1} << 30;

std::unordered_map<std::uint32_t, cm_core*>& registry() {
  static std::unordered_map<std::uint32_t, cm_core*> r;
  return r;
}
std::uint32_t next_id = 0;

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct timer {
  double& acc;
  double t0 = now();
  ~timer() { acc += now() - t0; }
};

std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
std::uint64_t splitmix(std::uint64_t& s) { return mix(s += 0x9e3779b97f4a7c15ULL); }

void spin_pause(unsigned& spins) {
  if (++spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  } else {
    sched_yield();
  }
}

// Everything the constructor must check before its first collective step.
// Runs on every process; agree_on_arguments() then makes all of them throw
// if any one failed, so none is left waiting in a collective.
struct checked_sizes {
  std::int64_t lrows = 0, lcols = 0, lld = 0;
  std::size_t bytes = 0;  // storage bytes of this process
};

checked_sizes check_arguments(const block_cyclic& L, const process_grid& grid, std::size_t esize,
                              const convergent_matrix_options& opt, std::size_t header) {
  const std::string who = "accrete::convergent_matrix: ";
  if (grid.size() != world_size())
    throw collective_misuse(who + "the process grid has " + std::to_string(grid.size()) +
                            " processes but the world team has " + std::to_string(world_size()) +
                            "; the grid must span every process");
  checked_sizes c;
  c.lrows = L.local_rows(grid.my_row());
  c.lcols = L.local_cols(grid.my_col());
  if (opt.lld < 0 || (opt.lld != 0 && opt.lld < std::max<std::int64_t>(1, c.lrows)))
    throw std::invalid_argument(who + "lld = " + std::to_string(opt.lld) + " is below the local row count " +
                                std::to_string(c.lrows));
  c.lld = opt.lld ? opt.lld : std::max<std::int64_t>(1, c.lrows);
  // ScaLAPACK descriptors and the packets' local indices are 32-bit.
  if (c.lld > INT32_MAX || c.lcols > INT32_MAX)
    throw std::invalid_argument(who + "local dimensions " + std::to_string(c.lld) + " x " + std::to_string(c.lcols) +
                                " exceed 2^31-1");
  std::size_t elems = 0, bytes = 0;
  if (__builtin_mul_overflow(std::size_t(c.lld), std::size_t(c.lcols), &elems) ||
      __builtin_mul_overflow(elems, esize, &bytes) || __builtin_add_overflow(bytes, header, &c.bytes) ||
      c.bytes > (std::size_t{1} << 48))
    throw std::invalid_argument(who + "local storage of lld " + std::to_string(c.lld) + " x " +
                                std::to_string(c.lcols) + " columns x " + std::to_string(esize) +
                                " bytes does not fit in memory");
  if (opt.buffer_cap < 1024)
    throw std::invalid_argument(who + "buffer_cap = " + std::to_string(opt.buffer_cap) + " is below 1 KiB");
  if (opt.coalesce_bytes == 0) throw std::invalid_argument(who + "coalesce_bytes = 0");
  return c;
}

block_cyclic make_layout(std::int64_t m, std::int64_t n, std::int64_t mb, std::int64_t nb, const process_grid& grid) {
  require_initialized("convergent_matrix");
  return block_cyclic(m, n, mb, nb, grid.rows(), grid.cols());
}

}  // namespace

// One lock for all matrices of the process: it guards each matrix's
// outboxes, counters and stats, and serialises every backend call, so that
// threads updating different matrices never enter the (single-threaded)
// backend together.
std::mutex& backend_mutex() {
  static std::mutex m;
  return m;
}

struct cm_core::sync {
  std::mutex& mu = backend_mutex();
};

cm_core::cm_core(std::int64_t m, std::int64_t n, const process_grid& grid, std::int64_t mb, std::int64_t nb,
                 std::size_t elem_size, const convergent_matrix_options& opt)
    : layout_(1, 1, 1, 1, 1, 1),
      grid_(grid),
      opt_(opt),
      esize_(elem_size),
      nlocks_(nlocks),
      header_(64 * nlocks + 64),
      sync_(std::make_unique<sync>()) {
  // Bad arguments on any process make every process throw, before the
  // first collective step that could otherwise wait forever.
  checked_sizes c;
  {
    std::exception_ptr bad;
    try {
      layout_ = make_layout(m, n, mb, nb, grid);
      c = check_arguments(layout_, grid, esize_, opt, header_);
    } catch (const not_initialized&) {
      throw;  // no runtime, no collective to agree in
    } catch (...) {
      bad = std::current_exception();
    }
    agree_on_arguments(grid.comm(), bad, "convergent_matrix");
  }
  lrows_ = c.lrows;
  lcols_ = c.lcols;
  lld_ = c.lld;
  const int gsize = grid.size();
  me_ = grid.rank_of(grid.my_row(), grid.my_col());
  // Grid rank -> world rank, for messages and shared-memory peers.
  MPI_Group g, w;
  MPI_Comm_group(grid.comm(), &g);
  MPI_Comm_group(world_comm(), &w);
  std::vector<int> mine(gsize);
  std::iota(mine.begin(), mine.end(), 0);
  world_of_.resize(gsize);
  MPI_Group_translate_ranks(g, gsize, mine.data(), w, world_of_.data());
  MPI_Group_free(&g);
  MPI_Group_free(&w);
  // Origins write into peers' storage, so each needs every peer's lld.
  lld_of_.resize(gsize);
  MPI_Allgather(&lld_, 1, MPI_INT64_T, lld_of_.data(), 1, MPI_INT64_T, grid.comm());

  block_ = shared_block(c.bytes);
  std::memset(block_.local(), 0, block_.local_bytes());
  barrier(world());
  // Map node peers' storage into this process now (one read per page), so
  // the first updates do not pay the page-table faults.
  volatile std::byte sink{};
  for (int g = 0; g < gsize; ++g)
    if (std::byte* p = block_.peer(world_of_[g]); p && world_of_[g] != world_rank()) {
      const std::size_t bytes =
          header_ + std::size_t(lld_of_[g]) * std::size_t(layout_.local_cols(grid.coords_of(g).col)) * esize_;
      for (std::size_t off = 0; off < bytes; off += 4096) sink = p[off];
    }
  (void)sink;
  outbox_.resize(gsize);
  sent_msgs_.assign(gsize, 0);
  std::uint64_t seed = opt.seed ^ (std::uint64_t(world_rank()) * 0x9e3779b97f4a7c15ULL);
  rng_ = splitmix(seed);
  static bool registered = [] {
    am_register(&cm_core::on_message, true);
    return true;
  }();
  (void)registered;
  // Ids follow collective construction order, identical on every process.
  id_ = next_id++;
  registry()[id_] = this;
  alive_ = alive_magic;
  barrier(world());  // nobody sends before every instance exists and is zeroed
}

cm_core::~cm_core() {
  alive_ = 0;
  active_ = false;
  if (runtime_up()) {
    // Peers may still be applying our last packets into their parts or
    // reading ours; a barrier makes release of the windows safe.
    try {
      barrier(world());
    } catch (...) {
    }
  }
  registry().erase(id_);
}

void cm_core::require_usable(const char* what) const {
  if (!runtime_up())
    throw not_initialized(std::string("accrete::convergent_matrix::") + what +
                          ": the runtime is not initialized (or already finalized)");
  if (alive_ != alive_magic)
    throw error(std::string("accrete::convergent_matrix::") + what + ": the matrix has been destroyed");
}

std::byte* cm_core::local_bytes(const char* what) const {
  require_usable(what);
  return block_.local() + header_;
}

std::byte* cm_core::direct_target(int grid_rank, std::uint64_t r) const noexcept {
  std::byte* p = block_.peer(world_of_[grid_rank]);
  if (!p) return nullptr;
  // Acquire: pairs with the owner's release in publish_open(), so its
  // reads of the previous round happen before our stores.
  if (std::atomic_ref<std::uint64_t>(open_word(grid_rank)).load(std::memory_order_acquire) < r) return nullptr;
  return p + header_;
}

void cm_core::publish_open() noexcept {
  std::atomic_ref<std::uint64_t>(open_word(me_)).store(open_, std::memory_order_release);
}

void cm_core::lock_stripe(int grid_rank, std::int64_t stripe) const noexcept {
  auto* word = reinterpret_cast<std::uint32_t*>(block_.peer(world_of_[grid_rank]) + 64 * stripe);
  std::atomic_ref<std::uint32_t> lk(*word);
  unsigned spins = 0;
  for (;;) {
    if (lk.load(std::memory_order_relaxed) == 0 && lk.exchange(1, std::memory_order_acquire) == 0) return;
    spin_pause(spins);
  }
}

bool cm_core::try_lock_stripe(int grid_rank, std::int64_t stripe) const noexcept {
  auto* word = reinterpret_cast<std::uint32_t*>(block_.peer(world_of_[grid_rank]) + 64 * stripe);
  std::atomic_ref<std::uint32_t> lk(*word);
  return lk.load(std::memory_order_relaxed) == 0 && lk.exchange(1, std::memory_order_acquire) == 0;
}

template <class F>
void cm_core::with_stripes(int grid_rank, const std::int32_t* lcol, std::int32_t nc, F&& cols) {
  struct segment {
    std::int64_t stripe;
    std::int32_t begin, end;
  };
  thread_local std::vector<segment> pending;
  pending.clear();
  for (std::int32_t c = 0; c < nc;) {
    const std::int64_t s = stripe_of(lcol[c]);
    std::int32_t e = c + 1;
    while (e < nc && stripe_of(lcol[e]) == s) ++e;
    pending.push_back({s, c, e});
    c = e;
  }
  while (!pending.empty()) {
    std::size_t keep = 0;
    for (auto& seg : pending) {
      if (try_lock_stripe(grid_rank, seg.stripe)) {
        cols(seg.begin, seg.end);
        unlock_stripe(grid_rank, seg.stripe);
      } else {
        pending[keep++] = seg;
      }
    }
    if (keep == pending.size()) {  // everything busy: wait for the first
      lock_stripe(grid_rank, pending[0].stripe);
      cols(pending[0].begin, pending[0].end);
      unlock_stripe(grid_rank, pending[0].stripe);
      pending.erase(pending.begin());
    } else {
      pending.resize(keep);
    }
  }
}

void cm_core::unlock_stripe(int grid_rank, std::int64_t stripe) const noexcept {
  auto* word = reinterpret_cast<std::uint32_t*>(block_.peer(world_of_[grid_rank]) + 64 * stripe);
  std::atomic_ref<std::uint32_t>(*word).store(0, std::memory_order_release);
}

void cm_core::validate(std::span<const std::int64_t> rows, std::span<const std::int64_t> cols, std::int64_t ld,
                       matrix_layout lay, const void* block) const {
  require_usable("update");
  for (std::size_t k = 0; k < rows.size(); ++k)
    if (rows[k] < 0 || rows[k] >= layout_.rows())
      throw std::out_of_range("accrete::convergent_matrix::update: row index " + std::to_string(rows[k]) +
                              " at position " + std::to_string(k) + " is outside [0, " +
                              std::to_string(layout_.rows()) + ")");
  for (std::size_t k = 0; k < cols.size(); ++k)
    if (cols[k] < 0 || cols[k] >= layout_.cols())
      throw std::out_of_range("accrete::convergent_matrix::update: column index " + std::to_string(cols[k]) +
                              " at position " + std::to_string(k) + " is outside [0, " +
                              std::to_string(layout_.cols()) + ")");
  const std::int64_t need = std::int64_t(lay == matrix_layout::col_major ? rows.size() : cols.size());
  if (ld < 0 || ld < need)
    throw std::invalid_argument("accrete::convergent_matrix::update: leading dimension " + std::to_string(ld) +
                                " is smaller than the block's " + (lay == matrix_layout::col_major ? "row" : "column") +
                                " count " + std::to_string(need));
  if (!block && !rows.empty() && !cols.empty())
    throw std::invalid_argument("accrete::convergent_matrix::update: null block");
  if (rows.size() > INT32_MAX || cols.size() > INT32_MAX)
    throw std::invalid_argument("accrete::convergent_matrix::update: more than 2^31-1 indices");
}

void cm_core::bin(std::span<const std::int64_t> rows, std::span<const std::int64_t> cols, binned& b) {
  const int pr = grid_.rows(), pc = grid_.cols();
  const std::int64_t mb = layout_.row_block(), nb = layout_.col_block();
  auto group = [](std::span<const std::int64_t> ix, int np, std::int64_t bs, int src, std::vector<std::int32_t>& start,
                  std::vector<std::int32_t>& pos, std::vector<std::int32_t>& loc) {
    start.assign(np + 1, 0);
    pos.resize(ix.size());
    loc.resize(ix.size());
    for (auto i : ix) ++start[((i / bs) + src) % np + 1];
    for (int p = 0; p < np; ++p) start[p + 1] += start[p];
    std::vector<std::int32_t> fill(start.begin(), start.end() - 1);
    for (std::size_t k = 0; k < ix.size(); ++k) {
      std::int64_t i = ix[k];
      int owner = int(((i / bs) + src) % np);
      std::int32_t at = fill[owner]++;
      pos[at] = std::int32_t(k);
      loc[at] = std::int32_t((i / (bs * np)) * bs + i % bs);
    }
  };
  group(rows, pr, mb, layout_.src_row(), b.row_start, b.row_pos, b.row_loc);
  group(cols, pc, nb, layout_.src_col(), b.col_start, b.col_pos, b.col_loc);
  b.targets.clear();
  for (int r = 0; r < pr; ++r) {
    if (b.row_start[r] == b.row_start[r + 1]) continue;
    for (int c = 0; c < pc; ++c)
      if (b.col_start[c] != b.col_start[c + 1]) b.targets.push_back(grid_.rank_of(r, c));
  }
  // Random visiting order spreads concurrent origins over different targets.
  std::uint64_t s = mix(rng_.fetch_add(0x9e3779b97f4a7c15ULL, std::memory_order_relaxed));
  for (std::size_t k = b.targets.size(); k > 1; --k) std::swap(b.targets[k - 1], b.targets[splitmix(s) % k]);
}

std::size_t cm_core::max_packet_bytes() const noexcept {
  return std::min(opt_.buffer_cap / 2, max_message_bytes - am_header_bytes - 8);
}

std::byte* cm_core::packet_slot(int grid_rank, std::size_t bytes) {
  auto& box = outbox_[grid_rank];
  if (!box.empty() && box.size() + bytes > max_message_bytes) flush_target(grid_rank);
  if (box.empty()) {
    // Room for the active-message header and the matrix id / round words.
    box.resize(am_header_bytes + 8);
    buffered_ += box.size();
  }
  std::size_t at = box.size();
  box.resize(at + bytes);
  buffered_ += bytes;
  stats_.peak_buffered = std::max(stats_.peak_buffered, buffered_ + am_inflight_bytes());
  return box.data() + at;
}

void cm_core::flush_target(int grid_rank) {
  auto& box = outbox_[grid_rank];
  if (box.empty()) return;
  // Every packet of a box is of one round: commit flushes all boxes before
  // it moves round_ on, under the same lock.
  std::uint32_t hdr[2] = {id_, std::uint32_t(round_)};
  std::memcpy(box.data() + am_header_bytes, hdr, sizeof hdr);
  const std::size_t n = box.size();
  {
    timer t(stats_.t_move);
    am_send_owned(world_of_[grid_rank], &cm_core::on_message, std::move(box));
  }
  // Counted only once sent: a send that throws leaves no phantom message
  // for the receiver to wait for.
  buffered_ -= n;
  stats_.bytes_sent += n;
  ++stats_.messages_sent;
  ++sent_msgs_[grid_rank];
  box = std::vector<std::byte>();
}

void cm_core::wait_for_room(std::size_t bytes) {
  if (buffered_ + am_inflight_bytes() + bytes <= opt_.buffer_cap) return;
  // Send what is buffered, then let the sends drain (and keep applying what
  // arrives, so two processes waiting on each other both make headway).
  for (int g = 0; g < int(outbox_.size()); ++g) flush_target(g);
  timer t(stats_.t_wait);
  unsigned spins = 0;
  while (buffered_ + am_inflight_bytes() + bytes > opt_.buffer_cap) {
    poll();
    if (buffered_ + am_inflight_bytes() + bytes > opt_.buffer_cap) idle_backoff(spins);
  }
}

void cm_core::on_message(int source, std::span<const std::byte> payload) {
  std::uint32_t hdr[2];
  if (payload.size() < sizeof hdr)
    throw error("accrete::convergent_matrix: truncated message from rank " + std::to_string(source));
  std::memcpy(hdr, payload.data(), sizeof hdr);
  auto it = registry().find(hdr[0]);
  if (it == registry().end())
    throw error("accrete::convergent_matrix: message from rank " + std::to_string(source) + " for unknown matrix id " +
                std::to_string(hdr[0]));
  cm_core& m = *it->second;
  if (m.alive_ != alive_magic)
    throw error("accrete::convergent_matrix: update from rank " + std::to_string(source) +
                " arrived after the matrix was destroyed (updates after the last commit?)");
  m.receive(source, hdr[1], payload.subspan(sizeof hdr));
}

void cm_core::receive(int source, std::uint32_t round, std::span<const std::byte> packets) {
  const std::uint32_t open = std::uint32_t(open_);
  if (active_ && round == open) {
    {
      timer t(stats_.t_apply);
      apply_packets(packets);
    }
    ++received_;
    return;
  }
  // A sender can be at most one round ahead: it cannot finish a commit
  // this process has not entered.
  if (round != open && round != open + 1)
    throw error("accrete::convergent_matrix: message of round " + std::to_string(round) + " from rank " +
                std::to_string(source) + " arrived in round " + std::to_string(open) + " (corrupt message?)");
  held_.push_back({source, round, std::vector<std::byte>(packets.begin(), packets.end())});
}

void cm_core::activate() {
  active_ = true;
  reopen_locked();
}

void cm_core::reopen_locked() {
  open_ = round_;
  publish_open();
  if (!active_ || held_.empty()) return;
  auto held = std::move(held_);
  held_.clear();
  for (auto& h : held) receive(h.source, h.round, h.packets);
}

void cm_core::reopen() {
  require_usable("reopen");
  if (in_commit_) return;  // a commit opens its own round when it starts
  std::lock_guard<std::mutex> g(sync_->mu);
  if (open_ != round_) reopen_locked();
}

std::size_t cm_core::held_messages() const {
  std::lock_guard<std::mutex> g(sync_->mu);
  return held_.size();
}

void cm_core::apply_packets(std::span<const std::byte> p) {
  stats_.packets_received += for_each_packet(
      p, esize_, lrows_, lcols_, [&](const packet_view& v) { apply_packet(v.lrow, v.nr, v.lcol, v.nc, v.values); });
}

void cm_core::check_timeout(double start, const char* what) {
  static const double limit = env_seconds("ACCRETE_COMMIT_TIMEOUT").value_or(0.0);
  if (limit <= 0 || now() - start < limit) return;
  // Name the processes that have not entered this commit. Node peers'
  // epochs are read from shared memory; a remote peer that does not answer
  // an RMA read within a second is not making MPI progress, so it cannot be
  // waiting in this commit either.
  std::string missing, silent;
  const std::uint64_t mine = epoch();
  for (int g = 0; g < int(world_of_.size()); ++g) {
    std::uint64_t e = 0;
    if (!block_.try_read(world_of_[g], header_ - 64, &e, sizeof e, 1.0))
      silent += (silent.empty() ? "" : ", ") + std::to_string(world_of_[g]);
    else if (e < mine)
      missing += (missing.empty() ? "" : ", ") + std::to_string(world_of_[g]);
  }
  std::string who = missing;
  if (!silent.empty()) who += (who.empty() ? "" : "; ") + std::string("not answering (likely not in it): ") + silent;
  std::fprintf(stderr,
               "accrete: convergent_matrix %s on rank %d timed out after %.1f s (ACCRETE_COMMIT_TIMEOUT); "
               "processes not in this commit: %s\n",
               what, world_rank(), limit,
               who.empty() ? "(none: every process entered it; messages are missing)" : who.c_str());
  std::fflush(stderr);
  MPI_Abort(world_comm(), 3);
}

void cm_core::wait_request(MPI_Request& r, double start, const char* what) {
  unsigned spins = 0;
  for (;;) {
    int done = 0;
    {
      std::lock_guard<std::mutex> g(sync_->mu);
      MPI_Test(&r, &done, MPI_STATUS_IGNORE);
    }
    if (done) return;
    // Without the lock: callbacks run here may call update().
    user_progress();
    idle_backoff(spins);
    check_timeout(start, what);
  }
}

void cm_core::commit() {
  require_usable("commit");
  if (in_commit_)
    throw error(
        "accrete::convergent_matrix::commit: called from a callback that a commit of the same matrix is running");
  in_commit_ = true;
  struct leave {
    bool& f;
    ~leave() { f = false; }
  } leave_commit{in_commit_};
  const double start = now();
  check_timeout(start, "commit");  // reads ACCRETE_COMMIT_TIMEOUT: a bad value fails every commit
  timer t(stats_.t_wait);
  const int np = int(world_of_.size());
  std::vector<std::uint64_t> counts;
  std::vector<std::vector<std::byte>> boxes;
  {
    std::lock_guard<std::mutex> g(sync_->mu);
    ++epoch();
    // This process starts the round being committed (if it had not yet):
    // held contributions of this round are applied now.
    if (open_ != round_) reopen_locked();
    block_.sync();
    if (opt_.strategy == update_strategy::packets) {
      for (int k = 0; k < np; ++k) flush_target(k);
      counts = sent_msgs_;
      std::fill(sent_msgs_.begin(), sent_msgs_.end(), 0);
    } else {
      boxes = std::move(outbox_);
      outbox_.assign(np, {});
      buffered_ = 0;
    }
    // From here on, updates (from callbacks run below) are next round's.
    ++round_;
    updates_since_commit_ = 0;
  }
  if (opt_.strategy == update_strategy::packets) {
    std::uint64_t expected = 0;
    MPI_Request r;
    {
      std::lock_guard<std::mutex> g(sync_->mu);
      MPI_Ireduce_scatter_block(counts.data(), &expected, 1, MPI_UINT64_T, MPI_SUM, grid_.comm(), &r);
    }
    wait_request(r, start, "commit");
    // Every process has entered this commit (the counts are complete), so
    // every direct store of this round is done; make them visible here.
    block_.sync();
    unsigned spins = 0;
    for (;;) {
      {
        std::lock_guard<std::mutex> g(sync_->mu);
        poll();
        if (received_ >= expected) break;
      }
      idle_backoff(spins);
      check_timeout(start, "commit");
    }
    std::lock_guard<std::mutex> g(sync_->mu);
    if (received_ != expected)
      throw error("accrete::convergent_matrix::commit: received " + std::to_string(received_) +
                  " messages but only " + std::to_string(expected) + " were sent");
    received_ = 0;
  } else {
    std::vector<std::size_t> scount(np), sdisp(np, 0), rcount, rdisp;
    std::vector<std::byte> sbuf;
    std::size_t total = 0;
    for (int k = 0; k < np; ++k) {
      scount[k] = boxes[k].empty() ? 0 : boxes[k].size() - am_header_bytes - 8;
      sdisp[k] = total;
      total += scount[k];
    }
    sbuf.resize(total);
    for (int k = 0; k < np; ++k) {
      if (scount[k]) std::memcpy(sbuf.data() + sdisp[k], boxes[k].data() + am_header_bytes + 8, scount[k]);
      boxes[k] = std::vector<std::byte>();
    }
    auto rbuf = alltoallv_bytes(grid_.comm(), sbuf.data(), scount, sdisp, rcount, rdisp,
                                [&](MPI_Request& r) { wait_request(r, start, "commit"); });
    std::lock_guard<std::mutex> g(sync_->mu);
    stats_.bytes_sent += total;
    timer ta(stats_.t_apply);
    // Packets never straddle senders: apply each sender's part on its own.
    for (int k = 0; k < np; ++k)
      apply_packets(std::span<const std::byte>(rbuf.data() + rdisp[k], rcount[k]));
  }
  // When commit returns anywhere, every part is complete.
  MPI_Request b;
  block_.sync();
  {
    std::lock_guard<std::mutex> g(sync_->mu);
    MPI_Ibarrier(grid_.comm(), &b);
  }
  wait_request(b, start, "commit");
  block_.sync();
}

void cm_core::reset_storage() {
  require_usable("reset");
  if (in_commit_) throw error("accrete::convergent_matrix::reset: called from a callback that a commit is running");
  // Updates not yet committed would race with the zeroing: refuse together.
  int mine = updates_since_commit_ ? grid_.rank_of(grid_.my_row(), grid_.my_col()) : INT_MAX, first = INT_MAX;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, grid_.comm());
  if (first != INT_MAX)
    throw collective_misuse("accrete::convergent_matrix::reset: grid rank " + std::to_string(first) +
                            " issued updates since its last commit started; reset() must come between a commit "
                            "and the next round's updates");
  std::byte* base = block_.local() + header_;  // usable: checked on entry
  for (std::int64_t c = 0; c < lcols_; ++c)
    std::memset(base + std::size_t(c) * std::size_t(lld_) * esize_, 0, std::size_t(lrows_) * esize_);
  // No contribution of the next round existed anywhere (checked above);
  // peers may start one once they leave this barrier, after our zeroing.
  barrier(world());
  std::lock_guard<std::mutex> g(sync_->mu);
  reopen_locked();
}

convergent_matrix_stats cm_core::stats() const {
  require_usable("stats");
  std::lock_guard<std::mutex> g(sync_->mu);
  return stats_;
}

void cm_core::reset_stats() {
  require_usable("reset_stats");
  std::lock_guard<std::mutex> g(sync_->mu);
  stats_ = convergent_matrix_stats{};
}

}  // namespace detail

// ---- the typed part --------------------------------------------------------------

namespace {

// Runs of consecutive local rows whose source positions are consecutive too:
// the inner loops over a run are unit-stride on both sides and vectorise.
struct run {
  std::int32_t first, len;
};

void make_runs(const std::int32_t* loc, const std::int32_t* pos, std::int32_t n, std::vector<run>& out) {
  out.clear();
  for (std::int32_t r = 0; r < n;) {
    std::int32_t e = r + 1;
    while (e < n && loc[e] == loc[e - 1] + 1 && (!pos || pos[e] == pos[e - 1] + 1)) ++e;
    out.push_back({r, e - r});
    r = e;
  }
}

template <class T>
inline void add_run(T* __restrict dst, const T* __restrict src, std::int32_t len) {
  for (std::int32_t k = 0; k < len; ++k) dst[k] += src[k];
}

}  // namespace

template <class T>
void convergent_matrix<T>::apply_packet(const std::int32_t* lrow, std::int32_t nr, const std::int32_t* lcol,
                                        std::int32_t nc, const std::byte* values) {
  thread_local std::vector<run> runs;
  make_runs(lrow, nullptr, nr, runs);
  T* data = reinterpret_cast<T*>(block_.local() + header_);
  const T* vals = reinterpret_cast<const T*>(values);
  with_stripes(me_, lcol, nc, [&](std::int32_t c0, std::int32_t c1) {
    for (std::int32_t c = c0; c < c1; ++c) {
      T* dst = data + std::int64_t(lcol[c]) * lld();
      const T* src = vals + std::int64_t(c) * nr;
      for (auto& ru : runs) add_run(dst + lrow[ru.first], src + ru.first, ru.len);
    }
  });
}

template <class T>
void convergent_matrix<T>::update(const T* block, std::int64_t ld, std::span<const std::int64_t> rows,
                                  std::span<const std::int64_t> cols, matrix_layout lay) {
  validate(rows, cols, ld, lay, block);
  if (rows.empty() || cols.empty()) return;
  thread_local binned b;
  thread_local std::vector<run> runs;
  std::uint64_t my_round;
  {
    double t0 = detail::now();
    bin(rows, cols, b);
    std::lock_guard<std::mutex> g(sync_->mu);
    stats_.t_bin += detail::now() - t0;
    ++stats_.updates;
    ++updates_since_commit_;
    stats_.elements += rows.size() * cols.size();
    my_round = round_;
  }
  const bool colmaj = lay == matrix_layout::col_major;
  const bool packets = opt_.strategy == update_strategy::packets;
  // Element (i, j) of the block is block[i * rs + j * cs].
  const std::int64_t rs = colmaj ? 1 : ld, cs = colmaj ? ld : 1;
  const std::size_t max_bytes = max_packet_bytes();
  for (int target : b.targets) {
    auto [tr, tc] = grid().coords_of(target);
    const std::int32_t r0 = b.row_start[tr], nr = b.row_start[tr + 1] - r0;
    const std::int32_t c0 = b.col_start[tc], nc = b.col_start[tc + 1] - c0;
    const std::int32_t *rpos = &b.row_pos[r0], *rloc = &b.row_loc[r0];
    const std::int32_t *cpos = &b.col_pos[c0], *cloc = &b.col_loc[c0];
    if (std::byte* peer = packets ? direct_target(target, my_round) : nullptr) {
      // Node-local owner whose part is open for this round: add straight
      // from the caller's block into its storage, one column-block stripe
      // lock at a time.
      double t0 = detail::now();
      T* data = reinterpret_cast<T*>(peer);
      const std::int64_t tld = lld_of_[target];
      make_runs(rloc, colmaj ? rpos : nullptr, nr, runs);
      with_stripes(target, cloc, nc, [&](std::int32_t c0, std::int32_t c1) {
        for (std::int32_t c = c0; c < c1; ++c) {
          T* dst = data + std::int64_t(cloc[c]) * tld;
          const T* src = block + std::int64_t(cpos[c]) * cs;
          if (colmaj) {
            for (auto& ru : runs) add_run(dst + rloc[ru.first], src + rpos[ru.first], ru.len);
          } else {
            for (std::int32_t r = 0; r < nr; ++r) dst[rloc[r]] += src[std::int64_t(rpos[r]) * rs];
          }
        }
      });
      std::lock_guard<std::mutex> g(sync_->mu);
      ++stats_.direct_packets;
      stats_.t_apply += detail::now() - t0;
      continue;
    }
    // Remote owner, a part not open for this round, or the alltoall
    // strategy: pack the sub-block column-major behind its local row and
    // column lists, in pieces of at most max_bytes (half the memory cap,
    // and within MPI's int counts).
    std::int32_t rr = nr, cc = nc;
    if (*detail::packet_bytes(std::size_t(nr), 1, sizeof(T)) > max_bytes) {
      rr = std::int32_t(std::max<std::size_t>(1, (max_bytes - 24) / (sizeof(T) + 4)));
      cc = 1;
    } else {
      const std::size_t col = std::size_t(nr) * sizeof(T) + 4;
      const std::size_t fixed = *detail::packet_bytes(std::size_t(nr), 0, sizeof(T)) + 8;
      cc = std::int32_t(std::min<std::size_t>(std::size_t(nc), std::max<std::size_t>(1, (max_bytes - fixed) / col)));
    }
    std::lock_guard<std::mutex> g(sync_->mu);
    double t0 = detail::now();
    for (std::int32_t j0 = 0; j0 < nc; j0 += cc)
      for (std::int32_t i0 = 0; i0 < nr; i0 += rr) {
        const std::int32_t pr = std::min(rr, nr - i0), pc = std::min(cc, nc - j0);
        const std::size_t bytes = *detail::packet_bytes(std::size_t(pr), std::size_t(pc), sizeof(T));
        if (packets) wait_for_room(bytes + detail::am_header_bytes + 8);
        std::byte* slot = packet_slot(target, bytes);
        const std::int32_t dims[2] = {pr, pc};
        std::memcpy(slot, dims, sizeof dims);
        std::memcpy(slot + 8, rloc + i0, 4 * std::size_t(pr));
        std::memcpy(slot + 8 + 4 * std::size_t(pr), cloc + j0, 4 * std::size_t(pc));
        T* v = reinterpret_cast<T*>(slot + bytes - std::size_t(pr) * std::size_t(pc) * sizeof(T));
        for (std::int32_t c = 0; c < pc; ++c) {
          const T* src = block + std::int64_t(cpos[j0 + c]) * cs;
          for (std::int32_t r = 0; r < pr; ++r)
            v[std::int64_t(c) * pr + r] = src[std::int64_t(rpos[i0 + r]) * rs];
        }
        if (packets && outbox_[target].size() >= opt_.coalesce_bytes) flush_target(target);
      }
    stats_.t_bin += detail::now() - t0;
  }
  if (packets) {
    // Apply what has arrived for us, unless another thread is at it.
    std::unique_lock<std::mutex> g(sync_->mu, std::try_to_lock);
    if (g.owns_lock()) detail::poll();
  }
}

template <class T>
void convergent_matrix<T>::update_symmetric(const T* block, std::int64_t ld, std::span<const std::int64_t> ix,
                                            matrix_layout lay) {
  validate(ix, ix, ld, lay, block);
  // Split into one update per column so each carries only rows ix[i] <= ix[j].
  thread_local std::vector<std::int64_t> rsel;
  thread_local std::vector<T> vals;
  const bool colmaj = lay == matrix_layout::col_major;
  for (std::size_t j = 0; j < ix.size(); ++j) {
    rsel.clear();
    vals.clear();
    for (std::size_t i = 0; i < ix.size(); ++i)
      if (ix[i] <= ix[j]) {
        rsel.push_back(ix[i]);
        vals.push_back(colmaj ? block[i + j * std::size_t(ld)] : block[i * std::size_t(ld) + j]);
      }
    if (!rsel.empty()) update(vals.data(), std::int64_t(rsel.size()), rsel, ix.subspan(j, 1));
  }
}

template <class T>
T convergent_matrix<T>::get(std::int64_t i, std::int64_t j) const {
  require_usable("get");
  const int owner = grid().rank_of(layout().owner_row(i), layout().owner_col(j));
  const std::size_t off =
      header_ + std::size_t(layout().local_col(j) * lld_of_[owner] + layout().local_row(i)) * sizeof(T);
  T v;
  block_.read(world_of_[owner], off, &v, sizeof v);
  return v;
}

template <class T>
std::array<int, 9> convergent_matrix<T>::descriptor() const {
  require_usable("descriptor");
  return accrete::descriptor(layout(), grid(), lld());
}

template <class T>
void convergent_matrix<T>::save(const std::string& path) const {
  require_usable("save");
  write_matrix(path, grid().comm(), layout(), grid(), local(), lld());
}

template <class T>
void convergent_matrix<T>::load(const std::string& path) {
  require_usable("load");
  read_matrix(path, grid().comm(), layout(), grid(), local(), lld());
  barrier(world());
}

template <class T>
void convergent_matrix<T>::transpose_into(bool upper_only, bool average) {
  const char* what = upper_only ? "fill_lower" : "symmetrize";
  require_usable(what);
  if (rows() != cols())
    throw std::invalid_argument(std::string("accrete::convergent_matrix::") + what + ": the matrix is " +
                                std::to_string(rows()) + " x " + std::to_string(cols()) + ", not square");
  // Element (i, j) here goes to the owner of (j, i). Each side enumerates
  // the same elements in the same order (sender's local column-major order,
  // restricted to what the receiver owns), so only values travel.
  const auto& L = layout();
  const int np = grid().size();
  auto sends = [&](int sr, int sc, int tr, int tc, auto&& fn) {
    const std::int64_t nlc = L.local_cols(sc), nlr = L.local_rows(sr);
    for (std::int64_t lj = 0; lj < nlc; ++lj) {
      const std::int64_t j = L.global_col(sc, lj);
      if (L.owner_row(j) != tr) continue;
      for (std::int64_t li = 0; li < nlr; ++li) {
        const std::int64_t i = L.global_row(sr, li);
        if (L.owner_col(i) != tc || i == j || (upper_only && i > j)) continue;
        fn(i, j, li, lj);
      }
    }
  };
  std::vector<std::size_t> sc(np, 0), sd(np, 0), rc, rd;
  std::vector<T> sbuf;
  const int mr = grid().my_row(), mc = grid().my_col();
  T* mine = local();
  for (int t = 0; t < np; ++t) {
    auto [tr, tc] = grid().coords_of(t);
    sd[t] = sbuf.size() * sizeof(T);
    sends(mr, mc, tr, tc, [&](auto, auto, std::int64_t li, std::int64_t lj) { sbuf.push_back(mine[lj * lld() + li]); });
    sc[t] = sbuf.size() * sizeof(T) - sd[t];
  }
  auto rbytes = detail::alltoallv_bytes(grid().comm(), reinterpret_cast<const std::byte*>(sbuf.data()), sc, sd, rc, rd,
                                        [&](MPI_Request& r) { MPI_Wait(&r, MPI_STATUS_IGNORE); });
  const T* rbuf = reinterpret_cast<const T*>(rbytes.data());
  for (int s = 0; s < np; ++s) {
    auto [sr, scol] = grid().coords_of(s);
    std::size_t k = rd[s] / sizeof(T);
    sends(sr, scol, mr, mc, [&](std::int64_t i, std::int64_t j, auto, auto) {
      // The value of (i, j) lands on our element (j, i).
      T& dst = mine[L.local_col(i) * lld() + L.local_row(j)];
      dst = average ? (dst + rbuf[k]) / T(2) : rbuf[k];
      ++k;
    });
  }
  barrier(world());
}

template <class T>
void convergent_matrix<T>::fill_lower() {
  transpose_into(true, false);
}

template <class T>
void convergent_matrix<T>::symmetrize() {
  transpose_into(false, true);
}

template class convergent_matrix<float>;
template class convergent_matrix<double>;

}  // namespace accrete
