// Core runtime: teams, segments, global pointers, contiguous RMA, futures
// driven by real communication, MPI interoperability, and error reporting.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "accrete/accrete.hpp"
#include "exchange.hpp"

using namespace accrete;

namespace {
std::uint64_t pattern(int rank, std::size_t i, int salt) {
  return (std::uint64_t(rank) << 40) ^ (i * 2654435761u) ^ std::uint64_t(salt);
}

// The real node is the whole run on one machine, or in the multi-host runs
// (tests/multihost, which set ACCRETE_TEST_PPN) the ranks with the
// caller's hostname, wherever the launcher placed them;
// ACCRETE_NODE_SIZE=k cuts it into pretend nodes of k.
int expected_node_size() {
  int real = rank_n(), pos = rank_me();
  if (std::getenv("ACCRETE_TEST_PPN")) {
    char name[256] = {};
    gethostname(name, sizeof name - 1);
    std::vector<char> all(std::size_t(rank_n()) * sizeof name);
    MPI_Allgather(name, sizeof name, MPI_CHAR, all.data(), sizeof name, MPI_CHAR, MPI_COMM_WORLD);
    real = pos = 0;
    for (int r = 0; r < rank_n(); ++r) {
      const bool same = std::strcmp(all.data() + std::size_t(r) * sizeof name, name) == 0;
      real += same;
      pos += same && r < rank_me();
    }
  }
  const char* e = std::getenv("ACCRETE_NODE_SIZE");
  const int k = e ? std::atoi(e) : 0;
  return k > 0 ? std::min(k, real - (pos / k) * k) : real;
}
}  // namespace

TEST(Runtime, RanksAndTeams) {
  EXPECT_TRUE(initialized());
  EXPECT_EQ(world().rank_n(), rank_n());
  EXPECT_EQ(world().rank_me(), rank_me());
  int sz;
  MPI_Comm_size(MPI_COMM_WORLD, &sz);
  EXPECT_EQ(rank_n(), sz);
  EXPECT_EQ(local_team().rank_n(), expected_node_size());
  for (int r = 0; r < local_team().rank_n(); ++r) {
    int w = local_team().to_world(r);
    EXPECT_TRUE(detail::is_node_local(w));
    EXPECT_EQ(local_team().from_world(w), r);
  }
  // The world team's communicator is accrete's own, not the user's.
  int cmp;
  MPI_Comm_compare(world().mpi_comm(), MPI_COMM_WORLD, &cmp);
  EXPECT_EQ(cmp, MPI_CONGRUENT);
}

TEST(Runtime, SplitTeams) {
  team parity = world().split(rank_me() % 2, -rank_me());  // reversed order by key
  int members = (rank_n() + (rank_me() % 2 == 0 ? 1 : 0)) / 2;
  ASSERT_EQ(parity.rank_n(), members);
  // Highest world rank gets team rank 0 because keys are negated.
  std::vector<int> expect;
  for (int r = rank_n() - 1; r >= 0; --r)
    if (r % 2 == rank_me() % 2) expect.push_back(r);
  for (int i = 0; i < parity.rank_n(); ++i) EXPECT_EQ(parity.to_world(i), expect[i]);
  EXPECT_EQ(parity.to_world(parity.rank_me()), rank_me());
  if (rank_n() > 1) {
    EXPECT_EQ(parity.from_world(rank_me() % 2 == 0 ? 1 : 0), -1);
  }
  // from_world inverts to_world for every world rank, members or not, in a
  // team whose order is not the world's; ranks outside the world are -1.
  for (int w = -1; w <= rank_n(); ++w) {
    int want = -1;
    for (int i = 0; i < int(expect.size()); ++i)
      if (expect[std::size_t(i)] == w) want = i;
    EXPECT_EQ(parity.from_world(w), want) << "world rank " << w;
  }
  {
    team moved = std::move(parity);  // the lookup travels with the team
    for (int i = 0; i < moved.rank_n(); ++i) EXPECT_EQ(moved.from_world(expect[std::size_t(i)]), i);
    EXPECT_EQ(parity.from_world(rank_me()), -1);
    parity = std::move(moved);
  }
  // The team's communicator works for plain MPI, and barrier on it works.
  int sum = 0, one = world().rank_me();
  MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, parity.mpi_comm());
  int want = 0;
  for (int r : expect) want += r;
  EXPECT_EQ(sum, want);
  barrier(parity);
  team none = world().split(MPI_UNDEFINED, 0);
  EXPECT_EQ(none.mpi_comm(), MPI_COMM_NULL);
  EXPECT_THROW(world().split(-7, 0), std::invalid_argument);
  EXPECT_THROW(world().to_world(rank_n()), std::out_of_range);
  barrier();
}

