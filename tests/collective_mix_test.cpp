// Non-blocking collectives where they combine: barriers, broadcasts (of
// values, of serialized strings, of buffers large and small) and reductions
// (built-in and user operators, values and arrays, to all and to one) on
// several overlapping teams at once: the world, the local team, and splits
// whose ranks run in other orders. Each team sees its collectives in one
// order on every member, as the UPC++ specification requires, but every
// process interleaves the teams differently and keeps them all in flight
// together, with RPCs crossing them, before it waits for any. Every result
// is checked exactly. Written against <upcxx/upcxx.hpp>.
#include <upcxx/upcxx.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "test_random.hpp"

namespace {

using accrete_tests::mix;
using accrete_tests::rng;

enum class kind {
  barrier,
  bcast_value,
  bcast_string,
  bcast_buffer,
  reduce_all,
  reduce_all_array,
  reduce_one,
  reduce_user
};
constexpr int nkinds = 8;

struct coll {
  int team = 0;   // index into the teams
  int index = 0;  // its place in the team's sequence of the phase
  kind k = kind::barrier;
  int root = 0;  // a team rank
  std::size_t count = 1;
  std::uint64_t salt = 0;
};

// Member m's input to collective c, element i.
std::int64_t input(const coll& c, int world_rank, std::size_t i) {
  return std::int64_t(mix(c.salt ^ std::uint64_t(world_rank) << 32 ^ i) % 2000001) - 1000000;
}
std::string string_of(const coll& c, int world_rank) {
  const std::size_t len = std::size_t(mix(c.salt ^ std::uint64_t(world_rank)) % 3000);
  std::string s(len, ' ');
  for (std::size_t i = 0; i < len; ++i) s[i] = char('a' + mix(c.salt + i) % 26);
  return s;
}
// A commutative, associative user operator.
struct xor_mix {
  std::uint64_t operator()(std::uint64_t a, std::uint64_t b) const { return a ^ b; }
};

struct team_info {
  upcxx::team* t = nullptr;
  std::vector<int> members;  // world ranks by team rank, the same on every process
};

// What one collective left behind, and how to check it once it is done.
struct pending {
  upcxx::future<> done;
  std::function<void()> check;
};

class collective_mix {
 public:
  collective_mix() {
    const int n = upcxx::rank_n(), me = upcxx::rank_me();
    add(upcxx::world(), [&](int r) { return r; });
    teams_.push_back({&upcxx::local_team(), members_of(upcxx::local_team())});
    // Two splits whose ranks run in other orders than the world's.
    odd_even_ = upcxx::world().split(me % 2, n - me);
    halves_ = upcxx::world().split(me < (n + 1) / 2 ? 0 : 1, (me * 7) % n);
    teams_.push_back({&odd_even_, members_of(odd_even_)});
    teams_.push_back({&halves_, members_of(halves_)});
    // Marks a member puts into every member before a barrier: one slot per
    // (team, barrier, writer).
    marks_ = upcxx::new_array<int>(slots());
    std::fill(marks_.local(), marks_.local() + slots(), 0);
    upcxx::dist_object<upcxx::global_ptr<int>> d(marks_);
    for (int r = 0; r < n; ++r) all_marks_.push_back(d.fetch(r).wait());
    upcxx::barrier();
  }
  ~collective_mix() {
    upcxx::barrier();  // nobody puts marks any more
    upcxx::delete_array(marks_);
  }

