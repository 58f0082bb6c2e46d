// Non-blocking collectives on teams: barrier_async, broadcast (values,
// buffers, serialized containers), reduce_one / reduce_all with built-in and
// user operators; exact values at every process count.
// White-box test: reaches into accrete/detail/.
#define ACCRETE_INTERNAL_INCLUDE
#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "accrete/accrete.hpp"
#include "accrete/collectives.hpp"
#include "accrete/detail/backend.hpp"

using namespace accrete;

namespace {
// A user type for a user operator: maximum value, ties to the lowest index.
struct max_loc {
  double value;
  int index;
};
struct max_loc_op {
  max_loc operator()(const max_loc& a, const max_loc& b) const {
    if (a.value != b.value) return a.value > b.value ? a : b;
    return a.index < b.index ? a : b;
  }
};
}  // namespace

TEST(Collectives, BarrierAsync) {
  // Every rank writes into its neighbour's cell, then barrier_async: after
  // it, the store is visible.
  auto mine = new_<int>(-1);
  std::vector<global_ptr<int>> all(rank_n());
  MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, world().mpi_comm());
  barrier();
  auto next = all[(rank_me() + 1) % rank_n()];
  rput(rank_me(), next).wait();
  barrier_async().wait();
  EXPECT_EQ(*mine.local(), (rank_me() + rank_n() - 1) % rank_n());
  // Several outstanding barriers complete in order of issue.
  auto a = barrier_async(), b = barrier_async(), c = barrier_async();
  when_all(a, b, c).wait();
  barrier();
  delete_(mine);
}

TEST(Collectives, BroadcastValues) {
  for (int root = 0; root < rank_n(); ++root) {
    EXPECT_EQ(broadcast(rank_me() * 10 + 7, root).wait(), root * 10 + 7);
    EXPECT_EQ(broadcast(1.5 * rank_me(), root).wait(), 1.5 * root);
    std::pair<int, double> pr{rank_me(), -rank_me() * 0.5};
    auto got = broadcast(pr, root).wait();
    EXPECT_EQ(got.first, root);
    EXPECT_EQ(got.second, -root * 0.5);
  }
}

TEST(Collectives, BroadcastBuffers) {
  const int root = rank_n() - 1;
  for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(1000), std::size_t(1) << 20}) {
    std::vector<std::int64_t> v(n, -1);
    if (rank_me() == root) std::iota(v.begin(), v.end(), std::int64_t(5));
    broadcast(v.data(), v.size(), root).wait();
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], std::int64_t(5 + i)) << "n " << n << " i " << i;
  }
}

TEST(Collectives, BroadcastSerialized) {
  for (int root = 0; root < rank_n(); ++root) {
    std::vector<int> v;
    if (rank_me() == root) v.assign(std::size_t(100 + root), root);
    auto got = broadcast(v, root).wait();
    ASSERT_EQ(got.size(), std::size_t(100 + root));
    EXPECT_TRUE(std::all_of(got.begin(), got.end(), [&](int x) { return x == root; }));
    std::string s = rank_me() == root ? std::string(5000, char('a' + root)) : std::string("ignored");
    EXPECT_EQ(broadcast(s, root).wait(), std::string(5000, char('a' + root)));
    std::vector<std::string> nested;
    if (rank_me() == root) nested = {"x", "", std::string(300, 'q')};
    auto gn = broadcast(nested, root).wait();
    ASSERT_EQ(gn.size(), 3u);
    EXPECT_EQ(gn[2], std::string(300, 'q'));
    // An empty vector from the root.
    EXPECT_TRUE(broadcast(std::vector<double>{}, root).wait().empty());
  }
  // Several in flight at once, completed out of order.
  std::vector<future<std::vector<int>>> fs;
  for (int i = 0; i < 20; ++i) fs.push_back(broadcast(std::vector<int>(std::size_t(i), i), i % rank_n()));
  for (int i = 19; i >= 0; --i) {
    auto v = fs[std::size_t(i)].wait();
    ASSERT_EQ(v.size(), std::size_t(i));
    for (int x : v) ASSERT_EQ(x, i);
  }
}