// A team of one has nobody to wait for: its barrier returns at once, and
// processes that make different numbers of them (here rank r makes r + 1)
// stay in step on the world's collectives and on the small team's others.
TEST(Runtime, BarrierOnATeamOfOne) {
  team solo = world().split(rank_me(), 0);
  ASSERT_EQ(solo.rank_n(), 1);
  int stores = 0;
  for (int i = 0; i <= rank_me(); ++i) {
    ++stores;
    barrier(solo);
  }
  EXPECT_EQ(broadcast(rank_me() * 10 + 3, 0, solo).wait(), rank_me() * 10 + 3);
  EXPECT_EQ(reduce_all(stores, op_fast_add).wait(), rank_n() * (rank_n() + 1) / 2);
  barrier();
}

TEST(Segment, AllocateReuseAndExhaustion) {
  std::size_t before = segment_used();
  auto a = allocate(1000, 64);
  EXPECT_EQ(a.where(), rank_me());
  // The address is aligned, not only the offset (segments need not start
  // on a 64-byte boundary).
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.local()) % 64, 0u);
  for (std::size_t al : {std::size_t(32), std::size_t(128), std::size_t(4096)}) {
    auto x = allocate(8, al);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(x.local()) % al, 0u) << "alignment " << al;
    deallocate(x);
  }
  struct alignas(64) line {
    double v[8];
  };
  auto l = new_<line>();
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(l.local()) % 64, 0u);
  delete_(l);
  auto b = new_<std::uint64_t>(42u);
  EXPECT_EQ(*b.local(), 42u);
  auto c = new_array<double>(333);
  for (int i = 0; i < 333; ++i) EXPECT_EQ(c.local()[i], 0.0);
  deallocate(a);
  delete_(b);
  delete_array(c);
  EXPECT_EQ(segment_used(), before);
  // After freeing, the whole free space is one block again.
  std::size_t free_bytes = segment_size() - segment_used();
  auto big = allocate(free_bytes - 64, 16);
  deallocate(big);
  try {
    allocate(segment_size() + 1);
    FAIL() << "expected segment_exhausted";
  } catch (const segment_exhausted& e) {
    EXPECT_EQ(e.requested(), segment_size() + 1);
    EXPECT_EQ(e.free_bytes(), segment_size() - segment_used());
    EXPECT_NE(std::string(e.what()).find(std::to_string(segment_size() + 1)), std::string::npos) << e.what();
  }
  EXPECT_THROW(allocate(8, 3), std::invalid_argument);
  auto d = allocate(8);
  EXPECT_THROW(deallocate(d + 1), bad_global_ptr);
  deallocate(d);
  EXPECT_THROW(deallocate(d), bad_global_ptr);
}

// Sizes near SIZE_MAX used to wrap to 0 bytes when rounded up, and the next
// allocation then returned the same offset.
TEST(Segment, HugeRequestsDoNotWrap) {
  EXPECT_THROW(allocate(SIZE_MAX - 8), segment_exhausted);
  EXPECT_THROW(allocate(SIZE_MAX), segment_exhausted);
  EXPECT_THROW(allocate(64, std::size_t{1} << 62), segment_exhausted);
  auto a = allocate(64), b = allocate(64);
  EXPECT_NE(a.offset(), b.offset());
  deallocate(a);
  deallocate(b);
}

