// Irregular and regular RMA: fragment lists whose boundaries do not line
// up, overlapping source fragments, empty fragments, both directions, both
// MPI methods and the node-local path, remote completion; and every
// validation error (naming the fragment), checked before any data moves.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "accrete/accrete.hpp"
#include "accrete/rma_irregular.hpp"
#include "exchange.hpp"

using namespace accrete;

namespace {

using u64 = std::uint64_t;
constexpr std::size_t kArr = 2048;

u64 pat(int salt, std::size_t i) { return (u64(salt) << 32) ^ (i * 2654435761u) ^ 0xa5a5; }

struct fixture {
  global_ptr<u64> a, b;
  std::vector<global_ptr<u64>> all_a, all_b;
  fixture() : a(new_array<u64>(kArr)), b(new_array<u64>(kArr)), all_a(exchange(a)), all_b(exchange(b)) {}
  ~fixture() {
    barrier();
    delete_array(a);
    delete_array(b);
  }
  // Each array is used by exactly one origin: a by the predecessor, b by its owner.
  std::vector<global_ptr<u64>> targets() const { return {all_a[(rank_me() + 1) % rank_n()], all_b[rank_me()]}; }
};

std::vector<u64> read_all(global_ptr<u64> g) {
  std::vector<u64> v(kArr);
  rget(g, v.data(), kArr).wait();
  return v;
}
void init_remote(global_ptr<u64> g, int salt) {
  std::vector<u64> v(kArr);
  for (std::size_t i = 0; i < kArr; ++i) v[i] = pat(salt, i);
  rput(v.data(), g, kArr).wait();
}

// (offset, length) lists in elements; src may overlap, dst may not.
struct frag_case {
  std::string name;
  std::vector<std::pair<std::size_t, std::size_t>> src, dst;
};

std::vector<frag_case> cases() {
  return {
      {"misaligned", {{0, 3}, {10, 1}, {20, 7}, {40, 5}}, {{100, 4}, {90, 6}, {300, 2}, {7, 4}}},
      {"overlapping-src", {{5, 10}, {8, 10}, {5, 3}}, {{0, 23}}},
      {"empty-frags", {{0, 0}, {1, 4}, {9, 0}, {30, 2}}, {{0, 0}, {50, 1}, {60, 5}, {70, 0}}},
      {"many-small", {}, {}},
      {"one-big", {{0, 1500}}, {{200, 700}, {1000, 800}}},
      {"all-empty", {{3, 0}}, {}},
      {"none", {}, {}},
  };
}

frag_case many_small() {
  frag_case c{"many-small", {}, {}};
  for (std::size_t i = 0; i < 200; ++i) c.src.push_back({i * 5 % 997, 1 + i % 3});
  std::size_t total = 0;
  for (auto& f : c.src) total += f.second;
  for (std::size_t pos = 0, i = 0; total; ++i) {
    std::size_t n = std::min<std::size_t>(total, 1 + i % 4);
    c.dst.push_back({pos, n});
    pos += n + 2;
    total -= n;
  }
  return c;
}

const detail::noncontig_method kMethods[] = {detail::noncontig_method::automatic, detail::noncontig_method::datatype,
                                             detail::noncontig_method::batched};
struct method_guard {
  ~method_guard() { detail::set_noncontig_method(detail::noncontig_method::automatic); }
};

}  // namespace