TEST(Collectives, BuiltinReductions) {
  const int n = rank_n(), me = rank_me();
  const std::int64_t sum = std::int64_t(n) * (n + 1) / 2;
  EXPECT_EQ(reduce_all(std::int64_t(me + 1), op_fast_add).wait(), sum);
  EXPECT_EQ(reduce_all(me + 1, op_fast_mul).wait(), [&] {
    int p = 1;
    for (int i = 1; i <= n; ++i) p *= i;
    return p;
  }());
  EXPECT_EQ(reduce_all(me * 3 - 1, op_fast_min).wait(), -1);
  EXPECT_EQ(reduce_all(me * 3 - 1, op_fast_max).wait(), (n - 1) * 3 - 1);
  EXPECT_EQ(reduce_all(std::uint32_t(1u << me), op_fast_bit_or).wait(), (1u << n) - 1);
  EXPECT_EQ(reduce_all(std::uint64_t(~0ull ^ (1ull << me)), op_fast_bit_and).wait(), ~0ull ^ ((1ull << n) - 1));
  EXPECT_EQ(reduce_all(std::int8_t(1 << me), op_fast_bit_xor).wait(), std::int8_t((1 << n) - 1));
  EXPECT_EQ(reduce_all(0.5 * me, op_fast_add).wait(), 0.25 * n * (n - 1));
  EXPECT_EQ(reduce_all(float(me), op_fast_max).wait(), float(n - 1));
  EXPECT_EQ(reduce_all(std::uint16_t(me + 2), op_fast_min).wait(), 2);
  for (int root = 0; root < n; ++root) {
    auto r = reduce_one(std::int64_t(me + 1), op_fast_add, root).wait();
    if (me == root) {
      EXPECT_EQ(r, sum);
    }
  }
  // Built-in operators on a type MPI does not know go through the user path.
  struct vec2 {
    int x, y;
    vec2 operator+(const vec2& o) const { return {x + o.x, y + o.y}; }
  };
  auto v = reduce_all(vec2{1, me}, op_fast_add).wait();
  EXPECT_EQ(v.x, n);
  EXPECT_EQ(v.y, n * (n - 1) / 2);
}

TEST(Collectives, ArrayReductions) {
  const int n = rank_n(), me = rank_me();
  const std::size_t len = 100000;
  std::vector<std::int32_t> src(len), dst(len, -7);
  for (std::size_t i = 0; i < len; ++i) src[i] = std::int32_t(i % 1000) * (me + 1);
  reduce_all(src.data(), dst.data(), len, op_fast_add).wait();
  for (std::size_t i = 0; i < len; ++i) ASSERT_EQ(dst[i], std::int32_t(i % 1000) * n * (n + 1) / 2);
  // In place.
  std::vector<double> x(len);
  for (std::size_t i = 0; i < len; ++i) x[i] = double(me == 1 ? i : 0);
  reduce_all(x.data(), x.data(), len, op_fast_max).wait();
  for (std::size_t i = 0; i < len; ++i) ASSERT_EQ(x[i], n > 1 ? double(i) : 0.0);
  // reduce_one into the root only, in place at the root.
  const int root = n / 2;
  std::vector<std::int64_t> y(len, me + 1);
  reduce_one(y.data(), y.data(), len, op_fast_add, root).wait();
  if (me == root) {
    for (std::size_t i = 0; i < len; ++i) ASSERT_EQ(y[i], std::int64_t(n) * (n + 1) / 2);
  } else {
    EXPECT_EQ(y[0], me + 1);
  }
  // reduce_one with a null dst at non-roots.
  std::vector<std::int64_t> z(3, 2), out(me == root ? 3 : 0);
  reduce_one(z.data(), me == root ? out.data() : nullptr, 3, op_fast_mul, root).wait();
  if (me == root) {
    EXPECT_EQ(out[2], std::int64_t(1) << n);
  }
}