// Small requests come from slabs of one size class, large or more strongly
// aligned ones from the first-fit blocks. Mixed at random, every live object
// keeps its own bytes, and a node peer reads them where the owner wrote them.
TEST(Segment, SmallAndLargeObjectsMixedAtRandom) {
  const std::size_t used_before = segment_used();
  const std::size_t objects_before = detail::heap_live_objects();
  struct object {
    global_ptr<std::byte> p;
    std::size_t bytes, alignment;
    std::uint8_t fill;
  };
  std::vector<object> live;
  std::uint64_t state = 0x9e3779b97f4a7c15ull + std::uint64_t(rank_me());
  auto next = [&] {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return state;
  };
  auto intact = [](const object& o) {
    const std::byte* b = o.p.local();
    for (std::size_t i = 0; i < o.bytes; ++i)
      if (b[i] != std::byte(o.fill + i)) return false;
    return true;
  };
  const std::size_t sizes[] = {1, 8, 15, 16, 17, 100, 129, 512, 513, 1000, 1024, 1025, 5000};
  const std::size_t aligns[] = {1, 8, 16, 16, 16, 32, 64, 4096};
  for (int step = 0; step < 20000; ++step) {
    if (live.empty() || next() % 8 < 5) {
      object o{{}, sizes[next() % std::size(sizes)], aligns[next() % std::size(aligns)], std::uint8_t(next())};
      o.p = allocate(o.bytes, o.alignment);
      ASSERT_EQ(reinterpret_cast<std::uintptr_t>(o.p.local()) % o.alignment, 0u) << o.bytes << " B, " << o.alignment;
      for (std::size_t i = 0; i < o.bytes; ++i) o.p.local()[i] = std::byte(o.fill + i);
      live.push_back(o);
    } else {
      const std::size_t k = next() % live.size();
      ASSERT_TRUE(intact(live[k])) << "object of " << live[k].bytes << " B was overwritten";
      deallocate(live[k].p);
      live[k] = live.back();
      live.pop_back();
    }
  }
  ASSERT_EQ(detail::heap_live_objects(), objects_before + live.size());
  for (const auto& o : live) ASSERT_TRUE(intact(o)) << "object of " << o.bytes << " B was overwritten";

  // Another process reads each object's first byte where its owner wrote it
  // (every process checks its right neighbour's first live objects).
  std::vector<std::pair<global_ptr<std::byte>, std::uint8_t>> firsts;
  for (std::size_t i = 0; i < std::min<std::size_t>(live.size(), 16); ++i) firsts.push_back({live[i].p, live[i].fill});
  dist_object<std::vector<std::pair<global_ptr<std::byte>, std::uint8_t>>> mine(firsts);
  const int right = (rank_me() + 1) % rank_n();
  for (const auto& [p, fill] : mine.fetch(right).wait()) {
    EXPECT_EQ(p.where(), right);
    EXPECT_EQ(rget(p).wait(), std::byte(fill));
    if (p.is_local()) {
      EXPECT_EQ(*p.local(), std::byte(fill));
    }
  }
  barrier();

  // Releasing a pointer twice, inside an object, or at a slot never handed
  // out throws and changes nothing.
  auto a = allocate(24), b = allocate(24);
  EXPECT_THROW(deallocate(a + 8), bad_global_ptr);
  deallocate(a);
  EXPECT_THROW(deallocate(a), bad_global_ptr);
  EXPECT_THROW(deallocate(b + 48 * 64), bad_global_ptr);
  deallocate(b);
  for (const auto& o : live) deallocate(o.p);
  EXPECT_EQ(segment_used(), used_before);
  EXPECT_EQ(detail::heap_live_objects(), objects_before);
  barrier();
}

// Slabs emptied by the program are given back when a large request needs
// their space: after many small objects come and go, the free space is one
// block again.
TEST(Segment, EmptiedSlabsReturnTheirSpace) {
  std::vector<global_ptr<std::byte>> small;
  for (int i = 0; i < 50000; ++i) small.push_back(allocate(std::size_t(16 + 16 * (i % 60))));
  std::size_t used = segment_used();
  EXPECT_GT(used, std::size_t(50000 * 16));
  for (auto p : small) deallocate(p);
  const std::size_t free_bytes = segment_size() - segment_used();
  auto big = allocate(free_bytes - 64, 16);
  deallocate(big);
  // A segment filled with small objects: exhaustion is reported, not a crash,
  // and everything goes back.
  small.clear();
  try {
    for (;;) small.push_back(allocate(1000));
  } catch (const segment_exhausted& e) {
    EXPECT_EQ(e.requested(), 1000u);
  }
  EXPECT_GT(small.size(), std::size_t(0));
  for (auto p : small) deallocate(p);
  auto all = allocate(segment_size() - segment_used() - 64, 16);
  deallocate(all);
}