  // Draws a phase's collectives on every team, then runs this process's
  // share in its own interleaving.
  void phase(std::uint64_t seed, int per_team, rng& mine) {
    const int me = upcxx::rank_me();
    ASSERT_LE(per_team, max_per_team);
    ++phase_;
    // The members of a team draw its sequence alike: from the seed, the
    // team's index and its first member (teams of one index differ from
    // node to node, or between the two halves of a split).
    std::vector<std::vector<coll>> seqs(teams_.size());
    for (std::size_t t = 0; t < teams_.size(); ++t) {
      rng g(mix(seed ^ (t + 1) * 0x1000193ull ^ std::uint64_t(teams_[t].members.front()) << 16));
      const int tn = int(teams_[t].members.size());
      for (int i = 0; i < per_team; ++i) {
        coll c;
        c.team = int(t);
        c.index = i;
        c.k = kind(g() % nkinds);
        c.root = int(g() % std::uint64_t(tn));
        c.count = g() % 4 == 0 ? std::size_t(1 + g() % 60000) : std::size_t(1 + g() % 20);
        c.salt = g();
        seqs[t].push_back(c);
      }
    }
    // This process's interleaving of its teams' sequences.
    std::vector<std::size_t> next(teams_.size(), 0);
    std::vector<pending> out;
    for (;;) {
      std::vector<std::size_t> open;
      for (std::size_t t = 0; t < teams_.size(); ++t)
        if (next[t] < seqs[t].size()) open.push_back(t);
      if (open.empty()) break;
      const std::size_t t = open[mine() % open.size()];
      out.push_back(start(seqs[t][next[t]++]));
      if (mine() % 3 == 0) {
        // An RPC across the teams, waited for later.
        const int to = int(mine() % std::uint64_t(upcxx::rank_n()));
        auto f = upcxx::rpc(
            to, [](int x) { return x * 3 + upcxx::rank_me(); }, me);
        out.push_back({f.then([to, me, this](int v) {
                         if (v != me * 3 + to) ++rpc_wrong_;
                       }),
                       [] {}});
      }
      if (mine() % 4 == 0) upcxx::progress();
    }
    for (auto& p : out) p.done.wait();
    for (auto& p : out) p.check();
    EXPECT_EQ(rpc_wrong_, 0);
    for (const auto& f : failures_) ADD_FAILURE() << f;
    failures_.clear();
  }

 private:
  template <class F>
  void add(upcxx::team& t, F&& world_rank_of) {
    team_info ti{&t, {}};
    for (int r = 0; r < t.rank_n(); ++r) ti.members.push_back(world_rank_of(r));
    teams_.push_back(ti);
  }
  static std::vector<int> members_of(upcxx::team& t) {
    std::vector<int> m;
    for (int r = 0; r < t.rank_n(); ++r) m.push_back(t[r]);
    return m;
  }

  void fail(const coll& c, const std::string& what) {
    failures_.push_back("team " + std::to_string(c.team) + ", kind " + std::to_string(int(c.k)) + ", root " +
                        std::to_string(c.root) + ", count " + std::to_string(c.count) + ": " + what);
  }