TEST(Collectives, UserOperators) {
  const int n = rank_n(), me = rank_me();
  // Max with index: the maximum appears on two ranks; the lower index wins.
  auto value_of = [n](int r) { return r == n / 2 || r == n - 1 ? 100.0 : double(r); };
  auto r = reduce_all(max_loc{value_of(me), me}, max_loc_op{}).wait();
  EXPECT_EQ(r.value, 100.0);
  EXPECT_EQ(r.index, n / 2);
  // A capturing lambda (state travels with the operator object).
  const std::int64_t mod = 1000003;
  auto mulmod = [mod](std::int64_t a, std::int64_t b) { return (a * b) % mod; };
  std::int64_t expect = 1;
  for (int i = 0; i < n; ++i) expect = expect * (123456 + i) % mod;
  EXPECT_EQ(reduce_all(std::int64_t(123456 + me), mulmod).wait(), expect);
  for (int root = 0; root < n; ++root) {
    auto o = reduce_one(max_loc{double(-me), me}, max_loc_op{}, root).wait();
    if (me == root) {
      EXPECT_EQ(o.value, 0.0);
      EXPECT_EQ(o.index, 0);
    }
  }
  // Array form with a user op, and two user reductions in flight at once.
  std::vector<max_loc> a(1000), b(1000);
  for (int i = 0; i < 1000; ++i) a[std::size_t(i)] = {double((i + me) % n), me};
  auto f1 = reduce_all(a.data(), b.data(), a.size(), max_loc_op{});
  auto f2 = reduce_all(std::int64_t(2), mulmod);
  std::int64_t pow2 = 1;
  for (int i = 0; i < n; ++i) pow2 *= 2;
  EXPECT_EQ(f2.wait(), pow2);
  f1.wait();
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(b[std::size_t(i)].value, double(n - 1));
    // (i + r) % n == n - 1 for r = (n - 1 - i) mod n
    ASSERT_EQ(b[std::size_t(i)].index, ((n - 1 - i) % n + n) % n);
  }
}