TEST(Irregular, PutAndGetMatchReference) {
  fixture fx;
  method_guard mg;
  for (auto m : kMethods) {
    detail::set_noncontig_method(m);
    for (auto& g : fx.targets()) {
      for (auto c : cases()) {
        if (c.name == "many-small") c = many_small();
        SCOPED_TRACE(c.name + " target " + std::to_string(g.where()) + " method " + std::to_string(int(m)));
        std::vector<u64> local(kArr);
        for (std::size_t i = 0; i < kArr; ++i) local[i] = pat(50 + rank_me(), i);
        // Reference: the source stream laid into the destination fragments.
        std::vector<u64> stream, want(kArr);
        for (auto& f : c.src)
          for (std::size_t i = 0; i < f.second; ++i) stream.push_back(local[f.first + i]);
        for (std::size_t i = 0; i < kArr; ++i) want[i] = pat(9, i);
        std::size_t k = 0;
        for (auto& f : c.dst)
          for (std::size_t i = 0; i < f.second; ++i) want[f.first + i] = stream[k++];
        ASSERT_EQ(k, stream.size());

        init_remote(g, 9);
        std::vector<std::pair<const u64*, std::size_t>> s;
        std::vector<std::pair<global_ptr<u64>, std::size_t>> d;
        for (auto& f : c.src) s.push_back({local.data() + f.first, f.second});
        for (auto& f : c.dst) d.push_back({g + std::ptrdiff_t(f.first), f.second});
        rput_irregular(s.begin(), s.end(), d.begin(), d.end()).wait();
        EXPECT_EQ(read_all(g), want);

        // Get direction: the remote fragments (now holding `want`) back into
        // local fragments laid out like the source ones (without overlap:
        // shift each fragment to its own place).
        std::vector<u64> back(kArr, 1), back_want(kArr, 1);
        std::vector<std::pair<global_ptr<u64>, std::size_t>> gs;
        std::vector<std::pair<u64*, std::size_t>> ld;
        std::size_t pos = 0;
        k = 0;
        for (auto& f : c.dst) gs.push_back({g + std::ptrdiff_t(f.first), f.second});
        for (auto& f : c.src) {
          ld.push_back({back.data() + pos, f.second});
          for (std::size_t i = 0; i < f.second; ++i) back_want[pos + i] = stream[k++];
          pos += f.second + 1;
        }
        promise<> p;
        rget_irregular(gs.begin(), gs.end(), ld.begin(), ld.end(), p);
        p.finalize().wait();
        EXPECT_EQ(back, back_want);
      }
    }
  }
}

TEST(Irregular, RegularFragments) {
  fixture fx;
  method_guard mg;
  for (auto m : kMethods) {
    detail::set_noncontig_method(m);
    for (auto& g : fx.targets()) {
      SCOPED_TRACE("target " + std::to_string(g.where()));
      init_remote(g, 4);
      std::vector<u64> local(kArr);
      for (std::size_t i = 0; i < kArr; ++i) local[i] = pat(60 + rank_me(), i);
      // 6 source runs of 4 (stride 10) into 8 destination runs of 3 (stride 7).
      std::vector<const u64*> s;
      std::vector<global_ptr<u64>> d;
      for (int i = 0; i < 6; ++i) s.push_back(local.data() + 10 * i);
      for (int i = 0; i < 8; ++i) d.push_back(g + 7 * i + 1);
      rput_regular(s.begin(), s.end(), 4, d.begin(), d.end(), 3).wait();
      std::vector<u64> stream, want(kArr);
      for (auto p : s)
        for (int i = 0; i < 4; ++i) stream.push_back(p[i]);
      for (std::size_t i = 0; i < kArr; ++i) want[i] = pat(4, i);
      for (int r = 0, k = 0; r < 8; ++r)
        for (int i = 0; i < 3; ++i) want[7 * r + 1 + i] = stream[k++];
      EXPECT_EQ(read_all(g), want);
      // And back: 3 runs of 8 from the destination layout's start.
      std::vector<global_ptr<u64>> gs{g + 1, g + 8, g + 15};
      std::vector<u64> back(30, 0), bw(30, 0);
      std::vector<u64*> ld{back.data(), back.data() + 10, back.data() + 20};
      rget_regular(gs.begin(), gs.end(), 8, ld.begin(), ld.end(), 8).wait();
      for (int r = 0; r < 3; ++r)
        for (int i = 0; i < 8; ++i) bw[10 * r + i] = want[1 + 7 * r + i];
      EXPECT_EQ(back, bw);
    }
  }
}

namespace {
int arrivals = 0;
void arrived() { ++arrivals; }
}  // namespace

TEST(Irregular, RemoteCompletion) {
  fixture fx;
  method_guard mg;
  for (auto m : kMethods) {
    detail::set_noncontig_method(m);
    arrivals = 0;
    barrier();
    auto g = fx.all_a[(rank_me() + 1) % rank_n()];
    std::vector<u64> v{u64(rank_me()) + 1, 2, 3, 4, 5};
    std::vector<std::pair<const u64*, std::size_t>> s{{v.data(), 2}, {v.data() + 2, 3}};
    std::vector<std::pair<global_ptr<u64>, std::size_t>> d{{g + 100, 1}, {g + 10, 4}};
    auto f = rput_irregular(s.begin(), s.end(), d.begin(), d.end(), remote_cx::as_rpc(arrived));
    unsigned spins = 0;
    while (arrivals < 1) {
      progress();
      if (arrivals < 1) detail::idle_backoff(spins);
    }
    f.wait();
    detail::memory_sync();
    int pred = (rank_me() + rank_n() - 1) % rank_n();
    u64* mine = fx.a.local();
    EXPECT_EQ(mine[100], u64(pred) + 1);
    EXPECT_EQ(mine[10], 2u);
    EXPECT_EQ(mine[13], 5u);
    barrier();
  }
}

