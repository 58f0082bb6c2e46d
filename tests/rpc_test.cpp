// RPC: results of every supported type, function pointers and lambdas,
// self / nested / team RPCs, views, flattening of future results, a flood of
// rpc_ff counted exactly, and errors (bad ranks, malformed messages, unknown
// reply ids, exceptions in the callee).
#include <algorithm>
#include <array>
#include <cstdint>
#include <list>
#include <numeric>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "accrete/accrete.hpp"
#include "accrete/rpc.hpp"

using namespace accrete;

namespace {
int twice(int x) { return 2 * x; }
void noop() {}
int who() { return rank_me(); }

struct pod {
  int a;
  double b;
  friend bool operator==(const pod&, const pod&) = default;
};

std::uint64_t ff_count = 0;  // rpc_ff arrivals on this rank

int right() { return (rank_me() + 1) % rank_n(); }
int left() { return (rank_me() + rank_n() - 1) % rank_n(); }
}  // namespace

TEST(Rpc, ResultsOfEverySupportedType) {
  int t = right();
  EXPECT_EQ(rpc(
                t, [](int x) { return x + 1; }, 41)
                .wait(),
            42);
  EXPECT_EQ(rpc(t, [] { return 2.5; }).wait(), 2.5);
  EXPECT_EQ(rpc(t, [] { return true; }).wait(), true);
  EXPECT_EQ(rpc(t, [] { return std::uint64_t(1) << 40; }).wait(), std::uint64_t(1) << 40);
  EXPECT_EQ(rpc(
                t, [](std::string s) { return s + "!"; }, std::string("hi"))
                .wait(),
            "hi!");
  EXPECT_EQ(rpc(
                t, [](const std::string& s) { return s.size(); }, "literal")
                .wait(),
            7u);
  EXPECT_EQ(rpc(
                t,
                [](std::vector<double> v) {
                  v.push_back(3);
                  return v;
                },
                std::vector<double>{1, 2})
                .wait(),
            (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(rpc(t, [] { return std::array<int, 3>{1, 2, 3}; }).wait(), (std::array<int, 3>{1, 2, 3}));
  EXPECT_EQ(rpc(
                t, [](int a) { return std::make_pair(a, std::to_string(a)); }, 5)
                .wait(),
            std::make_pair(5, std::string("5")));
  EXPECT_EQ(rpc(t, [] { return std::make_tuple(1, 2.0, std::string("3")); }).wait(),
            std::make_tuple(1, 2.0, std::string("3")));
  EXPECT_EQ(rpc(
                t,
                [](pod p) {
                  p.a++;
                  return p;
                },
                pod{1, 2})
                .wait(),
            (pod{2, 2}));
  EXPECT_EQ(rpc(t,
                [] {
                  return std::vector<std::vector<std::string>>{{"a"}, {}, {"b", "c"}};
                })
                .wait(),
            (std::vector<std::vector<std::string>>{{"a"}, {}, {"b", "c"}}));
  EXPECT_EQ(rpc(t, [] { return rank_me(); }).wait(), t);
  future<> done = rpc(t, [] {});
  done.wait();
  EXPECT_TRUE(done.ready());
}

TEST(Rpc, FunctionPointersAndCaptures) {
  int t = right();
  EXPECT_EQ(rpc(t, twice, 21).wait(), 42);
  EXPECT_EQ(rpc(t, &twice, 4).wait(), 8);
  rpc(t, noop).wait();
  EXPECT_EQ(rpc(t, who).wait(), t);
  int base = 100;
  pod p{3, 4.5};
  EXPECT_EQ(rpc(
                t, [base, p](int x) { return base + p.a + x; }, 1)
                .wait(),
            104);
  int (*null_fn)(int) = nullptr;
  EXPECT_THROW(rpc(t, null_fn, 1), error);
}

TEST(Rpc, ManyArgumentsAndMixedTypes) {
  auto f = rpc(
      right(),
      [](int a, std::string b, std::vector<int> c, std::pair<char, double> d, std::tuple<int, std::string> e) {
        return a + int(b.size()) + std::accumulate(c.begin(), c.end(), 0) + d.first + int(d.second) + std::get<0>(e) +
               int(std::get<1>(e).size());
      },
      1, std::string("ab"), std::vector<int>{1, 2, 3}, std::make_pair('\x01', 2.0),
      std::make_tuple(3, std::string("xyz")));
  EXPECT_EQ(f.wait(), 1 + 2 + 6 + 1 + 2 + 3 + 3);
}

TEST(Rpc, SelfRpcRunsOnlyDuringProgress) {
  bool ran = false;
  bool* flag = &ran;  // a pointer is meaningful only for rpc to self
  auto f = rpc(rank_me(), [flag] {
    *flag = true;
    return 7;
  });
  EXPECT_FALSE(ran);  // never inside rpc() itself
  EXPECT_EQ(f.wait(), 7);
  EXPECT_TRUE(ran);
}

// Messages to self run from the sender's own buffer: every size, both ways,
// also past the node ring's largest message (128 KiB by default).
TEST(Rpc, ValuesToSelfArriveIntactAtEverySize) {
  for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(8192), std::size_t(1) << 20}) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i) s[i] = char((i * 131 + n) & 0xff);
    auto echo = rpc(
        rank_me(), [](view<char> v) { return std::string(v.begin(), v.end()) + "!"; },
        make_view(s.data(), s.data() + n));
    EXPECT_EQ(echo.wait(), s + "!") << n << " bytes";
  }
}