  pending start(const coll& c) {
    const team_info& ti = teams_[std::size_t(c.team)];
    upcxx::team& t = *ti.t;
    const int me = upcxx::rank_me();
    const int root_world = ti.members[std::size_t(c.root)];
    switch (c.k) {
      case kind::barrier: {
        // Before it enters, each member marks its slot in every member; once
        // the barrier is done here, every member's mark must be here.
        for (int m : ti.members) upcxx::rput(phase_, all_marks_[std::size_t(m)] + slot(c, me)).wait();
        return {upcxx::barrier_async(t), [=, this] {
                  for (int m : ti.members)
                    if (marks_.local()[slot(c, m)] != phase_)
                      return fail(c, "barrier done before member " + std::to_string(m) + " entered it");
                }};
      }
      case kind::bcast_value: {
        auto f = upcxx::broadcast(input(c, me, 0), c.root, t);
        auto got = std::make_shared<std::int64_t>();
        return {f.then([got](std::int64_t v) { *got = v; }), [=, this] {
                  if (*got != input(c, root_world, 0)) fail(c, "broadcast value differs");
                }};
      }
      case kind::bcast_string: {
        auto got = std::make_shared<std::string>();
        auto f = upcxx::broadcast(string_of(c, me), c.root, t);
        return {f.then([got](std::string s) { *got = std::move(s); }), [=, this] {
                  if (*got != string_of(c, root_world)) fail(c, "broadcast string differs");
                }};
      }
      case kind::bcast_buffer: {
        auto buf = std::make_shared<std::vector<std::int64_t>>(c.count);
        for (std::size_t i = 0; i < c.count; ++i) (*buf)[i] = input(c, me, i);
        auto f = upcxx::broadcast(buf->data(), c.count, c.root, t);
        return {f, [=, this] {
                  for (std::size_t i = 0; i < c.count; ++i)
                    if ((*buf)[i] != input(c, root_world, i)) return fail(c, "broadcast buffer differs");
                }};
      }
      case kind::reduce_all: {
        auto got = std::make_shared<std::int64_t>();
        auto f = upcxx::reduce_all(input(c, me, 0), upcxx::op_fast_add, t);
        return {f.then([got](std::int64_t v) { *got = v; }), [=, this] {
                  std::int64_t want = 0;
                  for (int m : ti.members) want += input(c, m, 0);
                  if (*got != want) fail(c, "sum differs");
                }};
      }
      case kind::reduce_all_array: {
        auto src = std::make_shared<std::vector<std::int64_t>>(c.count);
        auto dst = std::make_shared<std::vector<std::int64_t>>(c.count);
        for (std::size_t i = 0; i < c.count; ++i) (*src)[i] = input(c, me, i);
        auto f = upcxx::reduce_all(src->data(), dst->data(), c.count, upcxx::op_fast_max, t);
        // The check holds src too: it must live until the reduction is done.
        return {f, [=, this] {
                  for (std::size_t i = 0; i < c.count; ++i) {
                    std::int64_t want = input(c, ti.members[0], i);
                    for (int m : ti.members) want = std::max(want, input(c, m, i));
                    if ((*dst)[i] != want || (*src)[i] != input(c, me, i))
                      return fail(c, "array maximum differs at " + std::to_string(i));
                  }
                }};
      }
      case kind::reduce_one: {
        auto got = std::make_shared<std::int64_t>();
        auto f = upcxx::reduce_one(input(c, me, 0), upcxx::op_fast_min, c.root, t);
        return {f.then([got](std::int64_t v) { *got = v; }), [=, this] {
                  if (me != root_world) return;  // only the root's result is defined
                  std::int64_t want = input(c, ti.members[0], 0);
                  for (int m : ti.members) want = std::min(want, input(c, m, 0));
                  if (*got != want) fail(c, "minimum at the root differs");
                }};
      }
      case kind::reduce_user: {
        auto got = std::make_shared<std::uint64_t>();
        auto f = upcxx::reduce_all(std::uint64_t(input(c, me, 0)), xor_mix{}, t);
        return {f.then([got](std::uint64_t v) { *got = v; }), [=, this] {
                  std::uint64_t want = 0;
                  for (int m : ti.members) want ^= std::uint64_t(input(c, m, 0));
                  if (*got != want) fail(c, "user reduction differs");
                }};
      }
    }
    return {upcxx::make_future(), [] {}};
  }

  static constexpr int max_per_team = 64;
  std::size_t slots() const { return std::size_t(teams_.size() * max_per_team * std::size_t(upcxx::rank_n())); }
  std::size_t slot(const coll& c, int writer) const {
    return (std::size_t(c.team) * max_per_team + std::size_t(c.index)) * std::size_t(upcxx::rank_n()) +
           std::size_t(writer);
  }

  std::vector<team_info> teams_;
  upcxx::global_ptr<int> marks_;
  std::vector<upcxx::global_ptr<int>> all_marks_;
  int phase_ = 0;
  upcxx::team odd_even_, halves_;
  int rpc_wrong_ = 0;
  std::vector<std::string> failures_;
};

}  // namespace

TEST(CollectiveMix, OverlappingTeamsInFlightTogether) {
  collective_mix cm;
  rng mine(mix(0xc011 + std::uint64_t(upcxx::rank_me())));
  for (int ph = 0; ph < 20; ++ph) {
    cm.phase(0xabc0 + std::uint64_t(ph), 12, mine);
    // A failure would repeat in every later phase; stop together.
    if (upcxx::reduce_all(int(::testing::Test::HasFailure()), upcxx::op_fast_max).wait()) break;
  }
  upcxx::barrier();
}
