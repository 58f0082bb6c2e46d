#include "accrete/team.hpp"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

#include "accrete/collectives.hpp"
#include "accrete/detail/backend.hpp"
#include "accrete/detail/rpc_runtime.hpp"
#include "accrete/error.hpp"
#include "accrete/progress.hpp"
#include "accrete/promise.hpp"
#include "backend/mpi/state.hpp"

namespace accrete {
namespace {
std::unique_ptr<team> world_team, node_team;
// The caller's live teams by id (team_id::here). A team enters when it gets
// its id and leaves when it is destroyed or moved from.
std::unordered_map<std::uint64_t, team*> live_teams;

// team_id::when_here's promises, by id, until the caller has that team.
std::unordered_map<std::uint64_t, std::vector<promise<team&>>> team_waiters;

void forget(std::uint64_t key, const team* t) noexcept {
  auto it = live_teams.find(key);
  if (it != live_teams.end() && it->second == t) live_teams.erase(it);
}

// Fulfils the waiters of `key` with the team now registered under it (a
// team may have moved since it was registered: look it up now).
void resolve_waiters(std::uint64_t key) {
  auto w = team_waiters.find(key);
  auto t = live_teams.find(key);
  if (w == team_waiters.end() || t == live_teams.end()) return;
  std::vector<promise<team&>> ps = std::move(w->second);
  team_waiters.erase(w);
  for (auto& p : ps) {
    p.fulfill_result(*t->second);
    p.finalize();
  }
}

void enroll(std::uint64_t key, team* t) {
  live_teams[key] = t;
  // At user-level progress, as the specification's when_here promises, and
  // after a split's result has reached its final place.
  if (team_waiters.count(key)) detail::defer([key] { resolve_waiters(key); });
}
}  // namespace

namespace detail {
struct team_access {
  static void set_key(team& t, std::uint64_t k) noexcept { t.key_ = k; }
  static std::uint64_t key(const team& t) noexcept { return t.key_; }
  static const std::vector<int>& members(const team& t) noexcept { return t.world_ranks_; }
  static std::uint64_t next_split(const team& t) noexcept { return t.splits_++; }
};

namespace {
std::uint64_t mix(std::uint64_t a, std::uint64_t b) noexcept {
  std::uint64_t z = a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return (z ^ (z >> 31)) | 2;  // never 0 (unused) or 1 (the world)
}
}  // namespace

void team_init() {
  world_team = std::make_unique<team>(world_comm(), false);
  node_team = std::make_unique<team>(node_comm(), false);
  team_access::set_key(*world_team, world_team_key);
  // Every member of a node names it by its first world rank.
  team_access::set_key(*node_team, mix(2, std::uint64_t(node_team->to_world(0))));
  live_teams[team_access::key(*world_team)] = world_team.get();
  live_teams[team_access::key(*node_team)] = node_team.get();
}

collective_ticket team_collective_begin(const char* what, const team& t, bool blocking) {
  const auto& m = team_access::members(t);
  const std::uint64_t key = team_access::key(t);
  return collective_begin(what, key, key == world_team_key ? std::span<const int>() : std::span<const int>(m),
                          blocking);
}
void team_finalize() {
  live_teams.clear();
  team_waiters.clear();
  world_team.reset();
  node_team.reset();
}
}  // namespace detail

team::team(MPI_Comm comm, bool owned) : comm_(comm), owned_(owned) {
  MPI_Comm_rank(comm_, &rank_);
  int n;
  MPI_Comm_size(comm_, &n);
  MPI_Group g, wg;
  MPI_Comm_group(comm_, &g);
  MPI_Comm_group(detail::world_comm(), &wg);
  std::vector<int> mine(n);
  for (int i = 0; i < n; ++i) mine[i] = i;
  world_ranks_.resize(n);
  MPI_Group_translate_ranks(g, n, mine.data(), wg, world_ranks_.data());
  MPI_Group_free(&g);
  MPI_Group_free(&wg);
  by_world_.resize(std::size_t(n));
  for (int i = 0; i < n; ++i) by_world_[std::size_t(i)] = {world_ranks_[std::size_t(i)], i};
  std::sort(by_world_.begin(), by_world_.end());
}

team::team(team&& o) { *this = std::move(o); }

team& team::operator=(team&& o) {
  if (this != &o) {
    if (&o == world_team.get() || &o == node_team.get() || this == world_team.get() || this == node_team.get())
      throw error("accrete::team: world() and local_team() cannot be moved from or assigned to");
    forget(key_, this);
    forget(o.key_, &o);
    if (owned_ && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    comm_ = std::exchange(o.comm_, MPI_COMM_NULL);
    owned_ = std::exchange(o.owned_, false);
    rank_ = std::exchange(o.rank_, -1);
    world_ranks_ = std::move(o.world_ranks_);
    by_world_ = std::move(o.by_world_);
    key_ = std::exchange(o.key_, 0);
    splits_ = std::exchange(o.splits_, 0);
    if (key_ != 0 && comm_ != MPI_COMM_NULL) enroll(key_, this);
  }
  return *this;
}

team::~team() {
  forget(key_, this);
  if (owned_ && comm_ != MPI_COMM_NULL) {
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin) MPI_Comm_free(&comm_);
  }
}

int team::rank_me() const {
  detail::require_initialized("team::rank_me()");
  return rank_;
}
int team::rank_n() const {
  detail::require_initialized("team::rank_n()");
  return int(world_ranks_.size());
}
MPI_Comm team::mpi_comm() const { return comm_; }

int team::to_world(int r) const {
  if (r < 0 || r >= int(world_ranks_.size()))
    throw std::out_of_range("accrete::team::to_world: team rank " + std::to_string(r) + " out of range [0, " +
                            std::to_string(world_ranks_.size()) + ")");
  return world_ranks_[r];
}

int team::from_world(int w) const {
  const auto it = std::lower_bound(by_world_.begin(), by_world_.end(), std::pair<int, int>(w, 0));
  return it != by_world_.end() && it->first == w ? it->second : -1;
}

team team::split(int color, int key) const {
  detail::require_initialized("team::split()");
  detail::require_master("accrete::team::split");  // before next_split counts this call
  if (color < 0 && color != MPI_UNDEFINED)
    throw std::invalid_argument("accrete::team::split: negative color " + std::to_string(color));
  const std::uint64_t nth = detail::team_access::next_split(*this);
  // MPI_Comm_split blocks inside MPI: a timed barrier first, so that a
  // member that never splits is named rather than waited for. It makes
  // user-level progress, as barrier() does (UPC++: team constructors have
  // progress level user): a member that reaches split before answering an
  // RPC another member waits for still answers it.
  {
    const auto t = detail::team_collective_begin("accrete::team::split", *this, true);
    MPI_Request r;
    detail::ibarrier(comm_, &r);
    detail::wait_request(&r, t, true);
    detail::collective_end(t);
  }
  MPI_Comm c;
  ACCRETE_MPI(MPI_Comm_split(comm_, color, key, &c));
  if (c == MPI_COMM_NULL) return team();
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  team out(c, true);
  out.key_ = detail::mix(detail::mix(key_, std::uint64_t(std::uint32_t(color))), nth);
  enroll(out.key_, &out);
  return out;
}

team team::create_from(const std::vector<int>& ranks) const {
  detail::require_initialized("team::create()");
  detail::require_master("accrete::team::create");
  const int me = rank_me(), n = rank_n();
  std::string bad;
  int key = -1;
  std::vector<char> seen(std::size_t(n), 0);
  for (std::size_t i = 0; i < ranks.size() && bad.empty(); ++i) {
    const int r = ranks[i];
    if (r < 0 || r >= n)
      bad =
          "rank " + std::to_string(r) + " (entry " + std::to_string(i) + ") is outside [0, " + std::to_string(n) + ")";
    else if (seen[std::size_t(r)]++)
      bad = "rank " + std::to_string(r) + " is listed twice";
    else if (r == me)
      key = int(i);
  }
  if (bad.empty() && !ranks.empty() && key < 0)
    bad = "the caller's own rank " + std::to_string(me) + " is not in the list it passed";
  // Every member learns whether any list was bad before anyone splits, so
  // a bad list fails everywhere instead of leaving the others waiting.
  int mine_bad = bad.empty() ? 0 : 1, any_bad = 0;
  {
    const auto t = detail::team_collective_begin("accrete::team::create", *this, true);
    MPI_Request r;
    ACCRETE_MPI(MPI_Iallreduce(&mine_bad, &any_bad, 1, MPI_INT, MPI_MAX, comm_, &r));
    detail::wait_request(&r, t, true);  // user-level progress, as split's
    detail::collective_end(t);
  }
  if (!bad.empty()) throw std::invalid_argument("accrete::team::create: " + bad);
  if (any_bad) throw error("accrete::team::create: another member passed a bad list (it says which)");
  const int color = ranks.empty() ? MPI_UNDEFINED : *std::min_element(ranks.begin(), ranks.end());
  return split(color, key < 0 ? 0 : key);
}

void team::destroy(entry_barrier) {
  detail::require_initialized("team::destroy()");
  detail::require_master("accrete::team::destroy");
  if (this == world_team.get() || this == node_team.get())
    throw error("accrete::team::destroy: world() and local_team() live until finalize()");
  if (comm_ == MPI_COMM_NULL) return;  // empty already: nothing to release
  barrier(*this);
  forget(key_, this);
  if (owned_) MPI_Comm_free(&comm_);
  comm_ = MPI_COMM_NULL;
  owned_ = false;
  rank_ = -1;
  world_ranks_.clear();
  by_world_.clear();
  key_ = 0;
}

team& team_id::here() const {
  detail::require_initialized("team_id::here()");
  auto it = live_teams.find(key_);
  if (key_ == 0 || it == live_teams.end())
    throw error(
        "accrete::team_id::here: this process has no live team with that id (not a member, "
        "destroyed, or not split yet)");
  return *it->second;
}

future<team&> team_id::when_here() const {
  detail::require_initialized("team_id::when_here()");
  if (key_ == 0) throw error("accrete::team_id::when_here: the null team_id names no team");
  promise<team&> p;
  future<team&> f = p.get_future();
  if (auto it = live_teams.find(key_); it != live_teams.end()) {
    p.fulfill_result(*it->second);
    p.finalize();
  } else {
    team_waiters[key_].push_back(std::move(p));
  }
  return f;
}

team& world() {
  detail::require_initialized("world()");
  return *world_team;
}
team& local_team() {
  detail::require_initialized("local_team()");
  return *node_team;
}

void barrier(const team& t) {
  detail::require_initialized("barrier()");
  if (t.mpi_comm() == MPI_COMM_NULL) throw error("accrete::barrier: empty team (moved-from or not a member)");
  // A team of one waits for nobody and synchronises with nobody: no other
  // process can be in (or miss) its collectives, so the watch's per-team
  // count and "current call" record have no reader, and there is no other
  // process whose accesses a memory fence would order against ours. A
  // stencil calls this right after a kernel that streamed the caches and
  // the TLB, where a fence waits for the kernel's stores to drain (1.4 us
  // here) and every page touched costs a page walk (0.6 us on this VM):
  // with the watch and memory_sync() (a fence and MPI_Win_sync), barrier()
  // at P = 1 took 1.7-5.3 us there, three MPI_Barrier calls 1.4-2.2 us.
  if (t.rank_n() == 1) {
    detail::require_master("accrete::barrier");
    return;
  }
  const auto ticket = detail::team_collective_begin("accrete::barrier", t, true);
  // The world on one node and the node team synchronise through shared
  // memory; other teams through MPI_Ibarrier.
  if (t.mpi_comm() == detail::node_comm() || (t.mpi_comm() == detail::world_comm() && detail::world_on_one_node())) {
    detail::node_barrier(&ticket);
    detail::collective_end(ticket);
    return;
  }
  detail::memory_sync();
  MPI_Request r;
  detail::ibarrier(t.mpi_comm(), &r);
  unsigned spins = 0;
  for (;;) {
    int done = 0;
    ACCRETE_MPI(MPI_Test(&r, &done, MPI_STATUS_IGNORE));
    if (done) break;
    detail::user_progress();
    detail::idle_backoff(spins);
    detail::collective_check(ticket);
  }
  detail::collective_end(ticket);
  detail::memory_sync();
}

// ---- dist_object ids -----------------------------------------------------------------
// A dist_object is named by (team id, object number). Both are cached on
// the team's communicator, so every team (and copy) of the same processes
// agrees without messages.

namespace detail {
namespace {
// Cached on a team's communicator: the team's id and its object counter.
struct team_ids {
  std::uint64_t team;
  std::uint64_t next_object;
};

int delete_team_ids(MPI_Comm, int, void* attr, void*) {
  delete static_cast<team_ids*>(attr);
  return MPI_SUCCESS;
}

std::uint64_t next_team_id = 1;  // 0 is the world team
int team_keyval = MPI_KEYVAL_INVALID;
}  // namespace

dist_key dist_next_key(const team& t) {
  require_initialized("dist_object construction");
  require_master("accrete::dist_object");
  MPI_Comm comm = t.mpi_comm();
  if (comm == MPI_COMM_NULL) throw error("accrete::dist_object: the team is empty (moved-from or not a member)");
  if (team_keyval == MPI_KEYVAL_INVALID)
    ACCRETE_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &delete_team_ids, &team_keyval, nullptr));
  void* attr = nullptr;
  int found = 0;
  ACCRETE_MPI(MPI_Comm_get_attr(comm, team_keyval, &attr, &found));
  team_ids* ids = found ? static_cast<team_ids*>(attr) : nullptr;
  if (!ids) {
    std::uint64_t id = 0;
    if (comm != world_comm()) {
      // Every member proposes its next unused id; the maximum is unused on
      // all of them, and each then moves past it.
      std::uint64_t mine = next_team_id;
      MPI_Request req;
      const auto ticket = team_collective_begin("accrete::dist_object (first on its team)", t, true);
      ACCRETE_MPI(MPI_Iallreduce(&mine, &id, 1, MPI_UINT64_T, MPI_MAX, comm, &req));
      wait_request(&req, ticket, true);
      collective_end(ticket);
      next_team_id = id + 1;
    }
    ids = new team_ids{id, 1};  // object 0 of the world team would be the null dist_id
    int rc = MPI_Comm_set_attr(comm, team_keyval, ids);
    if (rc != MPI_SUCCESS) {
      delete ids;
      mpi_failed("MPI_Comm_set_attr", rc);
    }
  }
  return dist_key{ids->team, ids->next_object++};
}

}  // namespace detail

}  // namespace accrete