TEST(Rpc, Views) {
  std::vector<int> v(1000);
  std::iota(v.begin(), v.end(), 0);
  auto sum = rpc(
      right(), [](view<int> x) { return std::accumulate(x.begin(), x.end(), std::int64_t(0)); },
      make_view(v.begin(), v.end()));
  EXPECT_EQ(sum.wait(), 999 * 1000 / 2);
  std::list<double> l{1.5, 2.5};
  EXPECT_EQ(rpc(
                right(), [](view<double> x) { return x.size() == 2 ? x[0] + x[1] : -1.0; }, make_view(l))
                .wait(),
            4.0);
  std::vector<std::string> s{"ab", "cde"};
  EXPECT_EQ(rpc(
                right(),
                [](view<std::string> x) {
                  std::string r;
                  for (auto& e : x) r += e;
                  return r;
                },
                make_view(s))
                .wait(),
            "abcde");
}

TEST(Rpc, NestedRpcsWaitInsideAHandler) {
  // right() asks its own right neighbour who it is, waiting inside the RPC.
  int r2 = (rank_me() + 2) % rank_n();
  auto f = rpc(right(), [] {
    int nb = (rank_me() + 1) % rank_n();
    return rpc(nb, [] { return rank_me() * 10; }).wait();
  });
  EXPECT_EQ(f.wait(), r2 * 10);
}

TEST(Rpc, FutureResultsAreFlattened) {
  int r2 = (rank_me() + 2) % rank_n();
  // The callee returns a future (from another RPC) without waiting on it.
  future<int> f = rpc(right(), [] { return rpc((rank_me() + 1) % rank_n(), [] { return rank_me(); }); });
  EXPECT_EQ(f.wait(), r2);
  future<std::string, int> g = rpc(right(), [] { return make_future(std::string("x"), 3); });
  EXPECT_EQ(g.wait(), std::make_tuple(std::string("x"), 3));
  future<> h = rpc(right(), [] { return make_future(); });
  h.wait();
}

TEST(Rpc, ManyOutstandingToEveryone) {
  std::vector<future<int>> fs;
  for (int i = 0; i < 200; ++i)
    fs.push_back(rpc(
        i % rank_n(), [](int x) { return x * x; }, i));
  for (int i = 0; i < 200; ++i) EXPECT_EQ(fs[i].wait(), i * i);
  auto all = when_all(rpc(left(), [] { return 1; }), rpc(right(), [] { return 2; }));
  EXPECT_EQ(all.wait(), std::make_tuple(1, 2));
  barrier();
}