// Reductions of values that are serialized: concatenation (in team-rank
// order, so the result is exact), element-wise sums of vectors of
// different lengths, empty values, a reordered sub-team, and several in
// flight at once interleaved with other collectives.
TEST(Collectives, SerializedReductions) {
  const int me = rank_me(), n = rank_n();
  auto piece = [](int r) { return std::string(std::size_t(r % 3) * 700, char('a' + r)) + std::to_string(r) + ";"; };
  std::string all;
  for (int r = 0; r < n; ++r) all += piece(r);
  EXPECT_EQ(reduce_all(piece(me), op_fast_add).wait(), all);
  for (int root = 0; root < n; ++root) {
    std::string got = reduce_one(piece(me), op_fast_add, root).wait();
    if (me == root) {
      EXPECT_EQ(got, all);
    } else {
      EXPECT_EQ(got, piece(me));  // a non-root gets its own value back
    }
  }
  // Empty strings from every process.
  EXPECT_EQ(reduce_all(std::string(), op_fast_add).wait(), "");

  // Vectors of different lengths, summed element-wise by a capturing
  // lambda (which would not be allowed as an MPI user operator).
  std::size_t calls = 0;
  auto vsum = [&calls](const std::vector<long>& a, const std::vector<long>& b) {
    ++calls;
    std::vector<long> r(std::max(a.size(), b.size()), 0);
    for (std::size_t i = 0; i < a.size(); ++i) r[i] += a[i];
    for (std::size_t i = 0; i < b.size(); ++i) r[i] += b[i];
    return r;
  };
  std::vector<long> mine(std::size_t(me + 1) * 1000, long(me + 1));
  std::vector<long> want(std::size_t(n) * 1000, 0);
  for (int r = 0; r < n; ++r)
    for (std::size_t i = 0; i < std::size_t(r + 1) * 1000; ++i) want[i] += r + 1;
  EXPECT_EQ(reduce_all(mine, vsum).wait(), want);
  // The operator runs n - 1 times, at the root (team rank 0) only.
  EXPECT_EQ(calls, me == 0 ? std::size_t(n - 1) : std::size_t(0));

  // A sub-team whose ranks run backwards, with several reductions and a
  // broadcast in flight at once, waited for in reverse order.
  team back = world().split(me % 2, -me);
  const int bn = back.rank_n();
  std::string back_all;
  for (int r = 0; r < bn; ++r) back_all += piece(back.to_world(r));
  std::vector<future<std::string>> fs;
  std::vector<future<std::vector<long>>> vs;
  for (int k = 0; k < 6; ++k) {
    fs.push_back(reduce_all(piece(me), op_fast_add, back));
    vs.push_back(reduce_one(std::vector<long>(std::size_t(k), long(me)), vsum, k % bn, back));
    fs.push_back(broadcast(std::string(std::size_t(k) * 10, char('A' + k)), k % bn, back));
    fs.push_back(reduce_all(std::to_string(k), op_fast_add));
  }
  long back_sum = 0;
  for (int r = 0; r < bn; ++r) back_sum += back.to_world(r);
  for (int k = 5; k >= 0; --k) {
    const std::size_t i = std::size_t(k);
    EXPECT_EQ(fs[3 * i + 2].wait(), [&] {
      std::string w;
      for (int r = 0; r < n; ++r) w += std::to_string(k);
      return w;
    }());
    EXPECT_EQ(fs[3 * i + 1].wait(), std::string(i * 10, char('A' + k)));
    EXPECT_EQ(fs[3 * i].wait(), back_all);
    std::vector<long> v = vs[i].wait();
    if (back.rank_me() == k % bn) {
      EXPECT_EQ(v, std::vector<long>(i, back_sum));
    } else {
      EXPECT_EQ(v, std::vector<long>(i, long(me)));
    }
  }
  barrier();
}

TEST(Collectives, SubTeams) {
  const int me = rank_me();
  team half = world().split(me % 2, me);
  const int hn = half.rank_n();
  EXPECT_EQ(reduce_all(1, op_fast_add, half).wait(), hn);
  EXPECT_EQ(broadcast(me, 0, half).wait(), me % 2);
  EXPECT_EQ(broadcast(std::string(std::size_t(me + 1), 'z'), hn - 1, half).wait(),
            std::string(std::size_t(half.to_world(hn - 1) + 1), 'z'));
  barrier_async(half).wait();
  // Collectives on different teams interleave.
  auto fw = reduce_all(me, op_fast_max);
  auto fh = reduce_all(me, op_fast_min, half);
  EXPECT_EQ(fh.wait(), me % 2);
  EXPECT_EQ(fw.wait(), rank_n() - 1);
  barrier(half);
  // A team of one (its barrier touches no shared counter): barriers and
  // collectives on it complete alone, then the world still agrees.
  team solo = world().split(me, 0);
  ASSERT_EQ(solo.rank_n(), 1);
  for (int k = 0; k < 3; ++k) barrier(solo);
  EXPECT_EQ(reduce_all(me + 1, op_fast_add, solo).wait(), me + 1);
  EXPECT_EQ(reduce_all(1, op_fast_add).wait(), rank_n());
  barrier();
}

TEST(Collectives, RpcsRunWhileWaiting) {
  // A member waiting on a collective still serves RPCs that another member
  // needs before it can join.
  static int hits = 0;
  hits = 0;
  barrier();
  if (rank_me() == 0) {
    for (int r = 0; r < rank_n(); ++r) rpc(r, [] { ++hits; }).wait();
  }
  auto f = barrier_async();
  f.wait();
  EXPECT_EQ(hits, 1);
}