TEST(GlobalPtr, ArithmeticAndComparison) {
  global_ptr<int> null;
  EXPECT_TRUE(null.is_null());
  EXPECT_FALSE(bool(null));
  EXPECT_EQ(null, global_ptr<int>(nullptr));
  EXPECT_TRUE(null.is_local());  // UPC++'s rule: a null pointer localizes to nullptr
  EXPECT_EQ(null.local(), nullptr);
  auto p = new_array<int>(10);
  auto q = p + 7;
  EXPECT_EQ(q - p, 7);
  EXPECT_EQ(q.offset(), p.offset() + 7 * sizeof(int));
  EXPECT_LT(p, q);
  EXPECT_EQ(--q, p + 6);
  EXPECT_EQ(q++, p + 6);
  EXPECT_EQ(q.local(), p.local() + 7);
  EXPECT_EQ(to_global_ptr(p.local() + 3), p + 3);
  EXPECT_EQ(try_global_ptr(p.local() + 3), p + 3);
  int on_stack = 0;
  EXPECT_TRUE(try_global_ptr(&on_stack).is_null());
  EXPECT_THROW(to_global_ptr(&on_stack), bad_global_ptr);
  EXPECT_TRUE(try_global_ptr(static_cast<int*>(nullptr)).is_null());
  EXPECT_TRUE(to_global_ptr(static_cast<int*>(nullptr)).is_null());
  global_ptr<const int> cp = p;
  EXPECT_EQ(cp.offset(), p.offset());
  auto all = exchange(p);
  for (int r = 0; r < rank_n(); ++r) {
    EXPECT_EQ(all[r].where(), r);
    EXPECT_EQ(all[r].is_local(), detail::is_node_local(r));
    if (r != rank_me() && !all[r].is_local()) {
      EXPECT_THROW(all[r].local(), bad_global_ptr);
    }
  }
  if (rank_n() > 1) {
    EXPECT_THROW((void)(all[0] - all[1]), bad_global_ptr);
  }
  barrier();
  delete_array(p);
}

class RmaSizes : public testing::TestWithParam<std::size_t> {};

TEST_P(RmaSizes, PutGetRoundTripEveryTarget) {
  const std::size_t n = GetParam();
  auto mine = new_array<std::uint64_t>(std::max<std::size_t>(n, 1) * rank_n());
  auto all = exchange(mine);
  // Each rank writes its block of every target (including itself).
  std::vector<std::uint64_t> src(n);
  std::vector<future<>> puts;
  for (int t = 0; t < rank_n(); ++t) {
    for (std::size_t i = 0; i < n; ++i) src[i] = pattern(rank_me(), i, t);
    rput(src.data(), all[t] + std::ptrdiff_t(rank_me() * std::max<std::size_t>(n, 1)), n).wait();
  }
  barrier();
  for (int s = 0; s < rank_n(); ++s)
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_EQ(mine.local()[s * std::max<std::size_t>(n, 1) + i], pattern(s, i, rank_me()))
          << "from " << s << " at " << i;
  // And read back what I wrote into every target.
  std::vector<std::uint64_t> dst(n);
  for (int t = 0; t < rank_n(); ++t) {
    rget(all[t] + std::ptrdiff_t(rank_me() * std::max<std::size_t>(n, 1)), dst.data(), n).wait();
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(dst[i], pattern(rank_me(), i, t));
  }
  barrier();
  delete_array(mine);
}

INSTANTIATE_TEST_SUITE_P(Sizes, RmaSizes, testing::Values(0, 1, 7, 4097, 1 << 20));

TEST(Rma, SingleValuesAndFutureChains) {
  auto cell = new_<std::int64_t>(0);
  auto all = exchange(cell);
  const int right = (rank_me() + 1) % rank_n();
  rput<std::int64_t>(1000 + rank_me(), all[right]).wait();
  barrier();
  const int left = (rank_me() + rank_n() - 1) % rank_n();
  EXPECT_EQ(*cell.local(), 1000 + left);
  // then() on a communication future, flattening a nested rget.
  auto f = rget(all[right]).then([&](std::int64_t v) {
    return rget(all[left]).then([v](std::int64_t w) { return v + w; });
  });
  std::int64_t expect_right = 1000 + rank_me(), expect_left = 1000 + (left + rank_n() - 1) % rank_n();
  EXPECT_EQ(f.wait(), expect_right + expect_left);
  auto both = when_all(rget(all[right]), rget(all[left]), make_future(7));
  auto [a, b, c] = both.wait();
  EXPECT_EQ(a, expect_right);
  EXPECT_EQ(b, expect_left);
  EXPECT_EQ(c, 7);
  barrier();
  delete_(cell);
}