TEST(Rpc, Teams) {
  team parity = world().split(rank_me() % 2, rank_me());
  int tr = (parity.rank_me() + 1) % parity.rank_n();
  EXPECT_EQ(rpc(parity, tr, [] { return rank_me(); }).wait(), parity.to_world(tr));
  rpc_ff(
      parity, tr, [](int from) { EXPECT_EQ(from % 2, rank_me() % 2); }, rank_me());
  EXPECT_THROW(rpc(parity, parity.rank_n(), [] {}), std::out_of_range);
  barrier();
}

TEST(Rpc, FloodOfFireAndForgetIsCountedExactly) {
  constexpr int per_rank = 100000;
  barrier();
  ff_count = 0;
  barrier();
  for (int i = 0; i < per_rank; ++i) rpc_ff(0, [] { ++ff_count; });
  if (rank_me() == 0) {
    const std::uint64_t expect = std::uint64_t(per_rank) * rank_n();
    unsigned spins = 0;
    while (ff_count < expect) {
      std::uint64_t before = ff_count;
      progress();
      if (ff_count != before) spins = 0;
      detail::idle_backoff(spins);
    }
    EXPECT_EQ(ff_count, expect);
  }
  barrier();
  for (int i = 0; i < 100; ++i) progress();
  if (rank_me() == 0) {
    EXPECT_EQ(ff_count, std::uint64_t(per_rank) * rank_n());
  }
  barrier();
}

// Everyone sends its right neighbour large views of growing and shrinking
// sizes, without waiting in between: rings fill and messages go through
// MPI, whose buffers are reused from one message to the next (a reused
// buffer is larger than the message and holds the last one's bytes).
// Every element is checked at the target, and the replies (large strings)
// at the origin.
std::vector<int> big_arrived;  // per sequence number: 1 exact, 2 wrong
std::int32_t big_value(int from, int seq, std::size_t i) { return std::int32_t(from * 1000003 + seq * 7919 + int(i)); }
// Sends `d` as message `seq` to the right neighbour, which checks every
// element against big_value and records the outcome in big_arrived.
void send_checked(int seq, const std::vector<std::int32_t>& d) {
  rpc_ff(
      right(),
      [](int from, int seq, std::uint64_t len, view<std::int32_t> v) {
        bool ok = v.size() == len;
        for (std::size_t i = 0; ok && i < v.size(); ++i) ok = v[i] == big_value(from, seq, i);
        big_arrived[std::size_t(seq)] = ok ? 1 : 2;
      },
      rank_me(), seq, std::uint64_t(d.size()), make_view(d.begin(), d.end()));
}
// Makes progress until every message of big_arrived is in, then expects
// each exact.
void expect_all_arrived_exact() {
  unsigned spins = 0;
  while (std::count(big_arrived.begin(), big_arrived.end(), 0) != 0) {
    progress();
    detail::idle_backoff(spins);
  }
  for (std::size_t seq = 0; seq < big_arrived.size(); ++seq)
    EXPECT_EQ(big_arrived[seq], 1) << "message " << seq << " from rank " << left();
}

TEST(Rpc, LargeViewsOfChangingSizesArriveExact) {
  const std::vector<std::size_t> sizes = {70000, 9000, 300000, 1, 150000, 40000, 300000, 33000, 0, 120000};
  constexpr int laps = 6;
  const int n = int(sizes.size()) * laps;
  big_arrived.assign(std::size_t(n), 0);
  barrier();
  std::vector<std::vector<std::int32_t>> data(static_cast<std::size_t>(n));
  std::vector<future<std::string>> echoes;
  for (int seq = 0; seq < n; ++seq) {
    auto& d = data[std::size_t(seq)];
    d.resize(sizes[std::size_t(seq) % sizes.size()]);
    for (std::size_t i = 0; i < d.size(); ++i) d[i] = big_value(rank_me(), seq, i);
    send_checked(seq, d);
    if (seq % 3 == 0)
      echoes.push_back(rpc(
          right(), [](std::uint64_t len, int seq) { return std::string(len, char('a' + seq % 26)); },
          std::uint64_t(d.size() * 4), seq));
  }
  for (std::size_t k = 0; k < echoes.size(); ++k) {
    const int seq = int(k) * 3;
    EXPECT_EQ(echoes[k].wait(), std::string(sizes[std::size_t(seq) % sizes.size()] * 4, char('a' + seq % 26)))
        << "reply to message " << seq;
  }
  expect_all_arrived_exact();
  barrier();
}

