// Tests for accrete::future / accrete::promise (single process; no MPI needed
// unless built with the shared MPI test main).
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>
#include <sched.h>

#include "accrete/future.hpp"
#include "accrete/promise.hpp"

using accrete::future;
using accrete::make_future;
using accrete::promise;
using accrete::when_all;

#ifndef ACCRETE_SHARED_TEST_MAIN
// Stand-ins for the runtime: progress() runs one queued closure per call, so
// tests can simulate operations completing asynchronously.
namespace {
std::deque<std::function<void()>> g_progress_queue;
int g_progress_calls = 0;
}  // namespace
namespace accrete {
void progress() {
  ++g_progress_calls;
  if (!g_progress_queue.empty()) {
    auto f = std::move(g_progress_queue.front());
    g_progress_queue.pop_front();
    f();
  }
}
namespace detail {
void idle_backoff(unsigned& spins) noexcept {
  ++spins;
  sched_yield();
}
}  // namespace detail
}  // namespace accrete
#endif

namespace {

// Counts live instances to check that states are freed.
struct tracked {
  static inline int live = 0;
  int v;
  explicit tracked(int x = 0) : v(x) { ++live; }
  tracked(const tracked& o) : v(o.v) { ++live; }
  tracked(tracked&& o) noexcept : v(o.v) { ++live; }
  tracked& operator=(const tracked&) = default;
  tracked& operator=(tracked&&) = default;
  ~tracked() { --live; }
};

// ---- type-level checks ------------------------------------------------------
static_assert(std::is_same_v<decltype(make_future()), future<>>);
static_assert(std::is_same_v<decltype(make_future(1, 2.0)), future<int, double>>);
static_assert(
    std::is_same_v<decltype(when_all(future<int>{}, future<>{}, future<double, char>{})), future<int, double, char>>);
static_assert(std::is_same_v<decltype(when_all()), future<>>);
static_assert(std::is_same_v<decltype(make_future(1).then([](int) {})), future<>>);
static_assert(
    std::is_same_v<decltype(make_future(1).then([](int) { return make_future(1.0, 'c'); })), future<double, char>>);
static_assert(std::is_same_v<decltype(make_future(1).then([](const int& x) -> const int& { return x; })), future<int>>);
static_assert(std::is_same_v<decltype(make_future(1).wait()), int>);
static_assert(std::is_same_v<decltype(make_future(1, 'c').wait()), std::tuple<int, char>>);
static_assert(std::is_same_v<decltype(make_future().wait()), void>);
static_assert(std::is_same_v<decltype(make_future(1, 'c').result<1>()), char>);
static_assert(sizeof(future<>) == sizeof(void*));

TEST(FutureReady, MakeFutureEmpty) {
  future<> f = make_future();
  EXPECT_TRUE(f.ready());
  f.wait();
  f.result();
  EXPECT_EQ(f.result_tuple(), std::tuple<>{});
  future<> c = f;
  c = f;
  EXPECT_TRUE(c.ready());
}

// A default-constructed future, future<> included, is an empty handle that
// never becomes ready (UPC++'s default constructor); what would wait on it
// forever throws instead.
TEST(FutureReady, DefaultConstructedIsNeverReady) {
  future<> d;
  EXPECT_FALSE(d.ready());
  EXPECT_FALSE(d.is_ready());
  future<> c = d;
  EXPECT_FALSE(c.ready());
  EXPECT_THROW(d.wait(), std::logic_error);
  EXPECT_THROW(d.then([] {}), std::logic_error);
  EXPECT_THROW(when_all(d, make_future()), std::logic_error);
  EXPECT_THROW(when_all(make_future(), d, make_future(1)), std::logic_error);
  EXPECT_THROW(d.result(), std::logic_error);
  c = make_future();  // assigning makes it useful
  EXPECT_TRUE(c.ready());
  future<int> di;
  EXPECT_FALSE(di.ready());
  EXPECT_THROW(when_all(di, make_future()), std::logic_error);
  // then() on a ready future returns the callback's own future: empty here.
  EXPECT_FALSE(make_future().then([] { return future<>(); }).ready());
  std::vector<future<>> v(3);
  for (auto& x : v) EXPECT_FALSE(x.ready());
}

TEST(FutureReady, MakeFutureValues) {
  auto f1 = make_future(42);
  EXPECT_TRUE(f1.ready());
  EXPECT_EQ(f1.wait(), 42);
  EXPECT_EQ(f1.result(), 42);
  auto f3 = make_future(1, std::string("two"), 3.5);
  EXPECT_EQ(f3.result(), std::make_tuple(1, std::string("two"), 3.5));
  EXPECT_EQ(f3.result<1>(), "two");
  EXPECT_EQ(f3.wait<2>(), 3.5);
  EXPECT_EQ(std::get<0>(f3.result_tuple()), 1);
  auto copy = f3;
  EXPECT_EQ(copy.result<0>(), 1);
}

// future<T&> (team_id::when_here, dist_id::when_here) hands out the very
// object, by result, wait and then, also rvalue and with a second value.
TEST(FutureReady, ReferenceResults) {
  int x = 1;
  promise<int&> p;
  future<int&> f = p.get_future();
  auto g = f.then([](int& r) {
    r += 10;
    return &r;
  });
  EXPECT_FALSE(g.ready());
  p.fulfill_result(x);
  p.finalize();
  EXPECT_EQ(g.result(), &x);
  EXPECT_EQ(x, 11);
  int& r = f.wait();
  EXPECT_EQ(&r, &x);
  EXPECT_EQ(&future<int&>(f).result(), &x);
  promise<int&, double> q;
  q.fulfill_result(x, 2.5);
  q.finalize();
  future<int&, double> qf = q.get_future();
  EXPECT_EQ(&qf.result<0>(), &x);
  EXPECT_EQ(qf.result<1>(), 2.5);
  EXPECT_EQ(&std::get<0>(qf.result()), &x);
}

// result_reference and wait_reference are shaped as result(): the default
// index gives every value (by const reference, never copied), an index one.
TEST(FutureReady, ReferencesShapedAsResult) {
  int x = 1;
  future<int, std::string> two = make_future(7, std::string(40, 's'));
  static_assert(std::is_same_v<decltype(two.result_reference()), std::tuple<const int&, const std::string&>>);
  static_assert(std::is_same_v<decltype(two.result_reference<1>()), const std::string&>);
  auto refs = two.result_reference();
  EXPECT_EQ(std::get<0>(refs), 7);
  EXPECT_EQ(&std::get<1>(refs), &two.result_reference<1>());  // the state's own string
  EXPECT_EQ(&std::get<1>(two.wait_reference()), &two.wait_reference<1>());
  future<std::string> one = make_future(std::string(40, 'o'));
  static_assert(std::is_same_v<decltype(one.result_reference()), const std::string&>);
  EXPECT_EQ(&one.result_reference(), &one.wait_reference());
  EXPECT_EQ(one.result_reference().size(), 40u);
  future<int&, double> mixed = make_future<int&, double>(x, 0.25);
  static_assert(std::is_same_v<decltype(mixed.result_reference()), std::tuple<int&, const double&>>);
  EXPECT_EQ(&std::get<0>(mixed.result_reference()), &x);
  EXPECT_EQ(std::get<1>(mixed.wait_reference()), 0.25);
  future<> none = make_future();
  static_assert(std::is_void_v<decltype(none.result_reference())>);
  none.wait_reference();
  promise<int> pending;
  EXPECT_THROW(pending.get_future().result_reference(), std::logic_error);
}

TEST(FutureReady, DefaultNonEmptyIsEmptyHandle) {
  future<int> f;
  EXPECT_FALSE(f.ready());
  EXPECT_THROW(f.result(), std::logic_error);
  EXPECT_THROW(f.wait(), std::logic_error);
  EXPECT_THROW(f.then([](int) {}), std::logic_error);
  f = make_future(3);
  EXPECT_EQ(f.result(), 3);
}

TEST(FutureReady, ResultOnNonReadyThrows) {
  promise<int> p;
  auto f = p.get_future();
  EXPECT_FALSE(f.ready());
  EXPECT_THROW(f.result(), std::logic_error);
  EXPECT_THROW(f.result_tuple(), std::logic_error);
  promise<> q;
  EXPECT_THROW(q.get_future().result(), std::logic_error);
}

// ---- then -------------------------------------------------------------------
TEST(FutureThen, ReadyIsEager) {
  bool ran = false;
  future<> f = make_future().then([&] { ran = true; });
  EXPECT_TRUE(ran);
  EXPECT_TRUE(f.ready());
  auto g = make_future(2, 3).then([](int a, int b) { return a * b; });
  EXPECT_TRUE(g.ready());
  EXPECT_EQ(g.result(), 6);
}

TEST(FutureThen, ValueVoidAndFlattening) {
  promise<int> p;
  auto f = p.get_future();
  std::vector<std::string> log;
  auto a = f.then([&](int x) {
    log.push_back("a");
    return x + 1;
  });
  auto b = f.then([&](int) { log.push_back("b"); });
  auto c = f.then([&](int x) {
    log.push_back("c");
    return make_future(x, std::string("s"));
  });
  auto d = a.then([&](int y) {
    log.push_back("d");
    return y * 10;
  });
  EXPECT_FALSE(a.ready() || b.ready() || c.ready() || d.ready());
  EXPECT_TRUE(log.empty());
  p.fulfill_result(5);
  EXPECT_FALSE(f.ready());  // count still 1
  p.finalize();
  EXPECT_TRUE(f.ready() && a.ready() && b.ready() && c.ready() && d.ready());
  EXPECT_EQ(a.result(), 6);
  EXPECT_EQ(c.result(), std::make_tuple(5, std::string("s")));
  EXPECT_EQ(d.result(), 60);
  // registration order on one future; dependents after their source
  EXPECT_EQ(log, (std::vector<std::string>{"a", "b", "c", "d"}));
}

TEST(FutureThen, FlattenNonReadyInner) {
  promise<> outer;
  promise<double, int> inner;
  auto f = outer.get_future().then([&] { return inner.get_future(); });
  outer.finalize();
  EXPECT_FALSE(f.ready());
  inner.fulfill_result(2.5, 7);
  EXPECT_FALSE(f.ready());
  inner.finalize();
  ASSERT_TRUE(f.ready());
  EXPECT_EQ(f.result(), std::make_tuple(2.5, 7));
}

TEST(FutureThen, FlattenReadyInnerEager) {
  promise<int> keep;
  auto inner = keep.get_future();
  // then on a ready future returning a future hands back that very future.
  auto f = make_future().then([&] { return inner; });
  EXPECT_FALSE(f.ready());
  keep.fulfill_result(9);
  keep.finalize();
  EXPECT_EQ(f.result(), 9);
}

TEST(FutureThen, NestedFulfilmentInsideCallback) {
  promise<> p1, p2;
  int order = 0, a = -1, b = -1;
  p2.get_future().then([&] { b = order++; });
  p1.get_future().then([&] {
    a = order++;
    p2.finalize();  // queued: runs after this callback returns
    EXPECT_EQ(b, -1);
  });
  p1.finalize();
  EXPECT_EQ(a, 0);
  EXPECT_EQ(b, 1);
}

TEST(FutureThen, CallbackStateIsFreed) {
  {
    promise<tracked> p;
    auto f = p.get_future().then([t = tracked(1)](const tracked& x) { return tracked(x.v + t.v); });
    p.fulfill_result(tracked(41));
    p.finalize();
    EXPECT_EQ(f.result().v, 42);
  }
  EXPECT_EQ(tracked::live, 0);
  {  // dropped unfulfilled: callbacks discarded, captures destroyed
    promise<tracked> p;
    auto f = p.get_future().then([t = tracked(1)](const tracked&) {});
    auto g = when_all(p.get_future(), make_future(tracked(2)));
  }
  EXPECT_EQ(tracked::live, 0);
}

// ---- when_all ---------------------------------------------------------------
TEST(WhenAll, MixedTypes) {
  promise<int> pi;
  promise<> pe;
  promise<double, char> pdc;
  auto all = when_all(pi.get_future(), pe.get_future(), pdc.get_future());
  static_assert(std::is_same_v<decltype(all), future<int, double, char>>);
  EXPECT_FALSE(all.ready());
  pdc.fulfill_result(1.5, 'x');
  pdc.finalize();
  pi.fulfill_result(3);
  pi.finalize();
  EXPECT_FALSE(all.ready());
  pe.finalize();
  ASSERT_TRUE(all.ready());
  EXPECT_EQ(all.result(), std::make_tuple(3, 1.5, 'x'));
}

TEST(WhenAll, ReadyAndNotReadyInputs) {
  promise<std::string> ps;
  auto all = when_all(make_future(1), ps.get_future(), make_future(), make_future('z', 2L));
  static_assert(std::is_same_v<decltype(all), future<int, std::string, char, long>>);
  EXPECT_FALSE(all.ready());
  ps.fulfill_result("mid");
  ps.finalize();
  ASSERT_TRUE(all.ready());
  EXPECT_EQ(all.result(), std::make_tuple(1, std::string("mid"), 'z', 2L));

  auto r = when_all(make_future(1), make_future(), make_future(2.0));
  ASSERT_TRUE(r.ready());
  EXPECT_EQ(r.result(), std::make_tuple(1, 2.0));
}

// A reference result (dist_id::when_here's future<dist_object<T>&>) stays a
// reference through when_all, whether the inputs are ready at the call (that
// path did not compile) or become ready later.
TEST(WhenAll, ReferenceResults) {
  int x = 1, y = 2;
  promise<int&> ready_ref;
  ready_ref.fulfill_result(x);
  ready_ref.finalize();
  const future<int&> xf = ready_ref.get_future();
  auto both = when_all(xf, make_future(5));
  static_assert(std::is_same_v<decltype(both), future<int&, int>>);
  ASSERT_TRUE(both.ready());
  EXPECT_EQ(&both.result<0>(), &x);
  EXPECT_EQ(both.result<1>(), 5);
  both.then([](int& r, int k) { r += k; });
  EXPECT_EQ(x, 6);

  promise<int&> later;
  auto pending = when_all(later.get_future(), xf);
  static_assert(std::is_same_v<decltype(pending), future<int&, int&>>);
  EXPECT_FALSE(pending.ready());
  later.fulfill_result(y);
  later.finalize();
  ASSERT_TRUE(pending.ready());
  EXPECT_EQ(&pending.result<0>(), &y);
  EXPECT_EQ(&pending.result<1>(), &x);
}

// An argument that is not a future stands for a ready future of its value
// (UPC++ since 2020.10), in any position, by value or lvalue.
TEST(WhenAll, ValuesAmongFutures) {
  promise<double> pd;
  const std::string label = "s";
  auto all = when_all(1, pd.get_future(), label, make_future(), 'c');
  static_assert(std::is_same_v<decltype(all), future<int, double, std::string, char>>);
  EXPECT_FALSE(all.ready());
  pd.fulfill_result(2.5);
  pd.finalize();
  ASSERT_TRUE(all.ready());
  EXPECT_EQ(all.result(), std::make_tuple(1, 2.5, std::string("s"), 'c'));
  auto only_values = when_all(7, 8L);
  static_assert(std::is_same_v<decltype(only_values), future<int, long>>);
  ASSERT_TRUE(only_values.ready());
  EXPECT_EQ(only_values.result<1>(), 8L);
}

TEST(WhenAll, EmptyFuturesAndShortcuts) {
  EXPECT_TRUE(when_all().ready());
  EXPECT_TRUE(when_all(make_future(), make_future(), make_future()).ready());
  promise<> a, b;
  auto fa = a.get_future();
  auto one = when_all(make_future(), fa, make_future());
  EXPECT_FALSE(one.ready());
  auto two = when_all(fa, b.get_future());
  a.finalize();
  EXPECT_TRUE(one.ready());
  EXPECT_FALSE(two.ready());
  b.finalize();
  EXPECT_TRUE(two.ready());

  promise<int> pi;
  auto single = when_all(make_future(), pi.get_future());
  pi.fulfill_result(4);
  pi.finalize();
  EXPECT_EQ(single.result(), 4);
}

TEST(WhenAll, SameFutureTwiceAndConjoinLoop) {
  promise<int> p;
  auto f = p.get_future();
  auto both = when_all(f, f);
  future<> all = make_future();  // conjoining loop, UPC++ style
  std::vector<promise<>> ps(100);
  for (auto& q : ps) all = when_all(all, q.get_future());
  p.fulfill_result(8);
  p.finalize();
  EXPECT_EQ(both.result(), std::make_tuple(8, 8));
  for (std::size_t i = 0; i < ps.size(); ++i) {
    EXPECT_FALSE(all.ready());
    ps[ps.size() - 1 - i].finalize();
  }
  EXPECT_TRUE(all.ready());
}

TEST(WhenAll, EmptyHandleThrows) {
  promise<> p;
  EXPECT_THROW(when_all(p.get_future(), future<int>{}), std::logic_error);
  p.finalize();
}

// ---- promise ----------------------------------------------------------------
TEST(Promise, EmptyPromiseStaysUsableAfterRvalueWait) {
  promise<> p;
  auto f = p.get_future();
  p.fulfill_anonymous(1);
  std::move(f).wait();
  EXPECT_TRUE(p.get_future().ready());
}

TEST(Promise, AnonymousDependenciesInPieces) {
  promise<> p;
  p.require_anonymous(1000);
  auto f = p.get_future();
  int fired = 0;
  f.then([&] { ++fired; });
  std::intptr_t left = 1000;
  for (std::intptr_t k = 1; left > 0; ++k) {
    std::intptr_t n = std::min(k, left);
    p.fulfill_anonymous(n);
    left -= n;
    EXPECT_FALSE(f.ready());
  }
  EXPECT_EQ(p.anonymous_remaining(), 1);
  auto g = p.finalize();
  EXPECT_TRUE(f.ready());
  EXPECT_TRUE(g.ready());
  EXPECT_EQ(fired, 1);
}

TEST(Promise, InitialCountAndZero) {
  promise<> zero(0);
  EXPECT_TRUE(zero.get_future().ready());
  promise<> three(3);
  three.fulfill_anonymous(3);
  EXPECT_TRUE(three.get_future().ready());
  promise<int> v(0);
  EXPECT_FALSE(v.get_future().ready());
  v.fulfill_result(1);
  EXPECT_EQ(v.get_future().result(), 1);
}

TEST(Promise, FulfillResultThenFinalize) {
  promise<int, std::string> p;
  auto f = p.get_future();
  p.fulfill_result(7, "seven");
  EXPECT_FALSE(f.ready());
  auto g = p.finalize();
  ASSERT_TRUE(g.ready());
  EXPECT_EQ(g.result(), std::make_tuple(7, std::string("seven")));
}

TEST(Promise, FinalizeThenFulfillResult) {
  promise<int> p;
  p.require_anonymous(2);
  auto f = p.finalize();
  p.fulfill_anonymous(2);
  EXPECT_FALSE(f.ready());  // values still missing
  p.fulfill_result(11);
  EXPECT_EQ(f.result(), 11);
}

TEST(Promise, MisuseThrows) {
  EXPECT_THROW(promise<>(-1), std::logic_error);
  promise<int> p;
  p.fulfill_result(1);
  EXPECT_THROW(p.fulfill_result(2), std::logic_error);
  EXPECT_THROW(p.fulfill_anonymous(2), std::logic_error);
  EXPECT_THROW(p.fulfill_anonymous(-1), std::logic_error);
  EXPECT_THROW(p.require_anonymous(-1), std::logic_error);
  auto f = p.finalize();
  EXPECT_EQ(f.result(), 1);  // the failed calls changed nothing
  EXPECT_THROW(p.finalize(), std::logic_error);
  EXPECT_THROW(p.fulfill_anonymous(1), std::logic_error);
  EXPECT_THROW(p.require_anonymous(1), std::logic_error);
  p.fulfill_anonymous(0);  // no-op is fine

  promise<> e;
  e.fulfill_result();
  EXPECT_THROW(e.fulfill_result(), std::logic_error);
  promise<> moved = std::move(e);
  EXPECT_THROW(e.get_future(), std::logic_error);
  try {
    e.finalize();
    FAIL();
  } catch (const std::logic_error& ex) {
    EXPECT_NE(std::string(ex.what()).find("moved-from"), std::string::npos);
  }
  moved.finalize();
}

TEST(Promise, CallbackExceptionPropagatesToFulfiller) {
  promise<int> p;
  auto f = p.get_future();
  int others = 0;
  auto bad = f.then([](int) -> int { throw std::runtime_error("boom"); });
  auto good = f.then([&](int x) { others += x; });
  auto after = good.then([&] { others += 100; });
  p.fulfill_result(1);
  EXPECT_THROW(p.finalize(), std::runtime_error);
  EXPECT_EQ(others, 101);  // the rest still ran
  EXPECT_FALSE(bad.ready());
  EXPECT_TRUE(after.ready());
  // The thread's machinery is still usable afterwards.
  promise<> q;
  auto r = q.get_future().then([] { return 5; });
  q.finalize();
  EXPECT_EQ(r.result(), 5);
  // Eager callbacks propagate from then() itself.
  EXPECT_THROW(make_future().then([] { throw std::runtime_error("eager"); }), std::runtime_error);
}

// ---- long chains (no recursion) --------------------------------------------
constexpr int kChain = 100000;

TEST(Chains, LongThenChainFulfilledLater) {
  promise<long> p;
  future<long> f = p.get_future();
  for (int i = 0; i < kChain; ++i) f = f.then([](long x) { return x + 1; });
  EXPECT_FALSE(f.ready());
  p.fulfill_result(0L);
  p.finalize();
  ASSERT_TRUE(f.ready());
  EXPECT_EQ(f.result(), kChain);
}

TEST(Chains, LongEmptyChainAndEagerChain) {
  promise<> p;
  future<> f = p.get_future();
  int count = 0;
  for (int i = 0; i < kChain; ++i) f = f.then([&] { ++count; });
  p.finalize();
  EXPECT_TRUE(f.ready());
  EXPECT_EQ(count, kChain);

  future<int> g = make_future(0);
  for (int i = 0; i < kChain; ++i) g = g.then([](int x) { return x + 1; });
  EXPECT_EQ(g.result(), kChain);
}

TEST(Chains, LongFlatteningChain) {
  // Each step returns a non-ready future that another promise fulfils.
  std::vector<promise<int>> inner(1000);
  promise<int> head;
  future<int> f = head.get_future();
  for (auto& q : inner)
    f = f.then([&q](int x) {
      q.fulfill_result(x + 1);
      return q.finalize();
    });
  head.fulfill_result(0);
  head.finalize();
  ASSERT_TRUE(f.ready());
  EXPECT_EQ(f.result(), 1000);

  promise<> h;
  future<> g = h.get_future();
  for (int i = 0; i < kChain; ++i) g = g.then([] { return make_future(); });
  h.finalize();
  EXPECT_TRUE(g.ready());
}

TEST(Chains, DroppingUnfulfilledLongChain) {
  {
    promise<tracked> p;
    future<tracked> f = p.get_future();
    for (int i = 0; i < kChain; ++i) f = f.then([](const tracked& t) { return tracked(t.v + 1); });
  }  // promise and handles dropped: whole chain freed iteratively
  EXPECT_EQ(tracked::live, 0);
}

TEST(Chains, DeepWhenAllTree) {
  std::vector<promise<>> ps(kChain);
  future<> all = make_future();
  for (auto& p : ps) all = when_all(all, p.get_future());
  for (auto& p : ps) p.finalize();
  EXPECT_TRUE(all.ready());
}

// ---- move-only values and big tuples ----------------------------------------
TEST(Values, MoveOnly) {
  future<std::unique_ptr<int>> f;
  future<int> seen;
  {
    promise<std::unique_ptr<int>> p;
    f = p.get_future();
    seen = f.then([](const std::unique_ptr<int>& u) { return *u; });
    p.fulfill_result(std::make_unique<int>(17));
    p.finalize();
  }
  EXPECT_EQ(seen.result(), 17);
  EXPECT_THROW((void)f.result(), std::logic_error);  // would need a copy
  auto f2 = f;
  EXPECT_THROW((void)std::move(f2).result(), std::logic_error);  // shared with f
  f2 = {};
  std::unique_ptr<int> out = std::move(f).wait();  // sole reference: moved out
  ASSERT_TRUE(out);
  EXPECT_EQ(*out, 17);

  auto g = make_future(std::make_unique<int>(3));
  auto h = g.then([](const std::unique_ptr<int>& u) { return std::make_unique<int>(*u * 2); });
  EXPECT_EQ(*std::move(h).result(), 6);

  // flattening through a non-ready future of a move-only value: moved along
  promise<std::unique_ptr<int>> q;
  promise<> outer;
  auto k = outer.get_future().then([&] { return q.get_future(); });
  outer.finalize();
  q.fulfill_result(std::make_unique<int>(5));
  q.fulfill_anonymous(1);  // promise still alive: its reference does not count as a reader
  // (finalize() would return a second reader, so the value could not be moved)
  EXPECT_EQ(*std::move(k).result(), 5);
  EXPECT_THROW(q.get_future(), std::logic_error);  // values moved away

  // the promise alive while the sole future moves out
  promise<std::unique_ptr<int>> r;
  auto rf = r.get_future();
  r.fulfill_result(std::make_unique<int>(8));
  r.finalize();
  EXPECT_EQ(*std::move(rf).wait(), 8);
}

TEST(Values, LargeTuple) {
  using big = future<int, double, char, std::string, std::vector<int>, long, short, float, bool, unsigned>;
  promise<int, double, char, std::string> p1;
  promise<std::vector<int>, long> p2;
  auto all =
      when_all(p1.get_future(), p2.get_future(), make_future(short(7), 1.5f), make_future(), make_future(true, 9u));
  static_assert(std::is_same_v<decltype(all), big>);
  p2.fulfill_result(std::vector<int>{1, 2, 3}, 4L);
  p2.finalize();
  p1.fulfill_result(1, 2.0, 'c', std::string(100, 'x'));
  p1.finalize();
  ASSERT_TRUE(all.ready());
  auto t = all.result();
  EXPECT_EQ(std::get<0>(t), 1);
  EXPECT_EQ(std::get<3>(t), std::string(100, 'x'));
  EXPECT_EQ(std::get<4>(t), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(std::get<6>(t), 7);
  EXPECT_EQ(std::get<9>(t), 9u);
  auto sum =
      all.then([](int a, double b, char, const std::string& s, const std::vector<int>& v, long l, short sh, float f,
                  bool, unsigned u) { return a + b + double(s.size()) + double(v.size()) + double(l) + sh + f + u; });
  EXPECT_DOUBLE_EQ(sum.result(), 1 + 2.0 + 100 + 3 + 4 + 7 + 1.5 + 9);
}

// ---- asynchronous completion through progress() ------------------------------
#ifndef ACCRETE_SHARED_TEST_MAIN
TEST(Async, WaitDrivesProgress) {
  promise<int> p;
  auto f = p.get_future().then([](int x) { return x * 2; });
  g_progress_calls = 0;
  g_progress_queue.push_back([] {});  // an unrelated completion first
  g_progress_queue.push_back([&] { p.fulfill_result(21); });
  g_progress_queue.push_back([&] { p.finalize(); });
  EXPECT_EQ(f.wait(), 42);
  EXPECT_EQ(g_progress_calls, 3);
  EXPECT_TRUE(g_progress_queue.empty());
}

TEST(Async, ManyOperationsConjoined) {
  constexpr int n = 1000;
  std::vector<promise<int>> ps(n);
  future<long> total = make_future(0L);
  for (int i = 0; i < n; ++i) {
    total = when_all(total, ps[i].get_future()).then([](long acc, int v) { return acc + v; });
    g_progress_queue.push_back([&ps, i] {
      ps[i].fulfill_result(i);
      ps[i].finalize();
    });
  }
  EXPECT_FALSE(total.ready());
  EXPECT_EQ(total.wait(), long(n) * (n - 1) / 2);
}

TEST(Async, ProgressThatNeverCompletesBacksOff) {
  promise<> p;
  auto f = p.get_future();
  for (int i = 0; i < 50; ++i) g_progress_queue.push_back([] {});
  g_progress_queue.push_back([&] { p.finalize(); });
  f.wait();
  EXPECT_TRUE(f.ready());
}
#endif

// ---- recycled states ----------------------------------------------------------
// Small states come from a per-thread free list (detail::state_pool): a block
// handed out twice, or a large or over-aligned state squeezed into a pooled
// block, would show up as values overwritten or misplaced here.
struct alignas(64) wide_aligned {
  double v[4];
};

TEST(StatePool, RecycledStatesKeepTheirValues) {
  using pool = accrete::detail::state_pool;
  std::vector<promise<>> empties;
  std::vector<promise<char>> chars;
  std::vector<promise<double>> doubles;
  std::vector<promise<std::array<std::uint64_t, 16>>> large;  // larger than a pooled block
  std::vector<promise<wide_aligned>> aligned;
  std::vector<future<>> empty_f;
  std::vector<future<char>> char_f;
  std::vector<future<double>> double_f;
  std::vector<future<std::array<std::uint64_t, 16>>> large_f;
  std::vector<future<wide_aligned>> aligned_f;
  for (int round = 0; round < 4; ++round) {
    // Live together, so no two may share a block; the previous round's
    // blocks are back in the pool and get handed out again.
    for (int i = 0; i < 3 * int(pool::keep); ++i) {
      empties.emplace_back();
      chars.emplace_back();
      doubles.emplace_back();
      if (i % 8 == 0) large.emplace_back(), aligned.emplace_back();
    }
    for (std::size_t i = 0; i < chars.size(); ++i) {
      empty_f.push_back(empties[i].get_future());
      chars[i].fulfill_result(char('a' + (i + round) % 26));
      doubles[i].fulfill_result(double(i) * 0.5 + round);
      char_f.push_back(chars[i].finalize());
      double_f.push_back(doubles[i].finalize());
    }
    for (std::size_t i = 0; i < large.size(); ++i) {
      std::array<std::uint64_t, 16> a;
      for (std::size_t k = 0; k < a.size(); ++k) a[k] = i * 100 + k + round;
      large[i].fulfill_result(a);
      large_f.push_back(large[i].finalize());
      aligned[i].fulfill_result(wide_aligned{{double(i), double(round), 1.5, -2.0}});
      aligned_f.push_back(aligned[i].finalize());
    }
    for (std::size_t i = 0; i < empties.size(); i += 2) empties[i].finalize();
    for (std::size_t i = 0; i < chars.size(); ++i) {
      ASSERT_EQ(char_f[i].result(), char('a' + (i + round) % 26)) << "round " << round << " state " << i;
      ASSERT_EQ(double_f[i].result(), double(i) * 0.5 + round) << "round " << round << " state " << i;
      ASSERT_EQ(empty_f[i].is_ready(), i % 2 == 0);
    }
    for (std::size_t i = 0; i < large.size(); ++i) {
      const auto& a = large_f[i].result_reference();
      for (std::size_t k = 0; k < a.size(); ++k) ASSERT_EQ(a[k], i * 100 + k + round);
      const wide_aligned& w = aligned_f[i].result_reference();
      ASSERT_EQ(reinterpret_cast<std::uintptr_t>(&w) % alignof(wide_aligned), 0u);
      ASSERT_EQ(w.v[0], double(i));
      ASSERT_EQ(w.v[1], double(round));
    }
    empties.clear(), chars.clear(), doubles.clear(), large.clear(), aligned.clear();
    empty_f.clear(), char_f.clear(), double_f.clear(), large_f.clear(), aligned_f.clear();
    if (accrete::detail::state_pool_enabled) {
      EXPECT_GT(accrete::detail::tls_state_pool.count, 0u);
    }
    EXPECT_LE(accrete::detail::tls_state_pool.count, pool::keep);
  }
}

TEST(StatePool, ThreadsKeepTheirOwnBlocks) {
  // Each thread recycles through its own list; a thread that exits releases
  // what it kept (a sanitizer build would report the blocks otherwise; there
  // the pool is off, so this checks the values on every thread).
  std::vector<std::thread> ts;
  std::vector<long> sums(4, 0);
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([t, &sums] {
      for (int i = 0; i < 20000; ++i) {
        promise<long> p;
        auto f = p.get_future().then([t](long x) { return x + t; });
        p.fulfill_result(long(i));
        p.finalize();
        sums[std::size_t(t)] += f.result();
      }
    });
  for (auto& th : ts) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(sums[std::size_t(t)], 20000L * 19999 / 2 + 20000L * t);
}

// ---- cost of the hot paths (informational) -----------------------------------
TEST(Perf, ReadyPaths) {
  constexpr int iters = 2000000;
  using clk = std::chrono::steady_clock;
  std::uint64_t sink = 0;
  auto t0 = clk::now();
  for (int i = 0; i < iters; ++i) {
    future<> f = make_future();
    f = f.then([&] { ++sink; });
    f.wait();
  }
  auto t1 = clk::now();
  for (int i = 0; i < iters; ++i) {
    promise<> p;
    auto f = p.get_future().then([&] { ++sink; });
    p.finalize();
  }
  auto t2 = clk::now();
  for (int i = 0; i < iters; ++i) sink += make_future(i).then([](int x) { return x + 1; }).result();
  auto t3 = clk::now();
  auto ns = [&](auto a, auto b) { return std::chrono::duration<double, std::nano>(b - a).count() / iters; };
  std::printf(
      "[perf] make_future()+then+wait: %.1f ns; promise+then+finalize: %.1f ns; "
      "make_future(int)+then+result: %.1f ns\n",
      ns(t0, t1), ns(t1, t2), ns(t2, t3));
  // Every callback ran exactly once with the right value: 2 * iters
  // increments plus sum over i of (i + 1).
  const std::uint64_t n = iters;
  EXPECT_EQ(sink, 2 * n + n * (n + 1) / 2);
}

}  // namespace

#ifndef ACCRETE_SHARED_TEST_MAIN
int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
#endif