TEST(Irregular, ValidationErrorsNameTheFragmentAndMoveNothing) {
  fixture fx;
  for (auto& g : fx.targets()) {
    init_remote(g, 8);
    const auto before = read_all(g);
    std::vector<u64> local(kArr, 3);
    using SF = std::vector<std::pair<const u64*, std::size_t>>;
    using DF = std::vector<std::pair<global_ptr<u64>, std::size_t>>;
    auto expect_error = [&](auto&& call, const std::string& n1, const std::string& n2) {
      try {
        call();
        ADD_FAILURE() << "no exception; expected " << n1;
      } catch (const bad_global_ptr& x) {
        std::string w = x.what();
        EXPECT_NE(w.find(n1), std::string::npos) << w;
        EXPECT_NE(w.find(n2), std::string::npos) << w;
      }
    };
    // Source longer: 3+4+5 = 12 vs 3+6 = 9: source fragment 2 from its element 2.
    SF s{{local.data(), 3}, {local.data() + 3, 4}, {local.data() + 9, 5}};
    DF d{{g, 3}, {g + 10, 6}};
    expect_error([&] { rput_irregular(s.begin(), s.end(), d.begin(), d.end()); }, "source fragment 2",
                 "from its element 2");
    // Destination longer.
    DF d2{{g, 3}, {g + 10, 6}, {g + 20, 5}};
    expect_error([&] { rput_irregular(s.begin(), s.end(), d2.begin(), d2.end()); }, "destination fragment 2",
                 "from its element 3");
    // Get: remote side longer.
    std::vector<std::pair<u64*, std::size_t>> l{{local.data(), 12}};
    expect_error([&] { rget_irregular(d2.begin(), d2.end(), l.begin(), l.end()); }, "source fragment 2",
                 "source 14 elements, destination 12");
    // Fragment past the segment.
    auto far = reinterpret_pointer_cast<u64>(reinterpret_pointer_cast<std::byte>(g) +
                                             std::ptrdiff_t(segment_size() - g.offset() - 16));
    DF d3{{g, 3}, {far, 9}};
    SF s3{{local.data(), 12}};
    expect_error([&] { rput_irregular(s3.begin(), s3.end(), d3.begin(), d3.end()); }, "destination fragment 1",
                 "runs past");
    // Null fragments.
    DF d4{{g, 3}, {global_ptr<u64>(), 9}};
    expect_error([&] { rput_irregular(s3.begin(), s3.end(), d4.begin(), d4.end()); }, "destination fragment 1", "null");
    SF s5{{local.data(), 3}, {nullptr, 9}};
    DF d5{{g, 12}};
    expect_error([&] { rput_irregular(s5.begin(), s5.end(), d5.begin(), d5.end()); }, "source fragment 1", "null");
    // Length overflow.
    SF s6{{local.data(), std::size_t(-1) / 4}};
    expect_error([&] { rput_irregular(s6.begin(), s6.end(), d5.begin(), d5.end()); }, "source fragment 0", "overflows");
    // Regular form with mismatched totals: 3 x 4 vs 2 x 5.
    std::vector<const u64*> rs{local.data(), local.data() + 4, local.data() + 8};
    std::vector<global_ptr<u64>> rd{g, g + 5};
    expect_error([&] { rput_regular(rs.begin(), rs.end(), 4, rd.begin(), rd.end(), 5); }, "source fragment 2",
                 "from its element 2");
    // Fragments on two ranks.
    if (rank_n() > 1) {
      DF d7{{g, 6}, {fx.all_b[(g.where() + 1) % rank_n()], 6}};
      expect_error([&] { rput_irregular(s3.begin(), s3.end(), d7.begin(), d7.end()); }, "destination fragment 1",
                   "is on rank");
    }
    EXPECT_EQ(read_all(g), before);
  }
}