// Views of a few megabytes between ones of tens of kilobytes, three laps:
// the huge messages' buffers exceed what the runtime keeps for reuse, so
// kept buffers are dropped and replaced while messages are in flight, and
// a buffer kept from a huge message serves a small one. The data vector is
// overwritten after each send (the RPC copied it). Every element checked.
TEST(Rpc, HugeViewsBetweenLargeOnesArriveExact) {
  const std::vector<std::size_t> sizes = {32768, 3000000, 40000, 2500000, 33000, 100000, 4000000, 9000};
  constexpr int laps = 3;
  big_arrived.assign(sizes.size() * laps, 0);
  barrier();
  std::vector<std::int32_t> d;
  for (int seq = 0; seq < int(big_arrived.size()); ++seq) {
    d.resize(sizes[std::size_t(seq) % sizes.size()]);
    for (std::size_t i = 0; i < d.size(); ++i) d[i] = big_value(rank_me(), seq, i);
    send_checked(seq, d);
    std::fill(d.begin(), d.end(), -1);
  }
  expect_all_arrived_exact();
  barrier();
}

TEST(RpcErrors, BadRanks) {
  EXPECT_THROW(rpc(rank_n(), [] {}), error);
  EXPECT_THROW(rpc(-1, [] {}), error);
  EXPECT_THROW(rpc_ff(rank_n(), [] {}), error);
  try {
    rpc(rank_n() + 5, [] {});
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(rank_n() + 5)), std::string::npos) << e.what();
  }
}

namespace {
auto probe = [](int x, std::string s) { (void)x, (void)s; };
using probe_tramp = detail::rpc_trampoline<decltype(probe), int, std::string>;

// Progress until an exception comes out (the message to self must arrive).
std::string progress_until_error() {
  for (int i = 0; i < 100000; ++i) {
    try {
      progress();
    } catch (const std::exception& e) {
      return e.what();
    }
  }
  return "";
}
}  // namespace

