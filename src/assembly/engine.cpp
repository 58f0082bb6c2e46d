// The assembly engine's life and rounds: construction, the message handler
// and early or next-round messages, reopen, commit and reset.
//
// A message of the round after the receiver's open one (a fast sender, or
// an update issued during a commit) is held, not applied, until the
// receiver opens that round, so the committed values stay put while their
// owner reads them (docs/semantics.md, "Rounds"). Node-local origins store
// directly only into parts open for their round (storage.cpp); for a part
// still closed they send a message like a remote origin would.
//
// Locking: one lock (lock()) guards the outboxes, counters and stats and
// serialises backend calls. It is never held while user-level progress
// runs callbacks, because those may call update() (re-entrant progress);
// commit() takes it only around its own steps.
#include <algorithm>
#include <bit>
#include <climits>
#include <cstdio>
#include <cstring>
#include <string>
#include <unordered_map>

#include "accrete/collectives.hpp"
#include "accrete/detail/env.hpp"
#include "accrete/detail/packet_format.hpp"
#include "accrete/error.hpp"
#include "accrete/progress.hpp"
#include "assembly/common.hpp"
#include "assembly/exchange.hpp"

namespace accrete::detail {
namespace {

constexpr std::uint64_t alive_magic = 0xacc7e7eULL;

std::unordered_map<std::uint32_t, assembly_engine*>& registry() {
  static std::unordered_map<std::uint32_t, assembly_engine*> r;
  return r;
}
std::uint32_t next_id = 0;

}  // namespace

// One lock for all engines of the process, and it is the backend lock: it
// guards each engine's outboxes, counters, stats and the registry above,
// and serialises every backend call, so that threads updating different
// structures never enter the backend together, and the progress thread
// applies a packet only while holding it.
std::recursive_mutex& assembly_engine::lock() const noexcept { return backend_mutex(); }

assembly_engine::assembly_engine(const assembly_shape& shape, apply_kernel apply, settle_kernel settle,
                                 settle_kernel clear)
    : shape_(shape), apply_(apply), settle_(settle), clear_(clear), exchange_(make_exchange(shape.strategy)) {
  const int np = world_size();
  // Part -> world rank, and every part's leading dimension (origins write
  // into node peers' storage).
  // One collective: [w * 3 + 0] part, [+ 1] lld, [+ 2] storage bytes of rank w.
  generation_ = runtime_generation();
  const std::int64_t mine[3] = {shape_.my_part, shape_.lld, std::int64_t(shape_.storage_bytes)};
  const auto all = world_allgather(mine, shape_.name);
  world_of_.assign(np, -1);
  for (int w = 0; w < np; ++w) {
    const std::int64_t p = all[3 * std::size_t(w)];
    if (p < 0 || p >= np || world_of_[p] != -1)
      throw error(std::string(shape_.name) + ": part numbers do not cover every process once");  // same everywhere
    world_of_[p] = w;
  }
  const std::int64_t cb = shape_.col_map.block;
  stripe_block_ = std::uint32_t(std::min<std::int64_t>(cb, UINT32_MAX));
  if (cb <= INT32_MAX && (cb & (cb - 1)) == 0) stripe_shift_ = std::countr_zero(std::uint64_t(cb));
  lld_of_.resize(np);
  for (int p = 0; p < np; ++p) lld_of_[p] = all[3 * std::size_t(world_of_[p]) + 1];

  block_ = shared_block(shape_.storage_bytes);
  std::memset(block_.local(), 0, block_.local_bytes());
  barrier(world());
  // Map node peers' storage into this process now (one read per page), so
  // the first updates do not pay the page-table faults.
  volatile std::byte sink{};
  for (int w = 0; w < np; ++w)
    if (std::byte* base = block_.peer(w); base && w != world_rank())
      for (std::size_t off = 0; off < std::size_t(all[3 * std::size_t(w) + 2]); off += 4096) sink = base[off];
  (void)sink;
  box_of_.assign(std::size_t(np), -1);
  std::uint64_t seed = shape_.seed ^ (std::uint64_t(world_rank()) * 0x9e3779b97f4a7c15ULL);
  rng_ = splitmix(seed);
  static bool registered = [] {
    am_register(&assembly_engine::on_message, true);
    return true;
  }();
  (void)registered;
  // Ids follow collective construction order, identical on every process.
  channel_ = open_channel();
  {
    std::lock_guard g(lock());
    id_ = next_id++;
    registry()[id_] = this;
  }
  alive_ = alive_magic;
  active_ = true;
  barrier(world());  // nobody sends before every instance exists and is zeroed
}

assembly_engine::~assembly_engine() {
  alive_ = 0;
  active_ = false;
  // Made under a runtime that is gone (finalize, maybe init again): its
  // windows and channel went with that runtime, and the channel number may
  // now name one of the new runtime's. Only our own memory is freed.
  if (runtime_up() && generation_ == runtime_generation()) {
    // Peers may still be applying our last packets into their parts or
    // reading ours; a barrier makes release of the windows safe.
    try {
      barrier(world());
    } catch (...) {
    }
    close_channel(channel_);
  }
  std::lock_guard g(lock());
  registry().erase(id_);
}

bool assembly_engine::usable() const noexcept {
  return runtime_up() && generation_ == runtime_generation() && alive_ == alive_magic;
}

void assembly_engine::require_usable(const char* what) const {
  if (!runtime_up())
    throw not_initialized(std::string(shape_.name) + "::" + what +
                          ": the runtime is not initialized (or already finalized)");
  if (generation_ != runtime_generation())
    throw not_initialized(std::string(shape_.name) + "::" + what +
                          ": it was made under a runtime that has been finalized; objects do not carry over "
                          "to a new init()");
  if (alive_ != alive_magic) throw error(std::string(shape_.name) + "::" + what + ": it has been destroyed");
}

void assembly_engine::agree_member(const char* what, std::exception_ptr bad,
                                   std::initializer_list<collective_arg> args) const {
  std::vector<collective_arg> all{{"object", std::int64_t(id_)}};
  all.insert(all.end(), args.begin(), args.end());
  const std::string name = std::string(shape_.name) + "::" + what;
  agree(name.c_str(), bad, all);
}

std::byte* assembly_engine::local_bytes(const char* what) const {
  require_usable(what);
  return block_.local() + header_bytes;
}

// ---- messages ---------------------------------------------------------------------------

void assembly_engine::on_message(int source, std::span<const std::byte> payload) {
  std::uint32_t hdr[2];
  if (payload.size() < sizeof hdr)
    throw error("accrete::assembly: truncated message from rank " + std::to_string(source));
  std::memcpy(hdr, payload.data(), sizeof hdr);
  by_id(hdr[0], source).receive(source, hdr[1], payload.subspan(sizeof hdr));
}

assembly_engine& assembly_engine::by_id(std::uint32_t id, int source) {
  auto it = registry().find(id);
  if (it == registry().end())
    throw error("accrete::assembly: message from rank " + std::to_string(source) + " for unknown matrix id " +
                std::to_string(id));
  assembly_engine& m = *it->second;
  if (m.alive_ != alive_magic)
    throw error(std::string(m.shape_.name) + ": message from rank " + std::to_string(source) +
                " arrived after the matrix was destroyed (updates after the last commit?)");
  return m;
}

void assembly_engine::receive(int source, std::uint32_t round, std::span<const std::byte> packets) {
  const std::uint32_t open = std::uint32_t(open_);
  if (active_ && round == open) {
    {
      scope_timer t{stats_.t_apply};
      apply_packets(packets);
    }
    ++received_;
    return;
  }
  // A sender can be at most one round ahead: it cannot finish a commit
  // this process has not entered.
  if (round != open && round != open + 1)
    throw error(std::string(shape_.name) + ": message of round " + std::to_string(round) + " from rank " +
                std::to_string(source) + " arrived in round " + std::to_string(open) + " (corrupt message?)");
  held_.push_back({source, round, std::vector<std::byte>(packets.begin(), packets.end())});
}

void assembly_engine::log_spills(std::span<const spill> s) {
  std::lock_guard<std::mutex> g(spill_lock_);
  spills_.insert(spills_.end(), s.begin(), s.end());
}

void assembly_engine::apply_packets(std::span<const std::byte> p) {
  stats_.packets_received += for_each_packet(p, shape_.elem_size, shape_.lrows, shape_.lcols,
                                             [&](const packet_view& v) { apply_(*this, v); });
}

void assembly_engine::counted_in_place(std::size_t elements, bool new_update) {
  if (new_update) ++stats_.updates;
  ++updates_since_commit_;
  stats_.elements += elements;
  ++stats_.direct_packets;
}

void assembly_engine::applied_in_place(std::size_t elements) {
  exchange_->updated(*this, elements);
}

std::size_t assembly_engine::held_messages() const {
  std::lock_guard g(lock());
  return held_.size();
}

// ---- rounds -----------------------------------------------------------------------------

void assembly_engine::reopen_locked() {
  open_ = round_.load(std::memory_order_relaxed);
  publish_open();
  if (!active_ || held_.empty()) return;
  auto held = std::move(held_);
  held_.clear();
  for (auto& h : held) receive(h.source, h.round, h.packets);
}

void assembly_engine::reopen() {
  require_usable("reopen");
  if (in_commit_) return;  // a commit opens its own round when it starts
  std::lock_guard g(lock());
  if (open_ != round_) reopen_locked();
}

void assembly_engine::check_timeout(double start, const char* what) {
  // ACCRETE_COMMIT_TIMEOUT, else ACCRETE_COLLECTIVE_TIMEOUT (a commit is a
  // collective): read once.
  static const double commit_limit = env_seconds("ACCRETE_COMMIT_TIMEOUT").value_or(0.0);
  const double limit = commit_limit > 0 ? commit_limit : collective_timeout();
  if (limit <= 0 || now() - start < limit) return;
  // Name the processes that have not entered this commit. Node peers'
  // epochs are read from shared memory; a remote peer that does not answer
  // an RMA read within a second is not making MPI progress, so it cannot be
  // waiting in this commit either.
  std::string missing, silent;
  const std::uint64_t mine = epoch();
  for (int w = 0; w < world_size(); ++w) {
    std::uint64_t e = 0;
    if (!block_.try_read(w, header_bytes - 64, &e, sizeof e, 1.0))
      silent += (silent.empty() ? "" : ", ") + std::to_string(w);
    else if (e < mine)
      missing += (missing.empty() ? "" : ", ") + std::to_string(w);
  }
  std::string who = missing;
  if (!silent.empty()) who += (who.empty() ? "" : "; ") + std::string("not answering (likely not in it): ") + silent;
  std::fprintf(stderr,
               "accrete: convergent_matrix %s on rank %d timed out after %.1f s (%s); "
               "processes not in this commit: %s\n",
               what, world_rank(), limit, commit_limit > 0 ? "ACCRETE_COMMIT_TIMEOUT" : "ACCRETE_COLLECTIVE_TIMEOUT",
               who.empty() ? "(none: every process entered it; messages are missing)" : who.c_str());
  std::fflush(stderr);
  world_abort(3);
}

void assembly_engine::wait(request& r, double start, const char* what) {
  unsigned spins = 0;
  for (;;) {
    bool done = false;
    {
      std::lock_guard g(lock());
      done = r.test();
    }
    if (done) return;
    // Without the lock: callbacks run here may call update().
    user_progress();
    idle_backoff(spins);
    check_timeout(start, what);
  }
}

void assembly_engine::barrier_wait(double start) {
  block_.sync();
  request b;
  {
    std::lock_guard g(lock());
    b = world_ibarrier(channel_);
  }
  wait(b, start, "commit");
  block_.sync();
}

void assembly_engine::commit() {
  require_usable("commit");
  if (in_commit_)
    throw error(std::string(shape_.name) +
                "::commit: called from a callback that a commit of the same matrix is running");
  in_commit_ = true;
  struct leave {
    bool& f;
    ~leave() { f = false; }
  } leave_commit{in_commit_};
  const double start = now();
  check_timeout(start, "commit");  // reads ACCRETE_COMMIT_TIMEOUT: a bad value fails every commit
  scope_timer t{stats_.t_wait};
  {
    std::lock_guard g(lock());
    ++epoch();
    // This process starts the round being committed (if it had not yet):
    // held contributions of this round are applied now.
    if (open_ != round_) reopen_locked();
    block_.sync();
    exchange_->close_round(*this);
    // From here on, updates (from callbacks run below) are next round's.
    round_.fetch_add(1, std::memory_order_relaxed);
    updates_since_commit_ = 0;
  }
  // When commit returns anywhere, every part is complete.
  exchange_->deliver(*this, start);
  block_.sync();
  if (!shape_.element_storage) {
    // The structure's own elements are read only by their owner: settling
    // them (and its log) needs no barrier. Messages of the next round stay
    // held until this process reopens.
    std::lock_guard g(lock());
    settle_(*this);
  } else if (shape_.reproducible) {
    // Every contribution of the round is in the elements or the log now;
    // settle the log before any commit returns (a process leaving commit
    // may read a peer's elements at once).
    settle_(*this);
    barrier_wait(start);
  }
}

void assembly_engine::reset() {
  require_usable("reset");
  if (in_commit_)
    throw error(std::string(shape_.name) + "::reset: called from a callback that a commit is running");
  // Updates not yet committed would race with the zeroing: refuse together.
  const std::string what = std::string(shape_.name) + "::reset";
  const std::int64_t first = world_min(updates_since_commit_ ? world_rank() : INT_MAX, what.c_str());
  if (first != INT_MAX)
    throw collective_misuse(std::string(shape_.name) + "::reset: rank " + std::to_string(first) +
                            " issued updates since its last commit started; reset() must come between a commit "
                            "and the next round's updates");
  std::byte* base = block_.local() + header_bytes;  // usable: checked on entry
  const std::size_t esize = shape_.elem_size;
  if (!shape_.element_storage)
    clear_(*this);
  else if (shape_.lrows > 0)
    for (std::int64_t c = 0; c < shape_.lcols; ++c)
      std::memset(base + std::size_t(c) * std::size_t(shape_.lld) * esize, 0, std::size_t(shape_.lrows) * esize);
  // No contribution of the next round existed anywhere (checked above);
  // peers may start one once they leave this barrier, after our zeroing.
  barrier(world());
  std::lock_guard g(lock());
  reopen_locked();
}

assembly_stats assembly_engine::stats() const {
  require_usable("stats");
  std::lock_guard g(lock());
  return stats_;
}

void assembly_engine::reset_stats() {
  require_usable("reset_stats");
  std::lock_guard g(lock());
  stats_ = assembly_stats{};
}

}  // namespace accrete::detail