TEST(Collectives, Errors) {
  EXPECT_THROW(broadcast(1, rank_n()), std::out_of_range);
  EXPECT_THROW(broadcast(1, -1), std::out_of_range);
  EXPECT_THROW(reduce_one(1, op_fast_add, rank_n()), std::out_of_range);
  int x = 0;
  EXPECT_THROW(broadcast(&x, 1, rank_n() + 3), std::out_of_range);
  // A null buffer with elements to move is refused by name on the member
  // that passes it (MPI would fault on it, here or at the receivers); with
  // count 0 it is fine. Every member passes it here, so nobody waits.
  auto refused = [](auto&& call, const char* what) {
    try {
      call();
      ADD_FAILURE() << what << " accepted a null buffer";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("null with count 4"), std::string::npos) << e.what();
    }
  };
  int* none = nullptr;
  refused([&] { broadcast(none, 4, 0).wait(); }, "accrete::broadcast: buffer");
  refused([&] { reduce_all(none, &x, 4, op_fast_add).wait(); }, "accrete::reduce_all: src");
  int four[4] = {1, 2, 3, 4};
  refused([&] { reduce_all(four, none, 4, op_fast_add).wait(); }, "accrete::reduce_all: dst");
  refused([&] { reduce_one(none, four, 4, op_fast_add, 0).wait(); }, "accrete::reduce_one: src");
  if (rank_me() == 0) {
    refused([&] { reduce_one(four, none, 4, op_fast_add, 0).wait(); }, "accrete::reduce_one: dst at the root");
  }
  // dst may be null away from the root; count 0 moves nothing.
  int sum[4] = {};
  reduce_one(four, rank_me() == 0 ? sum : none, 4, op_fast_add, 0).wait();
  if (rank_me() == 0) {
    for (int i = 0; i < 4; ++i) EXPECT_EQ(sum[i], (i + 1) * rank_n());
  }
  broadcast(none, 0, 0).wait();
  reduce_all(none, none, 0, op_fast_add).wait();
}

// The all-to-all of byte blocks behind the matrix exchanges: blocks of
// uneven sizes (some empty), through the single-call path and, with a
// lowered int limit, through the rounds that sizes beyond 2^31 take.
TEST(Collectives, AlltoallvBytesOneCallAndRounds) {
  const int P = rank_n(), me = rank_me();
  auto size_to = [](int from, int to) { return std::size_t((from * 7 + to * 13) % 11) * 97; };
  auto byte_at = [](int from, int to, std::size_t k) { return std::byte((from * 31 + to * 17 + k) & 0xff); };
  std::vector<std::size_t> scount(P), sdisp(P);
  std::vector<std::byte> sbuf;
  for (int q = 0; q < P; ++q) {
    sdisp[q] = sbuf.size();
    scount[q] = size_to(me, q);
    for (std::size_t k = 0; k < scount[q]; ++k) sbuf.push_back(byte_at(me, q, k));
  }
  for (std::size_t limit : {std::size_t{2147483647}, std::size_t{300}, std::size_t{1}}) {
    std::vector<std::size_t> rcount, rdisp;
    auto wait = [](detail::request& r) { r.wait(); };
    auto rbuf = detail::alltoallv_bytes(sbuf.data(), scount, sdisp, rcount, rdisp, wait, limit);
    std::int64_t bad = 0;
    for (int q = 0; q < P; ++q) {
      bad += rcount[q] != size_to(q, me);
      for (std::size_t k = 0; k < rcount[q] && k < size_to(q, me); ++k) bad += rbuf[rdisp[q] + k] != byte_at(q, me, k);
    }
    EXPECT_EQ(bad, 0) << "int limit " << limit;
    EXPECT_EQ(rbuf.size(), rdisp[P]);
  }
}