TEST(RpcErrors, MalformedMessagesNameTheSender) {
  ASSERT_TRUE(probe_tramp::registered);
  rpc_ff(rank_me(), probe, 1, std::string("ok"));  // a well-formed one first
  // Truncated: an int and a string whose length runs past the end.
  std::vector<std::byte> bad(sizeof(int) + 8);
  std::uint64_t len = 1000;
  std::memcpy(bad.data() + sizeof(int), &len, 8);
  detail::am_send(rank_me(), &probe_tramp::fire_and_forget, bad);
  auto msg = progress_until_error();
  EXPECT_NE(msg.find("malformed RPC message from rank " + std::to_string(rank_me())), std::string::npos) << msg;
  EXPECT_NE(msg.find("string length"), std::string::npos) << msg;
  // Trailing garbage.
  auto good = serialize(1, std::string("x"), 'z');
  detail::am_send(rank_me(), &probe_tramp::fire_and_forget, good);
  msg = progress_until_error();
  EXPECT_NE(msg.find("trailing"), std::string::npos) << msg;
  // A reply nobody asked for.
  auto reply = serialize(std::uint64_t(0xdeadbeef));
  detail::am_send(rank_me(), &detail::rpc_reply_handler, reply);
  msg = progress_until_error();
  EXPECT_NE(msg.find("unknown reply id"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rank " + std::to_string(rank_me())), std::string::npos) << msg;
  barrier();
}

int plus_one(int x) { return x + 1; }

TEST(RpcErrors, FunctionsOutsideTheProgramAreRejected) {
  EXPECT_EQ(rpc(rank_me(), &plus_one, 4).wait(), 5);  // the program's own: fine
  // libc's abs sits at a different address in every process.
  int (*libc_abs)(int) = &::abs;
  try {
    rpc_ff((rank_me() + 1) % rank_n(), libc_abs, -5);
    FAIL() << "a libc function was accepted";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("not in the program's own code"), std::string::npos) << e.what();
  }
  // A forged offset in a message is rejected at the target, not called.
  using fp_tramp = detail::rpc_trampoline<int (*)(int), int>;
  ASSERT_TRUE(fp_tramp::registered);
  auto forged = serialize(std::intptr_t(1) << 44, 3);
  detail::am_send(rank_me(), &fp_tramp::fire_and_forget, forged);
  auto msg = progress_until_error();
  EXPECT_NE(msg.find("outside the program's code"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rank " + std::to_string(rank_me())), std::string::npos) << msg;
  barrier();
}

// Random and mutated messages through the real dispatch path (trampolines
// for a lambda and for a function pointer): each must run or throw
// accrete::error, never crash (this test also runs under ASan/UBSan).
// Function offsets are only ever random 64-bit values: one mutated in its
// low bits could still land inside the program's code, which no check can
// tell from a real function (docs/semantics.md).
TEST(RpcErrors, RandomMessagesThroughDispatchNeverCrash) {
  using fp_tramp = detail::rpc_trampoline<int (*)(int), int>;
  ASSERT_TRUE(fp_tramp::registered && probe_tramp::registered);
  std::uint64_t seed = 0x5eed0000 + std::uint64_t(rank_me());
  auto next = [&] {
    std::uint64_t z = (seed += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  const auto valid = serialize(7, std::string("seven"));
  int errors = 0, ran = 0;
  for (int k = 0; k < 3000; ++k) {
    std::vector<std::byte> msg;
    detail::am_handler h = &probe_tramp::fire_and_forget;
    switch (k % 3) {
      case 0:  // a valid lambda message with a few bytes flipped, cut or extended
        msg = valid;
        for (int f = 0; f < 1 + int(next() % 3); ++f) msg[next() % msg.size()] = std::byte(next());
        if (next() % 4 == 0) msg.resize(next() % (msg.size() + 8));
        break;
      case 1:  // random bytes of random length
        msg.resize(next() % 48);
        for (auto& b : msg) b = std::byte(next());
        break;
      default:  // function pointer: random offset, random argument bytes
        h = &fp_tramp::fire_and_forget;
        msg = serialize(std::intptr_t(next()), int(next()));
        if (next() % 2) msg.resize(next() % (msg.size() + 4));
        break;
    }
    detail::am_send(rank_me(), h, msg);
    for (int i = 0; i < 50; ++i) {
      try {
        progress();
      } catch (const error&) {
        ++errors;
      }
    }
    ++ran;
  }
  EXPECT_EQ(ran, 3000);
  EXPECT_GT(errors, 1000);  // random offsets alone are a third of them
  barrier();
}

// A message naming a handler nobody registered is refused with an error,
// not run.
void never_registered(int, std::span<const std::byte>) {}

TEST(RpcErrors, UnregisteredHandlerIsRefused) {
  detail::am_send(rank_me(), &never_registered, {});
  bool refused = false;
  for (int i = 0; i < 1000 && !refused; ++i) {
    try {
      progress();
    } catch (const error& e) {
      refused = true;
      EXPECT_NE(std::string(e.what()).find("active message with unknown handler id"), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(refused);
  barrier();
}

bool stop_recursion = false;
int recurse(int n) { return n == 0 || stop_recursion ? 0 : rpc(rank_me(), &recurse, n - 1).wait() + 1; }

// Each level waits inside the previous level's body: nested progress.
TEST(RpcErrors, DeepRecursionFailsClearlyInsteadOfOverflowingTheStack) {
  stop_recursion = false;
  EXPECT_EQ(rpc(rank_me(), &recurse, 300).wait(), 300);
  try {
    rpc(rank_me(), &recurse, 60000).wait();
    FAIL() << "60000 nested waits returned";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("nested 1000 deep"), std::string::npos) << e.what();
  }
  // The innermost request is still queued: let it finish harmlessly.
  stop_recursion = true;
  for (int i = 0; i < 1000; ++i) progress();
  barrier();
}

TEST(RpcErrors, CalleeExceptionsSurfaceAtTheTarget) {
  rpc_ff(rank_me(), [] { throw std::runtime_error("callee failed"); });
  auto msg = progress_until_error();
  EXPECT_EQ(msg, "callee failed");
  barrier();
}