TEST(Rma, ManyOperationsOnePromise) {
  constexpr std::size_t n = 64, ops = 500;
  auto mine = new_array<std::uint32_t>(n * ops);
  auto all = exchange(mine);
  const int t = (rank_me() + 1) % rank_n();
  std::vector<std::uint32_t> src(n * ops);
  std::iota(src.begin(), src.end(), std::uint32_t(rank_me()) << 24);
  promise<> p;
  for (std::size_t k = 0; k < ops; ++k) rput(src.data() + k * n, all[t] + std::ptrdiff_t(k * n), n, p);
  p.finalize().wait();
  barrier();
  const int from = (rank_me() + rank_n() - 1) % rank_n();
  for (std::size_t i = 0; i < n * ops; ++i) ASSERT_EQ(mine.local()[i], (std::uint32_t(from) << 24) + i);
  std::vector<std::uint32_t> back(n * ops);
  promise<> g;
  for (std::size_t k = 0; k < ops; ++k) rget(all[t] + std::ptrdiff_t(k * n), back.data() + k * n, n, g);
  g.finalize().wait();
  EXPECT_EQ(back, src);
  barrier();
  delete_array(mine);
}

TEST(Interop, UserTrafficDoesNotMix) {
  // The user's own messages on MPI_COMM_WORLD, with wildcard receives
  // posted while accrete communicates, must see only the user's data.
  const int right = (rank_me() + 1) % rank_n(), left = (rank_me() + rank_n() - 1) % rank_n();
  int in = -1, out = 4242 + rank_me();
  MPI_Request rq;
  MPI_Irecv(&in, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &rq);
  auto cell = new_<int>(0);
  auto all = exchange(cell);
  rput(7, all[right]).wait();
  barrier();
  progress();
  int arrived = 0;
  MPI_Test(&rq, &arrived, MPI_STATUS_IGNORE);
  EXPECT_FALSE(arrived) << "accrete traffic reached a user receive";
  MPI_Barrier(MPI_COMM_WORLD);  // nobody sends before everyone has looked
  MPI_Send(&out, 1, MPI_INT, right, 3, MPI_COMM_WORLD);
  MPI_Wait(&rq, MPI_STATUS_IGNORE);
  EXPECT_EQ(in, 4242 + left);
  EXPECT_EQ(*cell.local(), 7);
  // User collectives interleave with accrete's.
  int s = 0, one = 1;
  MPI_Allreduce(&one, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(s, rank_n());
  barrier();
  delete_(cell);
}

TEST(Errors, BadPointersAndRanges) {
  auto mine = new_array<char>(16);
  auto all = exchange(mine);
  char buf[32] = {};
  global_ptr<char> null;
  EXPECT_THROW(rput(buf, null, 1), bad_global_ptr);
  EXPECT_THROW(rget(null, buf, 1), bad_global_ptr);
  auto bogus = detail::gp_access::make<char>(rank_n(), 0);
  try {
    rput(buf, bogus, 1);
    FAIL();
  } catch (const bad_global_ptr& e) {
    EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(rank_n())), std::string::npos) << e.what();
  }
  // A transfer that runs past the end of the target's segment.
  auto last = detail::gp_access::make<char>((rank_me() + 1) % rank_n(), segment_size() - 8);
  try {
    rput(buf, last, 9);
    FAIL();
  } catch (const bad_global_ptr& e) {
    EXPECT_NE(std::string(e.what()).find("run past"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(rput(buf, last, 8).wait());
  auto outside = detail::gp_access::make<char>(rank_me(), segment_size() + 100);
  EXPECT_THROW(rget(outside, buf, 1), bad_global_ptr);
  barrier();
  delete_array(mine);
}
