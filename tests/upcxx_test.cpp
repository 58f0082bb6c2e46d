// The UPC++ layer (<upcxx/upcxx.hpp>), written as a UPC++ program would use
// it, chapter by chapter of the UPC++ v1.0 specification. Only upcxx:: names
// are used; the results are checked exactly.
#include <upcxx/upcxx.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <list>
#include <map>
#include <optional>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <gtest/gtest.h>

namespace {

// A pointer to every rank's array of n ints, shared through a dist_object.
std::vector<upcxx::global_ptr<int>> everyones(upcxx::global_ptr<int> mine) {
  upcxx::dist_object<upcxx::global_ptr<int>> d(mine);
  std::vector<upcxx::global_ptr<int>> all;
  for (int r = 0; r < upcxx::rank_n(); ++r) all.push_back(d.fetch(r).wait());
  upcxx::barrier();  // nobody fetches from d after this
  return all;
}

// Objects constructed before init(): inactive (UPC++ 2023.3's placeholders).
upcxx::team early_team;
upcxx::atomic_domain<std::int64_t> early_domain;
upcxx::dist_object<std::vector<int>> early_object;
upcxx::cuda_device early_gpu;
upcxx::device_allocator<upcxx::cuda_device> early_allocator;

// Remote completions counted at their target.
int arrived = 0;

// Not trivially copyable (a user-provided copy), declared trivially
// serializable by the program below.
struct pair_with_copy {
  int a = 0;
  double b = 0;
  pair_with_copy() = default;
  pair_with_copy(int x, double y) : a(x), b(y) {}
  pair_with_copy(const pair_with_copy& o) : a(o.a), b(o.b) {}
  pair_with_copy& operator=(const pair_with_copy& o) {
    a = o.a;
    b = o.b;
    return *this;
  }
};

int right() { return (upcxx::rank_me() + 1) % upcxx::rank_n(); }
}  // namespace

template <>
struct upcxx::is_trivially_serializable<pair_with_copy> : std::true_type {};

namespace {
int left() { return (upcxx::rank_me() + upcxx::rank_n() - 1) % upcxx::rank_n(); }

}  // namespace

// 2: init/finalize are reference-counted; the version macros are there.
TEST(Upcxx, InitIsReferenceCounted) {
  static_assert(UPCXX_SPEC_VERSION >= 20201000L);
  static_assert(UPCXX_VERSION >= 20201000L);
#ifdef UPCXX_THREADMODE
  FAIL() << "UPCXX_THREADMODE must be undefined in the SEQ thread mode";
#endif
  upcxx::init();
  upcxx::init();
  EXPECT_TRUE(upcxx::initialized());
  upcxx::intrank_t me = upcxx::rank_me();
  EXPECT_GE(me, 0);
  EXPECT_LT(me, upcxx::rank_n());
  upcxx::finalize();
  EXPECT_TRUE(upcxx::initialized());
  upcxx::finalize();
  EXPECT_FALSE(upcxx::initialized());
  // The runtime the test started natively stays up.
  EXPECT_EQ(upcxx::rank_me(), me);
  EXPECT_THROW(upcxx::finalize(), accrete::collective_misuse);
}

// 3: global pointers, allocation, casts.
// A pointer to a derived object converts to a pointer to any of its
// bases (implicitly, or by static_pointer_cast, and back down) at the
// base's place in the object, as static_cast moves an address: with
// multiple inheritance the second base lies past the first, and RMA through
// the converted pointer must reach it, on any rank.
struct first_part {
  long a = 0;
};
struct second_part {
  long b = 0;
  double c = 0;
};
struct both_parts : first_part, second_part {
  long d = 0;
};
struct shared_root {
  long r = 0;
};
struct via_virtual : virtual shared_root {
  long v = 0;
};
static_assert(!std::is_convertible_v<upcxx::global_ptr<via_virtual>, upcxx::global_ptr<shared_root>>,
              "a virtual base is not reachable through a global pointer");
TEST(Upcxx, GlobalPointerBaseConversions) {
  const int me = upcxx::rank_me();
  upcxx::global_ptr<both_parts> mine = upcxx::new_<both_parts>();
  both_parts* obj = mine.local();
  obj->a = 10 + me;
  obj->b = 20 + me;
  obj->c = 0.5 * me;
  obj->d = 40 + me;
  upcxx::dist_object<upcxx::global_ptr<both_parts>> all(mine);
  upcxx::global_ptr<both_parts> theirs = all.fetch(right()).wait();

  upcxx::global_ptr<second_part> second = theirs;  // implicit, to the second base
  upcxx::global_ptr<first_part> first = theirs;
  upcxx::global_ptr<const second_part> const_second = second;
  upcxx::global_ptr<const second_part> const_from_derived = theirs;  // to const and to the base at once
  EXPECT_EQ(const_from_derived, const_second);
  EXPECT_EQ(second.where(), right());
  const auto base_at = reinterpret_cast<char*>(static_cast<second_part*>(obj)) - reinterpret_cast<char*>(obj);
  ASSERT_GT(base_at, 0);
  EXPECT_EQ(second.offset(), theirs.offset() + std::uint64_t(base_at));
  EXPECT_EQ(upcxx::rget(upcxx_memberof(second, b)).wait(), 20 + right());
  EXPECT_EQ(upcxx::rget(upcxx_memberof(const_second, c)).wait(), 0.5 * right());
  EXPECT_EQ(upcxx::rget(upcxx_memberof(first, a)).wait(), 10 + right());
  EXPECT_EQ(upcxx::static_pointer_cast<second_part>(theirs), second);
  EXPECT_EQ(upcxx::static_pointer_cast<both_parts>(second), theirs);  // back down
  EXPECT_EQ(upcxx::static_pointer_cast<both_parts>(first), theirs);
  if (second.is_local()) {
    EXPECT_EQ(second.local(), static_cast<second_part*>(theirs.local()));
  }
  upcxx::rput(long(70 + me), upcxx_memberof(second, b)).wait();
  upcxx::global_ptr<second_part> none = upcxx::global_ptr<both_parts>();
  EXPECT_TRUE(none.is_null());
  EXPECT_TRUE(upcxx::static_pointer_cast<both_parts>(none).is_null());
  upcxx::barrier();
  EXPECT_EQ(obj->b, 70 + left());  // the left neighbour wrote the second base's field
  EXPECT_EQ(obj->a, 10 + me);      // and nothing else
  EXPECT_EQ(obj->d, 40 + me);
  upcxx::barrier();
  upcxx::delete_(mine);
}

TEST(Upcxx, GlobalPointersAndAllocation) {
  upcxx::init();
  upcxx::global_ptr<int> a = upcxx::new_array<int>(10);
  ASSERT_FALSE(a.is_null());
  EXPECT_TRUE(a.is_local());
  EXPECT_EQ(a.where(), upcxx::rank_me());
  int* la = a.local();
  std::iota(la, la + 10, 100);
  EXPECT_EQ(upcxx::to_global_ptr(la + 3), a + 3);
  EXPECT_EQ((a + 7) - (a + 2), 5);
  int on_stack = 0;
  EXPECT_TRUE(upcxx::try_global_ptr(&on_stack).is_null());
  // upcxx_memberof: the member's global pointer, also of another rank's object.
  struct pair_of {
    double d;
    char c;
    int i;
  };
  upcxx::global_ptr<pair_of> po = upcxx::new_<pair_of>(pair_of{1.5, 'x', 9});
  upcxx::global_ptr<int> pi = upcxx_memberof(po, i);
  EXPECT_EQ(pi.where(), po.where());
  EXPECT_EQ(pi.local(), &po.local()->i);
  EXPECT_EQ(upcxx::rget(pi).wait(), 9);
  EXPECT_EQ(upcxx::rget(upcxx_memberof(po, c)).wait(), 'x');
  EXPECT_EQ(upcxx_memberof_general(po, d).wait().local(), &po.local()->d);
  EXPECT_EQ(upcxx::dynamic_kind(po), upcxx::memory_kind::host);
  upcxx::delete_(po);
  EXPECT_EQ(upcxx::try_global_ptr(la + 9), a + 9);

  upcxx::global_ptr<const int> ca = a;
  EXPECT_EQ(upcxx::const_pointer_cast<int>(ca), a);
  auto bytes = upcxx::reinterpret_pointer_cast<char>(a);
  EXPECT_EQ(upcxx::reinterpret_pointer_cast<int>(bytes + sizeof(int)), a + 1);

  upcxx::global_ptr<std::int64_t> one = upcxx::new_<std::int64_t>(42);
  EXPECT_EQ(*one.local(), 42);
  upcxx::delete_(one);
  upcxx::delete_array(a);

  upcxx::global_ptr<double> raw = upcxx::allocate<double>(4);
  ASSERT_FALSE(raw.is_null());
  upcxx::deallocate(raw);
  void* v = upcxx::allocate(64, 64);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(v) % 64, 0u);
  upcxx::deallocate(v);

  // A request larger than the segment: the throwing and non-throwing forms.
  const std::size_t huge = std::size_t(1) << 50;
  EXPECT_THROW(upcxx::new_array<char>(huge), upcxx::bad_shared_alloc);
  EXPECT_THROW(upcxx::new_array<char>(huge), std::bad_alloc);
  EXPECT_TRUE(upcxx::new_array<char>(huge, std::nothrow).is_null());
  EXPECT_TRUE(upcxx::allocate<char>(huge).is_null());
  EXPECT_EQ(upcxx::allocate(huge), nullptr);
  // A count whose size in bytes overflows says so, rather than naming a
  // wrapped byte count.
  try {
    (void)upcxx::new_array<double>(std::size_t(-1) / 4);
    ADD_FAILURE() << "new_array of 2^62 doubles was accepted";
  } catch (const upcxx::bad_shared_alloc& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(std::size_t(-1) / 4) + " elements of 8 bytes overflow"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(upcxx::new_array<double>(std::size_t(-1) / 4, std::nothrow).is_null());
  upcxx::finalize();
}

// upcxx_memberof_general on classes that are not standard-layout (members
// of different access, members in a base and the derived class, a
// polymorphic class): the member is found on the object, here or at its
// owner. The pointer expression is evaluated once by every form.
namespace {
class access_mix {
 public:
  double tail = 0;
  explicit access_mix(int v = 0) : tail(v + 0.25), hidden_(v) {}
  int hidden() const { return hidden_; }

 private:
  int hidden_;
};
struct with_base_fields {
  int first = 1;
};
struct derived_fields : with_base_fields {
  long second = 2;
  int third = 3;
};
struct polymorphic {
  virtual ~polymorphic() = default;
  int x = 7;
  double y = 8;
};
struct plain_fields {
  char c;
  int i;
  double d;
};
}  // namespace

TEST(Upcxx, MemberofOnAnyLayout) {
  static_assert(!std::is_standard_layout_v<access_mix> && !std::is_standard_layout_v<derived_fields> &&
                !std::is_standard_layout_v<polymorphic> && std::is_standard_layout_v<plain_fields>);
  const int me = upcxx::rank_me(), r = right();
  upcxx::dist_object<upcxx::global_ptr<access_mix>> am(upcxx::new_<access_mix>(me));
  upcxx::dist_object<upcxx::global_ptr<derived_fields>> df(upcxx::new_<derived_fields>());
  upcxx::dist_object<upcxx::global_ptr<polymorphic>> pm(upcxx::new_<polymorphic>());
  upcxx::dist_object<upcxx::global_ptr<plain_fields>> pf(upcxx::new_<plain_fields>(plain_fields{'p', me, me + 0.5}));
  df->local()->third = 100 + me;
  pm->local()->y = 200 + me;
  upcxx::barrier();  // every object filled before it is read
  for (int target : {me, r}) {
    const auto a = am.fetch(target).wait();
    const auto d = df.fetch(target).wait();
    const auto p = pm.fetch(target).wait();
    upcxx::global_ptr<double> tail = upcxx_memberof_general(a, tail).wait();
    EXPECT_EQ(tail.where(), target);
    EXPECT_EQ(upcxx::rget(tail).wait(), target + 0.25);
    EXPECT_EQ(upcxx_memberof_unsafe(a, tail), tail);
    EXPECT_EQ(upcxx::rget(upcxx_memberof_general(d, first).wait()).wait(), 1);
    EXPECT_EQ(upcxx::rget(upcxx_memberof_general(d, second).wait()).wait(), 2);
    EXPECT_EQ(upcxx::rget(upcxx_memberof_general(d, third).wait()).wait(), 100 + target);
    upcxx::global_ptr<const polymorphic> cp = p;
    upcxx::global_ptr<const double> y = upcxx_memberof_general(cp, y).wait();
    EXPECT_EQ(upcxx::rget(y).wait(), 200 + target);
    EXPECT_EQ(upcxx::rget(upcxx_memberof_general(p, x).wait()).wait(), 7);
    if (target == me) {
      EXPECT_EQ(tail.local(), &a.local()->tail);
      EXPECT_EQ(y.local(), &p.local()->y);
    }
  }
  int evaluated = 0;
  const auto remote_plain = pf.fetch(r).wait();
  auto once = [&] {
    ++evaluated;
    return remote_plain;
  };
  EXPECT_EQ(upcxx::rget(upcxx_memberof(once(), i)).wait(), r);
  EXPECT_EQ(upcxx::rget(upcxx_memberof_general(once(), d).wait()).wait(), r + 0.5);
  EXPECT_EQ(upcxx::rget(upcxx_memberof_unsafe(once(), c)).wait(), 'p');
  const auto remote_mix = am.fetch(r).wait();
  auto once_mix = [&] {
    ++evaluated;
    return remote_mix;
  };
  EXPECT_EQ(upcxx::rget(upcxx_memberof_general(once_mix(), tail).wait()).wait(), r + 0.25);
  EXPECT_EQ(evaluated, 4);
  EXPECT_TRUE(upcxx_memberof_general(upcxx::global_ptr<access_mix>(), tail).wait().is_null());
  upcxx::barrier();  // nobody reads the objects after this
  upcxx::delete_(*am);
  upcxx::delete_(*df);
  upcxx::delete_(*pm);
  upcxx::delete_(*pf);
}

// 4: futures and promises.
TEST(Upcxx, FuturesAndPromises) {
  upcxx::future<int, double> f = upcxx::make_future(3, 0.5);
  EXPECT_TRUE(f.is_ready());
  EXPECT_EQ(f.result<0>(), 3);
  EXPECT_EQ(f.result_reference<1>(), 0.5);
  EXPECT_EQ(std::get<0>(f.results()), 3);
  EXPECT_EQ(f.wait_tuple(), std::make_tuple(3, 0.5));

  upcxx::promise<int> p;
  upcxx::future<int> g = p.get_future();
  upcxx::future<std::string> h = g.then([](int x) { return std::to_string(x * 2); });
  upcxx::future<int, std::string> both = upcxx::when_all(g, h);
  EXPECT_FALSE(both.is_ready());
  p.fulfill_result(21);  // fulfills the one dependency a promise starts with
  EXPECT_TRUE(both.is_ready());
  EXPECT_EQ(both.result<1>(), "42");

  // fulfill_result counts one dependency of any promise, empty ones too.
  upcxx::promise<> e;
  upcxx::future<> ef = e.get_future();
  e.fulfill_result();
  EXPECT_TRUE(ef.is_ready());
  upcxx::promise<long> two(2);
  two.fulfill_result(5L);
  EXPECT_FALSE(two.get_future().is_ready());
  EXPECT_EQ(two.finalize().wait(), 5L);
  upcxx::promise<int> extra;
  extra.require_anonymous(1);
  extra.fulfill_result(3);
  EXPECT_FALSE(extra.get_future().is_ready());
  extra.fulfill_anonymous(1);
  EXPECT_EQ(extra.get_future().wait(), 3);
  EXPECT_THROW(upcxx::promise<int>(0), std::logic_error);

  upcxx::promise<> counted;
  counted.require_anonymous(2);
  counted.fulfill_anonymous(1);
  upcxx::future<> c = counted.finalize();
  EXPECT_FALSE(c.is_ready());
  counted.fulfill_anonymous(1);
  EXPECT_TRUE(c.is_ready());

  EXPECT_EQ(upcxx::to_future(7).wait(), 7);
  EXPECT_EQ(upcxx::to_future(upcxx::make_future(8)).wait(), 8);
}

// 6 + 7: rput/rget with every completion kind, to the right neighbour.
TEST(Upcxx, RmaWithCompletions) {
  const int n = 1000;
  auto all = everyones(upcxx::new_array<int>(4 * n));
  upcxx::global_ptr<int> dst = all[std::size_t(right())];
  const int me = upcxx::rank_me();
  std::vector<int> src(n);
  std::iota(src.begin(), src.end(), me * 10000);

  // Default: a future for operation completion.
  upcxx::rput(src.data(), dst, n).wait();
  // Operation and source completion as futures: a tuple, in request order.
  auto [op, srcf] =
      upcxx::rput(src.data(), dst + n, n, upcxx::operation_cx::as_future() | upcxx::source_cx::as_future());
  srcf.wait();
  op.wait();
  // Into a promise, with a buffered source that may be overwritten at once.
  upcxx::promise<> pr;
  upcxx::rput(src.data(), dst + 2 * n, n, upcxx::operation_cx::as_promise(pr) | upcxx::source_cx::as_buffered());
  std::vector<int> keep = src;
  std::fill(src.begin(), src.end(), -1);
  pr.finalize().wait();
  // Blocking source completion, then a value put.
  upcxx::future<> last =
      upcxx::rput(keep.data(), dst + 3 * n, n - 1, upcxx::source_cx::as_blocking() | upcxx::operation_cx::as_future());
  last.wait();
  upcxx::rput(-7, dst + 4 * n - 1).wait();
  upcxx::barrier();

  // Check what the left neighbour wrote here, by rget from my own segment
  // and from the left neighbour's (both forms of rget).
  upcxx::global_ptr<int> mine = all[std::size_t(me)];
  std::vector<int> got(4 * n);
  upcxx::rget(mine, got.data(), 4 * n).wait();
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < n; ++i) {
      int want = (k == 3 && i == n - 1) ? -7 : left() * 10000 + i;
      ASSERT_EQ(got[std::size_t(k * n + i)], want) << "block " << k << " element " << i;
    }
  EXPECT_EQ(upcxx::rget(all[std::size_t(right())] + 5).wait(), me * 10000 + 5);
  upcxx::promise<int> pv;
  upcxx::rget(all[std::size_t(right())] + 6, upcxx::operation_cx::as_promise(pv));
  EXPECT_EQ(pv.finalize().wait(), me * 10000 + 6);
  upcxx::barrier();
  upcxx::delete_array(mine);
}

// 7: copy between two global pointers, neither of them necessarily local.
TEST(Upcxx, CopyBetweenGlobalPointers) {
  const int n = 300;
  auto all = everyones(upcxx::new_array<int>(2 * n));
  const int me = upcxx::rank_me();
  int* mine = all[std::size_t(me)].local();
  std::iota(mine, mine + n, me * 1000);
  upcxx::barrier();
  // right's first half -> left's second half: a third party when P > 2.
  upcxx::copy(all[std::size_t(right())], all[std::size_t(left())] + n, n).wait();
  upcxx::barrier();
  // My second half was written by my right neighbour (whose left I am),
  // from its right neighbour's first half.
  int from = (me + 2) % upcxx::rank_n();
  for (int i = 0; i < n; ++i) ASSERT_EQ(mine[n + i], from * 1000 + i) << "element " << i;
  upcxx::barrier();
  // A count no segment holds is refused by name before anything moves (a
  // copy between two other processes would first allocate its bounce buffer
  // for it), and the data stays as it was.
  const std::size_t beyond = std::size_t(upcxx::shared_segment_size()) / sizeof(int) + 1;
  const auto src = all[std::size_t(right())], dest = all[std::size_t(left())];
  for (std::size_t count : {beyond, std::size_t(1) << 62}) {
    try {
      upcxx::copy(src, dest, count).wait();
      ADD_FAILURE() << "copy of " << count << " elements was not refused";
    } catch (const accrete::bad_global_ptr& e) {
      EXPECT_NE(std::string(e.what()).find("copy"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(count == beyond ? "run past its segment" : std::to_string(count)),
                std::string::npos)
          << e.what();
    }
  }
  upcxx::barrier();
  for (int i = 0; i < n; ++i) ASSERT_EQ(mine[n + i], from * 1000 + i) << "element " << i;
  upcxx::barrier();
  upcxx::delete_array(all[std::size_t(me)]);
}

// 6: remote completion runs at the target after the data is there.
TEST(Upcxx, RemoteCompletionSeesTheData) {
  static int seen = 0;  // set by the remote completion at the target
  seen = 0;
  auto all = everyones(upcxx::new_array<int>(64));
  std::vector<int> v(64, upcxx::rank_me() + 1);
  upcxx::rput(
      v.data(), all[std::size_t(right())], 64,
      upcxx::remote_cx::as_rpc([](upcxx::global_ptr<int> p) { seen = std::accumulate(p.local(), p.local() + 64, 0); },
                               all[std::size_t(right())]) |
          upcxx::operation_cx::as_future())
      .wait();
  while (seen == 0) upcxx::progress();
  EXPECT_EQ(seen, 64 * (left() + 1));
  upcxx::barrier();
  upcxx::delete_array(all[std::size_t(upcxx::rank_me())]);
}

// 8 + 9: RPC, dist_object arguments, views.
TEST(Upcxx, RpcDistObjectAndView) {
  upcxx::dist_object<std::vector<int>> store(std::vector<int>{});
  std::vector<int> mine{upcxx::rank_me(), 1, 2, 3};
  upcxx::rpc(
      right(), [](upcxx::dist_object<std::vector<int>>& s, upcxx::view<int> v) { s->assign(v.begin(), v.end()); },
      store, upcxx::make_view(mine))
      .wait();
  int sq = upcxx::rpc(
               left(), [](int x) { return x * x; }, upcxx::rank_me() + 3)
               .wait();
  EXPECT_EQ(sq, (upcxx::rank_me() + 3) * (upcxx::rank_me() + 3));
  upcxx::barrier();
  EXPECT_EQ(*store, (std::vector<int>{left(), 1, 2, 3}));
  upcxx::barrier();
}

// 12: collectives with op_fast_* and op_*.
TEST(Upcxx, Collectives) {
  const int n = upcxx::rank_n();
  const int me = upcxx::rank_me();
  EXPECT_EQ(upcxx::reduce_all(me + 1, upcxx::op_fast_add).wait(), n * (n + 1) / 2);
  EXPECT_EQ(upcxx::reduce_all(me, upcxx::op_max).wait(), n - 1);
  int one = upcxx::reduce_one(me + 1, upcxx::op_mul, 0).wait();
  if (me == 0) {
    int fact = 1;
    for (int i = 2; i <= n; ++i) fact *= i;
    EXPECT_EQ(one, fact);
  }
  EXPECT_EQ(upcxx::broadcast(me == n - 1 ? 77 : 0, n - 1).wait(), 77);
  upcxx::barrier_async().wait();
  const upcxx::team& odd_even = upcxx::world();
  EXPECT_EQ(odd_even.rank_n(), n);
  upcxx::team half = upcxx::world().split(me % 2, me);
  EXPECT_EQ(half.rank_n(), (n + 1 - me % 2) / 2);
  EXPECT_EQ(upcxx::reduce_all(1, upcxx::op_fast_add, half).wait(), half.rank_n());

  // With completion requests (the team then named): futures, promises, lpc.
  const upcxx::team& w = upcxx::world();
  upcxx::barrier_async(w, upcxx::operation_cx::as_future()).wait();
  upcxx::promise<int> sum;
  upcxx::reduce_all(me + 1, upcxx::op_fast_add, w, upcxx::operation_cx::as_promise(sum));
  EXPECT_EQ(sum.finalize().wait(), n * (n + 1) / 2);
  int seen = 0;
  upcxx::promise<> ran;
  ran.require_anonymous(1);
  upcxx::reduce_one(me, upcxx::op_fast_max, 0, w,
                    upcxx::operation_cx::as_lpc(upcxx::current_persona(), [&seen, &ran](int v) {
                      seen = v + 1;
                      ran.fulfill_anonymous(1);
                    }));
  ran.finalize().wait();
  if (me == 0) {
    EXPECT_EQ(seen, n);
  }
  auto [b, done] = upcxx::broadcast(me == 0 ? 5 : -1, 0, w,
                                    upcxx::operation_cx::as_future() | upcxx::operation_cx::as_defer_future());
  EXPECT_EQ(b.wait(), 5);
  EXPECT_EQ(done.wait(), 5);
  std::vector<long> v(4, me == n - 1 ? 9 : 0), all(4, 0);
  upcxx::promise<> p;
  upcxx::broadcast(v.data(), v.size(), n - 1, w, upcxx::operation_cx::as_promise(p));
  p.finalize().wait();
  EXPECT_EQ(v, std::vector<long>(4, 9));
  for (auto& x : v) x = me;
  upcxx::reduce_all(v.data(), all.data(), v.size(), upcxx::op_fast_add, w, upcxx::operation_cx::as_future()).wait();
  EXPECT_EQ(all, std::vector<long>(4, long(n) * (n - 1) / 2));
  std::fill(all.begin(), all.end(), -1);
  upcxx::reduce_one(v.data(), all.data(), v.size(), upcxx::op_fast_min, n - 1, w, upcxx::operation_cx::as_future())
      .wait();
  if (me == n - 1) {
    EXPECT_EQ(all, std::vector<long>(4, 0));
  }
}

// 13: atomics, with the set of operations named at construction.
TEST(Upcxx, AtomicDomain) {
  using upcxx::atomic_op;
  upcxx::atomic_domain<std::int64_t> ad({atomic_op::fetch_add, atomic_op::inc, atomic_op::load, atomic_op::store,
                                         atomic_op::compare_exchange, atomic_op::fetch_max, atomic_op::bit_or});
  upcxx::global_ptr<std::int64_t> c0 =
      upcxx::broadcast(upcxx::rank_me() == 0 ? upcxx::new_<std::int64_t>(0) : nullptr, 0).wait();
  const int n = upcxx::rank_n();
  for (int i = 0; i < 10; ++i) ad.inc(c0, std::memory_order_relaxed).wait();
  std::int64_t before = ad.fetch_add(c0, 1000, std::memory_order_relaxed).wait();
  EXPECT_GE(before, 10);
  ad.fetch_max(c0, -1, std::memory_order_relaxed).wait();
  ad.bit_or(c0, 0, std::memory_order_relaxed).wait();
  upcxx::barrier();
  EXPECT_EQ(ad.load(c0, std::memory_order_relaxed).wait(), 1010 * n);
  EXPECT_THROW(ad.fetch_sub(c0, 1, std::memory_order_relaxed), accrete::error);
  upcxx::barrier();
  if (upcxx::rank_me() == 0) {
    EXPECT_EQ(ad.compare_exchange(c0, 1010 * n, 5, std::memory_order_acq_rel).wait(), 1010 * n);
    EXPECT_EQ(ad.load(c0, std::memory_order_relaxed).wait(), 5);
  }
  upcxx::barrier();
  ad.destroy();
  if (upcxx::rank_me() == 0) upcxx::delete_(c0);
}

// 13: mul and fetch_mul, on integers and on floating point, with every
// completion form.
TEST(Upcxx, AtomicDomainMultiplies) {
  using upcxx::atomic_op;
  upcxx::atomic_domain<std::int64_t> ai({atomic_op::mul, atomic_op::fetch_mul, atomic_op::load});
  upcxx::atomic_domain<double> ad({atomic_op::mul, atomic_op::fetch_mul, atomic_op::load});
  auto ci = upcxx::broadcast(upcxx::rank_me() == 0 ? upcxx::new_<std::int64_t>(1) : nullptr, 0).wait();
  auto cd = upcxx::broadcast(upcxx::rank_me() == 0 ? upcxx::new_<double>(1.0) : nullptr, 0).wait();
  const int n = upcxx::rank_n();
  ai.mul(ci, 3, std::memory_order_relaxed).wait();
  upcxx::promise<> p;
  ad.mul(cd, 0.5, std::memory_order_relaxed, upcxx::operation_cx::as_promise(p));
  p.finalize().wait();
  const double seen = ad.fetch_mul(cd, 4.0, std::memory_order_relaxed).wait();
  int e = 0;
  EXPECT_EQ(std::frexp(seen, &e), 0.5) << seen << " is not a product of the factors 0.5 and 4";
  upcxx::barrier();
  std::int64_t three_n = 1;
  for (int r = 0; r < n; ++r) three_n *= 3;
  EXPECT_EQ(ai.load(ci, std::memory_order_relaxed).wait(), three_n);
  EXPECT_EQ(ad.load(cd, std::memory_order_relaxed).wait(), std::ldexp(1.0, n));  // (0.5 * 4)^n
  EXPECT_EQ(ai.fetch_mul(ci, 1, std::memory_order_relaxed).wait(), three_n);
  upcxx::barrier();
  ai.destroy();
  ad.destroy();
  if (upcxx::rank_me() == 0) {
    upcxx::delete_(ci);
    upcxx::delete_(cd);
  }
}

// 10: internal progress moves data but runs no RPC body.
TEST(Upcxx, InternalProgressRunsNoUserCode) {
  static int ran = 0;
  ran = 0;
  upcxx::barrier();
  upcxx::rpc_ff(upcxx::rank_me(), [] { ++ran; });
  for (int i = 0; i < 100; ++i) upcxx::progress(upcxx::progress_level::internal);
  EXPECT_EQ(ran, 0);
  while (ran == 0) upcxx::progress();
  EXPECT_EQ(ran, 1);
  upcxx::barrier();
}

TEST(Upcxx, SayPrefixesTheRank) {
  testing::internal::CaptureStdout();
  upcxx::say() << "x = " << 5;
  upcxx::say("rank %d: ") << "done";
  std::string out = testing::internal::GetCapturedStdout();
  std::string r = std::to_string(upcxx::rank_me());
  EXPECT_EQ(out, "[" + r + "] x = 5\nrank " + r + ": done\n");

  std::ostringstream to;
  upcxx::experimental::say(to) << "to a stream " << 6;
  upcxx::say(to, "") << "no prefix";
  EXPECT_EQ(to.str(), "[" + r + "] to a stream 6\nno prefix\n");
}

// The broadcast and reductions UPC++ keeps in upcxx::experimental for
// values that are serializable but not trivially serializable.
TEST(Upcxx, ExperimentalSerializedCollectives) {
  const int me = upcxx::rank_me(), n = upcxx::rank_n();
  std::string want;
  for (int r = 0; r < n; ++r) want += std::to_string(r) + ",";
  EXPECT_EQ(upcxx::experimental::reduce_all(std::to_string(me) + ",", upcxx::experimental::op_add).wait(), want);

  upcxx::promise<std::string> p;
  upcxx::experimental::reduce_one(std::to_string(me) + ",", upcxx::experimental::op_add, n - 1, upcxx::world(),
                                  upcxx::operation_cx::as_promise(p));
  std::string at_root = p.finalize().wait();
  if (me == n - 1) {
    EXPECT_EQ(at_root, want);
  }

  // The largest set, by std::set's own operator<, with a deferred future.
  std::set<int> mine{me, 100 + me};
  upcxx::future<std::set<int>> biggest = upcxx::experimental::reduce_all(
      mine, upcxx::experimental::op_max, upcxx::world(), upcxx::operation_cx::as_defer_future());
  EXPECT_FALSE(biggest.is_ready());
  EXPECT_EQ(biggest.wait(), (std::set<int>{n - 1, 99 + n}));

  std::vector<std::string> words;
  if (me == 0) words = {"rank", "zero", std::string(2000, 'w')};
  std::vector<std::string> got = upcxx::experimental::broadcast(words, 0).wait();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[1], "zero");
  EXPECT_EQ(got[2], std::string(2000, 'w'));
}

TEST(Upcxx, GlobalPointerCheck) {
  upcxx::global_ptr<double> none;
  none.check();
  EXPECT_THROW(none.check(false), accrete::bad_global_ptr);

  // Every process checks every process's pointer: no communication, and
  // valid wherever the pointer is.
  upcxx::global_ptr<double> mine = upcxx::new_array<double>(4);
  upcxx::dist_object<upcxx::global_ptr<double>> d(mine);
  const int right = (upcxx::rank_me() + 1) % upcxx::rank_n();
  upcxx::global_ptr<double> theirs = d.fetch(right).wait();
  mine.check();
  mine.check(false);
  (theirs + 3).check(false);

  // Misaligned: one byte into a double.
  auto bytes = upcxx::reinterpret_pointer_cast<char>(theirs);
  upcxx::reinterpret_pointer_cast<double>(bytes + 8).check();
  try {
    upcxx::reinterpret_pointer_cast<double>(bytes + 1).check();
    ADD_FAILURE() << "a misaligned pointer passed check()";
  } catch (const accrete::bad_global_ptr& e) {
    EXPECT_NE(std::string(e.what()).find("not aligned to 8 bytes"), std::string::npos) << e.what();
  }
  // Past the end of the segment, and a rank that does not exist.
  const std::ptrdiff_t seg_doubles = std::ptrdiff_t(upcxx::shared_segment_size() / sizeof(double));
  EXPECT_THROW((theirs + seg_doubles).check(), accrete::bad_global_ptr);
  EXPECT_THROW(accrete::detail::gp_access::make<double>(upcxx::rank_n(), 0).check(), accrete::bad_global_ptr);
  // A void pointer has no alignment to check.
  upcxx::reinterpret_pointer_cast<void>(bytes + 1).check(false);

  upcxx::barrier();  // nobody fetches from d after this
  upcxx::delete_array(mine);
}

// Serialization: the macros, a UPC++-protocol specialization, recursion and
// standard containers, all through RPC.
namespace {
struct tree {
  int value = 0;
  std::vector<tree> children;
  UPCXX_SERIALIZED_FIELDS(value, children)
  int sum() const {
    int s = value;
    for (const tree& c : children) s += c.sum();
    return s;
  }
};

class fraction {
 public:
  fraction(long n, long d) : num_(n), den_(d) {}
  long num() const { return num_; }
  long den() const { return den_; }
  UPCXX_SERIALIZED_VALUES(num_, den_)

 private:
  long num_, den_;
};

// A type with a hand-written UPC++ rule: sent as its length and characters
// in reverse, read back in place.
struct reversed {
  std::string text;
};

struct handle {
  int fd;
  UPCXX_SERIALIZED_DELETE()
};
}  // namespace

template <>
struct upcxx::serialization<reversed> {
  template <class Writer>
  static void serialize(Writer& w, const reversed& x) {
    w.write(std::uint32_t(x.text.size()));
    w.write_sequence(x.text.rbegin(), x.text.rend(), x.text.size());
  }
  template <class Reader>
  static reversed* deserialize(Reader& r, void* storage) {
    auto n = r.template read<std::uint32_t>();
    std::string s(n, ' ');
    for (std::uint32_t i = 0; i < n; ++i) s[n - 1 - i] = r.template read<char>();
    return ::new (storage) reversed{std::move(s)};
  }
};

static_assert(upcxx::is_serializable<tree>::value);
static_assert(upcxx::is_serializable<reversed>::value);
static_assert(!upcxx::is_serializable<handle>::value);
static_assert(upcxx::is_trivially_serializable<int>::value);
static_assert(!upcxx::is_trivially_serializable<reversed>::value);
static_assert(std::is_same_v<upcxx::deserialized_type_t<std::map<int, std::list<int>>>, std::map<int, std::list<int>>>);

TEST(Upcxx, SerializationThroughRpc) {
  tree t{1, {tree{2, {}}, tree{3, {tree{4, {}}}}}};
  EXPECT_EQ(upcxx::rpc(
                right(), [](const tree& x) { return x.sum(); }, t)
                .wait(),
            10);
  tree back = upcxx::rpc(
                  right(),
                  [](tree x) {
                    x.children.push_back(tree{5, {}});
                    return x;
                  },
                  t)
                  .wait();
  EXPECT_EQ(back.sum(), 15);
  ASSERT_EQ(back.children.size(), 3u);
  EXPECT_EQ(back.children[1].children[0].value, 4);

  fraction f = upcxx::rpc(
                   right(), [](fraction x) { return fraction(x.num() * 2, x.den()); }, fraction(3, 7))
                   .wait();
  EXPECT_EQ(f.num(), 6);
  EXPECT_EQ(f.den(), 7);

  reversed r = upcxx::rpc(
                   right(), [](const reversed& x) { return reversed{x.text + "!"}; }, reversed{"abc"})
                   .wait();
  EXPECT_EQ(r.text, "abc!");

  std::map<std::string, std::list<int>> m{{"a", {1, 2}}, {"b", {}}};
  std::optional<int> none;
  auto sizes = upcxx::rpc(
                   right(),
                   [](const std::map<std::string, std::list<int>>& x, std::optional<int> o) {
                     return std::make_pair(x.size() + x.at("a").size(), o.has_value());
                   },
                   m, none)
                   .wait();
  EXPECT_EQ(sizes.first, 4u);
  EXPECT_FALSE(sizes.second);
  upcxx::barrier();
}

// Teams: ids that travel, operator[], destroy, local_team_contains.
TEST(Upcxx, TeamsAndTheirIds) {
  const int me = upcxx::rank_me(), n = upcxx::rank_n();
  upcxx::team parity = upcxx::world().split(me % 2, me);
  for (int r = 0; r < parity.rank_n(); ++r) EXPECT_EQ(parity[r], 2 * r + me % 2);
  EXPECT_EQ(parity.from_world(me), me / 2);
  upcxx::team_id pid = parity.id();
  EXPECT_EQ(&pid.here(), &parity);
  upcxx::barrier();  // every process has its parity team before ids travel
  // The id travels: a process of the same parity finds its own team by it.
  int peer = (me + 2) % n;
  if (peer % 2 == me % 2) {
    int size_there = upcxx::rpc(
                         peer, [](upcxx::team_id id) { return id.here().rank_n(); }, pid)
                         .wait();
    EXPECT_EQ(size_there, parity.rank_n());
  }
  EXPECT_EQ(&upcxx::world().id().here(), &upcxx::world());
  upcxx::barrier();
  parity.destroy();
  EXPECT_THROW(pid.here(), accrete::error);
  EXPECT_THROW(upcxx::world().destroy(), accrete::error);
  EXPECT_TRUE(upcxx::local_team_contains(me));
  int local = 0;
  for (int r = 0; r < n; ++r) local += upcxx::local_team_contains(r);
  EXPECT_EQ(local, upcxx::local_team().rank_n());
}

// dist_object: constructed from arguments on a team, named by an id that
// travels and is resolved at the target.
TEST(Upcxx, DistObjectIds) {
  upcxx::dist_object<std::vector<int>> v(upcxx::world(), 3, upcxx::rank_me());
  EXPECT_EQ(*v, std::vector<int>(3, upcxx::rank_me()));
  upcxx::dist_id<std::vector<int>> id = v.id();
  EXPECT_EQ(&id.here(), &v);
  upcxx::barrier();  // constructed everywhere before ids travel
  std::size_t there =
      upcxx::rpc(
          right(), [](upcxx::dist_id<std::vector<int>> d) { return d.here()->size() + std::size_t(d.here()->front()); },
          id)
          .wait();
  EXPECT_EQ(there, 3u + std::size_t(right()));
  upcxx::barrier();
}

// when_here: ready at once for a team or dist_object the caller has; for a
// dist_object named before the caller constructs it, ready during the
// user-level progress after the construction, not inside it.
upcxx::dist_id<int> early_id;
upcxx::promise<>* early_arrived = nullptr;

TEST(Upcxx, WhenHere) {
  const int me = upcxx::rank_me(), n = upcxx::rank_n();
  upcxx::team parity = upcxx::world().split(me % 2, me);
  upcxx::future<upcxx::team&> ft = parity.id().when_here();
  ASSERT_TRUE(ft.is_ready());
  EXPECT_EQ(&ft.wait(), &parity);
  EXPECT_EQ(&upcxx::world().id().when_here().wait(), &upcxx::world());
  EXPECT_THROW(upcxx::team_id().when_here(), accrete::error);

  upcxx::promise<> arrived;
  arrived.require_anonymous(1);  // fulfilled by rank 0's RPC
  early_arrived = &arrived;
  upcxx::barrier();
  if (me == 0) {
    upcxx::dist_object<int> d(100);
    EXPECT_EQ(&d.id().when_here().wait(), &d);
    if (n > 1)
      upcxx::rpc_ff(
          1,
          [](upcxx::dist_id<int> id) {
            early_id = id;
            early_arrived->fulfill_anonymous(1);
          },
          d.id());
    upcxx::barrier();
  } else if (me == 1) {
    arrived.finalize().wait();  // rank 0's id is here; this process has no instance yet
    upcxx::future<upcxx::dist_object<int>&> f = early_id.when_here();
    EXPECT_FALSE(f.is_ready());
    int seen = -1;
    upcxx::future<> g = f.then([&seen](upcxx::dist_object<int>& o) { seen = *o; });
    upcxx::dist_object<int> d(101);
    EXPECT_FALSE(f.is_ready());
    upcxx::progress();
    ASSERT_TRUE(f.is_ready());
    EXPECT_EQ(&f.wait(), &d);
    EXPECT_TRUE(g.is_ready());
    EXPECT_EQ(seen, 101);
    upcxx::barrier();
  } else {
    upcxx::dist_object<int> d(100 + me);
    upcxx::barrier();
  }
  // Every instance of that object is destroyed now: asking again fails.
  if (me == 1) {
    EXPECT_THROW(early_id.when_here(), accrete::error);
  }
  upcxx::barrier();
}

// discharge: after it, nothing this process issued waits for its progress.
TEST(Upcxx, DischargeCompletesOutgoingTransfers) {
  auto all = everyones(upcxx::new_array<int>(256));
  std::vector<int> src(256, upcxx::rank_me() + 1);
  upcxx::future<> f = upcxx::rput(src.data(), all[std::size_t(right())], 256);
  upcxx::discharge();
  EXPECT_FALSE(upcxx::progress_required());
  f.wait();
  upcxx::barrier();
  const int* mine = all[std::size_t(upcxx::rank_me())].local();
  for (int i = 0; i < 256; ++i) ASSERT_EQ(mine[i], left() + 1);
  upcxx::barrier();
  upcxx::delete_array(all[std::size_t(upcxx::rank_me())]);
}

// Personas in SEQ mode: lpc runs in user-level progress, never inside the
// call; as_lpc and deferred completions likewise.
TEST(Upcxx, LpcAndDeferredCompletions) {
  int ran = 0;
  upcxx::future<int> f = upcxx::current_persona().lpc([&ran] { return ++ran * 10; });
  upcxx::master_persona().lpc_ff([&ran] { ran += 100; });
  EXPECT_EQ(ran, 0);  // not before progress
  EXPECT_EQ(f.wait(), 10);
  upcxx::progress();
  EXPECT_EQ(ran, 101);
  upcxx::future<int> nested = upcxx::master_persona().lpc([] { return upcxx::make_future(7); });
  EXPECT_EQ(nested.wait(), 7);
  {
    upcxx::persona_scope scope(upcxx::master_persona());
    EXPECT_TRUE(upcxx::current_persona().active_with_caller());
  }

  // A put to myself finishes inside the call: the eager future is ready at
  // once, the deferred one only after progress, and the lpc runs then too.
  upcxx::global_ptr<int> mine = upcxx::new_<int>(0);
  int lpc_seen = -1;
  auto [eager, deferred] =
      upcxx::rput(5, mine, upcxx::operation_cx::as_future() | upcxx::operation_cx::as_defer_future());
  EXPECT_TRUE(eager.is_ready());
  EXPECT_FALSE(deferred.is_ready());
  upcxx::rput(6, mine,
              upcxx::operation_cx::as_lpc(upcxx::current_persona(), [&lpc_seen, mine] { lpc_seen = *mine.local(); }));
  EXPECT_EQ(lpc_seen, -1);
  deferred.wait();
  upcxx::progress();
  EXPECT_EQ(lpc_seen, 6);
  int got = 0;
  upcxx::rget(mine, upcxx::operation_cx::as_lpc(upcxx::current_persona(), [&got](int v) { got = v; }));
  while (got == 0) upcxx::progress();
  EXPECT_EQ(got, 6);
  upcxx::delete_(mine);
}

// in_progress(): true in what user-level progress runs (an lpc, a
// callback of a future that became ready there, an RPC body), false in the
// program's own code and in a callback that runs at once.
TEST(Upcxx, InProgressTellsTheRestrictedContext) {
  EXPECT_FALSE(upcxx::in_progress());
  EXPECT_TRUE(upcxx::current_persona().lpc([] { return upcxx::in_progress(); }).wait());
  bool eager = true;
  upcxx::make_future().then([&eager] { eager = upcxx::in_progress(); });
  EXPECT_FALSE(eager);
  upcxx::promise<> later;
  bool called_back = false;
  auto cb = later.get_future().then([&called_back] { called_back = upcxx::in_progress(); });
  upcxx::current_persona().lpc_ff([later]() mutable { later.finalize(); });
  cb.wait();
  EXPECT_TRUE(called_back);
  EXPECT_TRUE(upcxx::rpc(right(), [] { return upcxx::in_progress(); }).wait());
  EXPECT_FALSE(upcxx::in_progress());
  upcxx::barrier();
}

// local_team_position(): the same count everywhere, the count of distinct
// local teams; the index equal exactly for processes of one local team, and
// the local teams numbered in the order of their first world rank.
TEST(Upcxx, LocalTeamPosition) {
  upcxx::init();  // counts (the runtime runs already) and finds the position
  const auto [index, count] = upcxx::local_team_position();
  upcxx::dist_object<std::array<int, 3>> mine(std::array<int, 3>{index, count, upcxx::local_team()[0]});
  std::vector<std::array<int, 3>> all;
  for (int r = 0; r < upcxx::rank_n(); ++r) all.push_back(mine.fetch(r).wait());
  // Local teams need not be blocks of world ranks (a cyclic placement
  // deals them over the hosts), so the leaders are collected, not assumed
  // to arrive in order; positions follow the leaders' world ranks.
  std::set<int> leader_set;
  for (const auto& a : all) {
    EXPECT_EQ(a[1], count);
    leader_set.insert(a[2]);
  }
  const std::vector<int> leaders(leader_set.begin(), leader_set.end());
  EXPECT_EQ(count, int(leaders.size()));
  for (const auto& a : all) {
    EXPECT_GE(a[0], 0);
    EXPECT_LT(a[0], count);
    if (a[0] >= 0 && a[0] < int(leaders.size())) {
      EXPECT_EQ(leaders[std::size_t(a[0])], a[2]);
    }
  }
  upcxx::barrier();
  upcxx::finalize();
}

// rpc and rpc_ff with completion requests.
TEST(Upcxx, RpcWithCompletions) {
  upcxx::promise<int> p;
  upcxx::rpc(
      right(), upcxx::operation_cx::as_promise(p), [](int x) { return x + 1; }, upcxx::rank_me());
  EXPECT_EQ(p.finalize().wait(), upcxx::rank_me() + 1);
  auto [src, op] = upcxx::rpc(
      left(), upcxx::source_cx::as_future() | upcxx::operation_cx::as_future(), [](std::string s) { return s.size(); },
      std::string("four"));
  EXPECT_EQ(op.wait(), 4u);
  EXPECT_TRUE(src.is_ready());
  static int pinged = 0;
  pinged = 0;
  upcxx::barrier();
  upcxx::future<> sent = upcxx::rpc_ff(right(), upcxx::source_cx::as_future(), [] { ++pinged; });
  EXPECT_TRUE(sent.is_ready());
  while (pinged == 0) upcxx::progress();
  EXPECT_EQ(pinged, 1);
  upcxx::barrier();
}

// team::create from explicit lists: the first and second halves of the
// world, each in reverse order; a bad list fails on every member.
TEST(Upcxx, TeamCreateFromLists) {
  const int me = upcxx::rank_me(), n = upcxx::rank_n();
  const int half = n / 2;
  std::vector<int> mine;
  if (me < half)
    for (int r = half - 1; r >= 0; --r) mine.push_back(r);
  else
    for (int r = n - 1; r >= half; --r) mine.push_back(r);
  upcxx::team t = upcxx::world().create(mine);
  ASSERT_EQ(t.rank_n(), int(mine.size()));
  for (int i = 0; i < t.rank_n(); ++i) EXPECT_EQ(t[i], mine[std::size_t(i)]);
  EXPECT_EQ(upcxx::reduce_all(me, upcxx::op_fast_add, t).wait(), (mine.front() + mine.back()) * int(mine.size()) / 2);
  t.destroy();
  // Rank 0 lists a rank twice: it gets invalid_argument, everyone else an
  // error naming no list of theirs, and nobody waits.
  std::vector<int> all;
  for (int r = 0; r < n; ++r) all.push_back(r);
  if (me == 0) all.push_back(0);
  if (me == 0)
    EXPECT_THROW(upcxx::world().create(all), std::invalid_argument);
  else
    EXPECT_THROW(upcxx::world().create(all), accrete::error);
  upcxx::barrier();
}

// upcxx::bind: leading arguments bound, serialized with the function when
// it travels (an RPC, a remote completion); called locally too.
namespace {
int add3(int a, int b, int c) { return a + b + c; }
}  // namespace
TEST(Upcxx, BindTravelsWithItsArguments) {
  auto local = upcxx::bind([](int a, const std::string& s) { return a + int(s.size()); }, 4);
  EXPECT_EQ(local(std::string("abc")), 7);
  auto remote = upcxx::bind(&add3, upcxx::rank_me(), 10);
  EXPECT_EQ(upcxx::rpc(right(), remote, 100).wait(), upcxx::rank_me() + 110);
  auto named = upcxx::bind([](const std::string& s, int k) { return s + std::to_string(k); }, std::string("rank "));
  EXPECT_EQ(upcxx::rpc(left(), named, upcxx::rank_me()).wait(), "rank " + std::to_string(upcxx::rank_me()));
  upcxx::barrier();
}

// Serialization through a class's own member type upcxx_serialization,
// including one whose deserialize builds another type.
struct wire_sum {
  std::vector<int> parts;
};
struct with_member_rule {
  int a = 0;
  std::string s;
  struct upcxx_serialization {
    template <class Writer>
    static void serialize(Writer& w, const with_member_rule& x) {
      w.write(x.a);
      w.write(x.s);
    }
    template <class Reader>
    static with_member_rule* deserialize(Reader& r, void* storage) {
      auto* x = new (storage) with_member_rule;
      x->a = r.template read<int>();
      x->s = r.template read<std::string>();
      return x;
    }
  };
};
struct summed {
  long total = 0;
};
struct sums_on_arrival {
  std::vector<int> parts;
  struct upcxx_serialization {
    template <class Writer>
    static void serialize(Writer& w, const sums_on_arrival& x) {
      w.write(x.parts);
    }
    template <class Reader>
    static summed* deserialize(Reader& r, void* storage) {
      long t = 0;
      for (int v : r.template read<std::vector<int>>()) t += v;
      return new (storage) summed{t};
    }
  };
};
static_assert(std::is_same_v<upcxx::deserialized_type_t<sums_on_arrival>, summed>);
TEST(Upcxx, MemberSerializationRules) {
  with_member_rule x{upcxx::rank_me(), "from " + std::to_string(upcxx::rank_me())};
  std::string got = upcxx::rpc(
                        right(), [](const with_member_rule& y) { return y.s + "/" + std::to_string(y.a); }, x)
                        .wait();
  EXPECT_EQ(got, "from " + std::to_string(upcxx::rank_me()) + "/" + std::to_string(upcxx::rank_me()));
  sums_on_arrival p{{1, 2, 3, upcxx::rank_me()}};
  EXPECT_EQ(upcxx::rpc(
                left(), [](const summed& s) { return s.total; }, p)
                .wait(),
            6L + upcxx::rank_me());
  upcxx::barrier();
}

// UPCXX_ASSERT_ALWAYS that holds does nothing; its message is not built.
TEST(Upcxx, AssertThatHolds) {
  int built = 0;
  auto note = [&] {
    ++built;
    return "never";
  };
  UPCXX_ASSERT_ALWAYS(upcxx::rank_n() >= 1, note());
  UPCXX_ASSERT_ALWAYS(true);
  UPCXX_ASSERT(upcxx::rank_me() >= 0, "rank " << upcxx::rank_me());
  EXPECT_EQ(built, 0);
  // Both are expressions of type void, usable where a statement is not.
  static_assert(std::is_void_v<decltype(UPCXX_ASSERT_ALWAYS(true, "x"))>);
  static_assert(std::is_void_v<decltype(UPCXX_ASSERT(true))>);
  int after = (UPCXX_ASSERT_ALWAYS(built == 0, note()), 5);
  EXPECT_EQ(after, 5);
  upcxx::rank_n() > 0 ? UPCXX_ASSERT_ALWAYS(upcxx::rank_me() < upcxx::rank_n()) : void();
  EXPECT_EQ(built, 0);
  // The network macro UPC++ defines for its conduit: MPI here.
  static_assert(UPCXX_NETWORK_MPI);
}

// copy with a pointer to local memory at one end, and the entry_barrier
// argument of the collective destroys.
TEST(Upcxx, CopyWithALocalEndAndEntryBarriers) {
  const int n = 50;
  auto all = everyones(upcxx::new_array<int>(n));
  std::vector<int> src(n), back(n, -1);
  for (int i = 0; i < n; ++i) src[std::size_t(i)] = upcxx::rank_me() * 1000 + i;
  upcxx::copy(src.data(), all[std::size_t(right())], std::size_t(n)).wait();
  upcxx::barrier();
  upcxx::promise<> got;
  upcxx::copy(all[std::size_t(right())], back.data(), std::size_t(n), upcxx::operation_cx::as_promise(got));
  got.finalize().wait();
  for (int i = 0; i < n; ++i) ASSERT_EQ(back[std::size_t(i)], upcxx::rank_me() * 1000 + i) << i;
  upcxx::team half = upcxx::world().split(upcxx::rank_me() % 2, 0);
  upcxx::atomic_domain<int> ad({upcxx::atomic_op::fetch_add}, half);
  EXPECT_EQ(ad.fetch_add(all[std::size_t(upcxx::rank_me())], 1, std::memory_order_relaxed).wait(),
            upcxx::rank_me() == 0 ? (upcxx::rank_n() - 1) * 1000 : (upcxx::rank_me() - 1) * 1000);
  ad.destroy(upcxx::entry_barrier::user);
  half.destroy(upcxx::entry_barrier::none);
  upcxx::barrier();
  upcxx::delete_array(all[std::size_t(upcxx::rank_me())]);
}

// os_env (and the experimental:: names later UPC++ releases use).
TEST(Upcxx, OsEnv) {
  ::setenv("ACCRETE_TEST_OS_ENV_INT", "42", 1);
  ::setenv("ACCRETE_TEST_OS_ENV_SIZE", "3MB", 1);
  ::setenv("ACCRETE_TEST_OS_ENV_BAD", "4x", 1);
  ::unsetenv("ACCRETE_TEST_OS_ENV_UNSET");
  EXPECT_EQ(upcxx::os_env<int>("ACCRETE_TEST_OS_ENV_INT", 7), 42);
  EXPECT_EQ(upcxx::os_env<int>("ACCRETE_TEST_OS_ENV_UNSET", 7), 7);
  EXPECT_EQ(upcxx::os_env<std::string>("ACCRETE_TEST_OS_ENV_SIZE", ""), "3MB");
  EXPECT_FALSE(upcxx::os_env<double>("ACCRETE_TEST_OS_ENV_UNSET").has_value());
  EXPECT_EQ(upcxx::os_env<std::size_t>("ACCRETE_TEST_OS_ENV_SIZE", 0, 1), std::size_t(3) << 20);
  EXPECT_EQ(upcxx::os_env<std::size_t>("ACCRETE_TEST_OS_ENV_INT", 0, 1024), std::size_t(42) * 1024);
  EXPECT_EQ(upcxx::experimental::os_env<int>("ACCRETE_TEST_OS_ENV_INT", 0), 42);
  try {
    (void)upcxx::os_env<int>("ACCRETE_TEST_OS_ENV_BAD", 0);
    ADD_FAILURE() << "a value that is not an int was accepted";
  } catch (const accrete::error& e) {
    EXPECT_NE(std::string(e.what()).find("ACCRETE_TEST_OS_ENV_BAD=4x"), std::string::npos) << e.what();
  }
  upcxx::experimental::say() << "os_env read";
}

// Default-constructed objects are inactive; moves carry a team, an atomic
// domain and a dist_object (its value and its name) and leave the source
// inactive.
TEST(Upcxx, InactiveObjectsAndMoves) {
  const int me = upcxx::rank_me(), n = upcxx::rank_n();
  EXPECT_FALSE(early_team.is_active());
  EXPECT_FALSE(early_domain.is_active());
  EXPECT_FALSE(early_object.is_active());
  EXPECT_FALSE(early_gpu.is_active());
  EXPECT_FALSE(early_allocator.is_active());
  EXPECT_TRUE(upcxx::world().is_active());

  // dist_object: assigned into a placeholder, fetched through it.
  early_object = upcxx::dist_object<std::vector<int>>(std::vector<int>{me, 2 * me, 3 * me});
  ASSERT_TRUE(early_object.is_active());
  upcxx::barrier();
  EXPECT_EQ(early_object.fetch(right()).wait(), (std::vector<int>{right(), 2 * right(), 3 * right()}));
  // Self-move changes nothing.
  const upcxx::dist_id<std::vector<int>> id = early_object.id();
  early_object = std::move(early_object);
  EXPECT_TRUE(early_object.is_active());
  EXPECT_TRUE(early_object.id() == id);
  EXPECT_EQ((*early_object)[1], 2 * me);

  // Many dist_objects in a vector that reallocates as it grows: every move
  // re-points the name, so RPCs reach the object where it lives now.
  std::vector<upcxx::dist_object<int>> objs;
  for (int k = 0; k < 20; ++k) objs.emplace_back(1000 * me + k);
  upcxx::barrier();
  for (int k = 0; k < 20; ++k) {
    const int got = upcxx::rpc(
                        right(), [](upcxx::dist_object<int>& d) { return *d; }, objs[std::size_t(k)])
                        .wait();
    ASSERT_EQ(got, 1000 * right() + k) << k;
  }
  // Move construction, then an RPC that names the moved object.
  upcxx::dist_object<int> moved(std::move(objs[3]));
  EXPECT_FALSE(objs[3].is_active());
  EXPECT_TRUE(moved.is_active());
  upcxx::barrier();
  EXPECT_EQ(moved.fetch(left()).wait(), 1000 * left() + 3);
  EXPECT_TRUE(moved.id().here().is_active());
  EXPECT_EQ(*moved.id().here(), 1000 * me + 3);
  try {
    (void)objs[3].fetch(0);
    ADD_FAILURE() << "fetch on a moved-from dist_object was accepted";
  } catch (const accrete::error& e) {
    EXPECT_NE(std::string(e.what()).find("inactive"), std::string::npos) << e.what();
  }
  // Move assignment onto an active object destroys it: its name is gone.
  const upcxx::dist_id<int> old_id = objs[5].id();
  objs[5] = std::move(objs[6]);
  EXPECT_EQ(*objs[5], 1000 * me + 6);
  EXPECT_THROW((void)old_id.here(), accrete::error);
  EXPECT_TRUE(objs[6].id() == upcxx::dist_id<int>()) << "a moved-from dist_object has the null id";
  EXPECT_THROW((void)upcxx::dist_id<int>().here(), accrete::error);
  upcxx::barrier();

  // atomic_domain: a placeholder refuses operations, takes a domain by move.
  upcxx::global_ptr<std::int64_t> cell =
      upcxx::broadcast(me == 0 ? upcxx::new_<std::int64_t>(0) : upcxx::global_ptr<std::int64_t>(), 0).wait();
  try {
    (void)early_domain.fetch_add(cell, 1, std::memory_order_relaxed);
    ADD_FAILURE() << "an operation on an inactive atomic_domain was accepted";
  } catch (const accrete::error& e) {
    EXPECT_NE(std::string(e.what()).find("not active"), std::string::npos) << e.what();
  }
  early_domain.destroy();  // inactive: nothing
  early_domain = upcxx::atomic_domain<std::int64_t>({upcxx::atomic_op::fetch_add, upcxx::atomic_op::load});
  ASSERT_TRUE(early_domain.is_active());
  upcxx::atomic_domain<std::int64_t> other({upcxx::atomic_op::add});
  EXPECT_THROW(early_domain = std::move(other), accrete::error);  // the receiver must be inactive
  EXPECT_TRUE(other.is_active());
  upcxx::atomic_domain<std::int64_t> taken(std::move(early_domain));
  EXPECT_FALSE(early_domain.is_active());
  taken.fetch_add(cell, me + 1, std::memory_order_relaxed).wait();
  upcxx::barrier();
  EXPECT_EQ(taken.load(cell, std::memory_order_relaxed).wait(), std::int64_t(n) * (n + 1) / 2);
  taken.destroy();
  other.destroy();
  EXPECT_FALSE(taken.is_active());

  // team: a placeholder takes a split team; destroy() makes it inactive again.
  early_team = upcxx::world().split(me % 2, me);
  ASSERT_TRUE(early_team.is_active());
  EXPECT_EQ(early_team.rank_n(), (n + 1 - me % 2) / 2);
  upcxx::team t2(std::move(early_team));
  EXPECT_FALSE(early_team.is_active());
  EXPECT_EQ(t2.rank_me(), me / 2);
  EXPECT_THROW(upcxx::team t3(std::move(upcxx::world())), accrete::error);
  EXPECT_TRUE(upcxx::world().is_active());
  t2.destroy();
  EXPECT_FALSE(t2.is_active());

  // Device kinds: placeholders only; opening a device says why it cannot.
  upcxx::cuda_device none(upcxx::cuda_device::invalid_device_id);
  EXPECT_FALSE(none.is_active());
  EXPECT_EQ(upcxx::cuda_device::device_n(), 0);
  EXPECT_EQ(upcxx::hip_device::device_n(), 0);
  EXPECT_EQ(upcxx::ze_device::device_n(), 0);
  try {
    upcxx::cuda_device gpu(0);
    ADD_FAILURE() << "a cuda_device opened";
  } catch (const accrete::error& e) {
    EXPECT_NE(std::string(e.what()).find("device memory kinds"), std::string::npos) << e.what();
  }
  EXPECT_THROW(upcxx::device_allocator<upcxx::cuda_device>(none, 1024), accrete::error);
  upcxx::barrier();
  if (me == 0) upcxx::delete_(cell);
}

// promise is a handle: copies share one state, and a completion request
// may name a const copy (one captured by value in a lambda).
TEST(Upcxx, PromiseCopiesShareTheirState) {
  upcxx::promise<int> p;
  upcxx::promise<int> q = p;
  q.fulfill_result(5);
  EXPECT_TRUE(p.get_future().ready());
  EXPECT_EQ(p.get_future().result(), 5);
  upcxx::promise<> a(3), b;
  b = a;
  a.fulfill_anonymous(1);
  b.fulfill_anonymous(1);
  EXPECT_FALSE(a.get_future().ready());
  upcxx::promise<> c = b;
  EXPECT_TRUE(c.finalize().ready());
  EXPECT_TRUE(a.get_future().ready());

  auto all = everyones(upcxx::new_array<int>(2));
  const upcxx::global_ptr<int> dst = all[std::size_t(right())];
  upcxx::promise<> done;
  upcxx::rput(upcxx::rank_me(), dst)
      .then([=] { upcxx::rput(upcxx::rank_me() + 100, dst + 1, upcxx::operation_cx::as_promise(done)); })
      .wait();
  done.finalize().wait();
  upcxx::barrier();
  EXPECT_EQ(all[std::size_t(upcxx::rank_me())].local()[0], left());
  EXPECT_EQ(all[std::size_t(upcxx::rank_me())].local()[1], left() + 100);
  upcxx::barrier();
  upcxx::delete_array(all[std::size_t(upcxx::rank_me())]);
}

// Irregular, regular and strided puts and gets take completion requests:
// futures, promises, remote RPCs, a buffered source.
TEST(Upcxx, NonContiguousWithCompletions) {
  const int me = upcxx::rank_me();
  const int n = 64;
  auto all = everyones(upcxx::new_array<int>(4 * n));
  const upcxx::global_ptr<int> dst = all[std::size_t(right())];
  std::vector<int> src(std::size_t(2 * n));
  std::iota(src.begin(), src.end(), me * 10000);
  arrived = 0;
  upcxx::barrier();

  // Irregular: the even half-blocks of src into block 0, in reverse
  // fragment order; a remote RPC counts the arrival; the source buffered.
  std::vector<std::pair<const int*, std::size_t>> sfr;
  std::vector<std::pair<upcxx::global_ptr<int>, std::size_t>> dfr;
  for (int f = 0; f < 4; ++f) {
    sfr.emplace_back(src.data() + 2 * f * (n / 8), std::size_t(n / 8));
    dfr.emplace_back(dst + (3 - f) * (n / 8), std::size_t(n / 8));
  }
  upcxx::promise<> p1;
  upcxx::rput_irregular(sfr.begin(), sfr.end(), dfr.begin(), dfr.end(),
                        upcxx::operation_cx::as_promise(p1) | upcxx::remote_cx::as_rpc([] { ++arrived; }) |
                            upcxx::source_cx::as_buffered());
  // Regular: 8 fragments of 8 into block 1, with a future and a remote RPC.
  std::vector<const int*> sreg;
  std::vector<upcxx::global_ptr<int>> dreg;
  for (int f = 0; f < 8; ++f) {
    sreg.push_back(src.data() + n + 8 * f);
    dreg.push_back(dst + n + 8 * f);
  }
  upcxx::future<> f2 =
      upcxx::rput_regular(sreg.begin(), sreg.end(), 8, dreg.begin(), dreg.end(), 8,
                          upcxx::remote_cx::as_rpc([](int k) { arrived += k; }, 10) | upcxx::operation_cx::as_future());
  // Strided, pointer form: an 8 x 8 transpose of src's first 64 into block 2.
  const std::ptrdiff_t ss[2] = {std::ptrdiff_t(sizeof(int)), std::ptrdiff_t(8 * sizeof(int))};
  const std::ptrdiff_t ds[2] = {std::ptrdiff_t(8 * sizeof(int)), std::ptrdiff_t(sizeof(int))};
  const std::size_t ext[2] = {8, 8};
  upcxx::promise<> p3;
  upcxx::rput_strided<2>(src.data(), ss, dst + 2 * n, ds, ext,
                         upcxx::remote_cx::as_rpc([] { arrived += 100; }) | upcxx::operation_cx::as_promise(p3));
  // Strided, array form, defaults to a future: src's second 64 into block 3.
  upcxx::rput_strided<1>(src.data() + n, {{std::ptrdiff_t(sizeof(int))}}, dst + 3 * n, {{std::ptrdiff_t(sizeof(int))}},
                         {{std::size_t(n)}})
      .wait();
  p1.finalize().wait();
  f2.wait();
  p3.finalize().wait();
  while (arrived != 111) upcxx::progress();
  upcxx::barrier();

  const int* mine = all[std::size_t(me)].local();
  const int l = left() * 10000;
  for (int f = 0; f < 4; ++f)
    for (int i = 0; i < n / 8; ++i) ASSERT_EQ(mine[(3 - f) * (n / 8) + i], l + 2 * f * (n / 8) + i) << f << "," << i;
  for (int i = 0; i < n; ++i) ASSERT_EQ(mine[n + i], l + n + i) << i;
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) ASSERT_EQ(mine[2 * n + 8 * r + c], l + 8 * c + r) << r << "," << c;
  for (int i = 0; i < n; ++i) ASSERT_EQ(mine[3 * n + i], l + n + i) << i;

  // Gets back from the right neighbour: irregular into a promise, regular
  // as a deferred future, strided (pointer form) as a future.
  std::vector<int> back(std::size_t(n), -1);
  std::vector<std::pair<upcxx::global_ptr<int>, std::size_t>> gs{{dst, std::size_t(n / 2)},
                                                                 {dst + n / 2, std::size_t(n / 2)}};
  std::vector<std::pair<int*, std::size_t>> gd{{back.data(), std::size_t(n)}};
  upcxx::promise<> p4;
  upcxx::rget_irregular(gs.begin(), gs.end(), gd.begin(), gd.end(), upcxx::operation_cx::as_promise(p4));
  p4.finalize().wait();
  for (int f = 0; f < 4; ++f)
    for (int i = 0; i < n / 8; ++i)
      ASSERT_EQ(back[std::size_t((3 - f) * (n / 8) + i)], me * 10000 + 2 * f * (n / 8) + i);
  std::vector<upcxx::global_ptr<int>> rs{dst + n, dst + n + n / 2};
  std::vector<int*> rd{back.data()};
  upcxx::future<> f5 =
      upcxx::rget_regular(rs.begin(), rs.end(), n / 2, rd.begin(), rd.end(), n, upcxx::operation_cx::as_defer_future());
  f5.wait();
  for (int i = 0; i < n; ++i) ASSERT_EQ(back[std::size_t(i)], me * 10000 + n + i) << i;
  upcxx::rget_strided<2>(dst + 2 * n, ds, back.data(), ss, ext).wait();  // transposed back
  for (int i = 0; i < n; ++i) ASSERT_EQ(back[std::size_t(i)], me * 10000 + i) << i;
  upcxx::barrier();
  upcxx::delete_array(all[std::size_t(me)]);
}

// Strided and irregular transfers at their edges: negative strides (a
// section walked backwards), three dimensions, a zero extent and
// zero-length fragments, which move nothing and still complete.
TEST(Upcxx, NonContiguousEdges) {
  const int me = upcxx::rank_me();
  constexpr int X = 3, Y = 4, Z = 5, N = X * Y * Z;
  auto all = everyones(upcxx::new_array<int>(2 * N));
  const upcxx::global_ptr<int> dst = all[std::size_t(right())];
  int* mine = all[std::size_t(me)].local();
  std::fill(mine, mine + 2 * N, -1);
  std::vector<int> src(N);
  std::iota(src.begin(), src.end(), me * 1000);
  upcxx::barrier();  // every array filled before anybody writes into it

  // x fastest in the source; y reversed at the destination, whose base is
  // the address of element (0, 0, 0).
  constexpr std::ptrdiff_t I = sizeof(int);
  const std::array<std::ptrdiff_t, 3> ss{I, X * I, X * Y * I};
  const std::array<std::ptrdiff_t, 3> ds{I, -X * I, X * Y * I};
  const std::array<std::size_t, 3> ext{X, Y, Z};
  upcxx::rput_strided<3>(src.data(), ss, dst + X * (Y - 1), ds, ext).wait();
  // A zero extent: nothing reaches the second block.
  upcxx::rput_strided<3>(src.data(), ss, dst + N, ss, {{X, 0, Z}}).wait();
  // Irregular with empty fragments on both sides: src[0..4) and src[10..16)
  // land at second block's [20, 30).
  std::vector<std::pair<const int*, std::size_t>> sfr{{src.data(), 4}, {src.data() + 4, 0}, {src.data() + 10, 6}};
  std::vector<std::pair<upcxx::global_ptr<int>, std::size_t>> dfr{{dst + N, 0}, {dst + N + 20, 10}, {dst + N + 50, 0}};
  upcxx::rput_irregular(sfr.begin(), sfr.end(), dfr.begin(), dfr.end()).wait();
  // Nothing at all: empty fragment lists, and fragments of length 0.
  upcxx::rput_irregular(sfr.end(), sfr.end(), dfr.end(), dfr.end()).wait();
  std::vector<const int*> sreg{src.data()};
  std::vector<upcxx::global_ptr<int>> dreg{dst + N};
  upcxx::rput_regular(sreg.begin(), sreg.end(), 0, dreg.begin(), dreg.end(), 0).wait();
  upcxx::barrier();

  const int l = left() * 1000;
  for (int z = 0; z < Z; ++z)
    for (int y = 0; y < Y; ++y)
      for (int x = 0; x < X; ++x)
        ASSERT_EQ(mine[x + X * (Y - 1 - y) + X * Y * z], l + x + X * y + X * Y * z) << x << "," << y << "," << z;
  for (int i = 0; i < N; ++i) {
    const int want = i < 20 || i >= 30 ? -1 : l + (i < 24 ? i - 20 : i - 24 + 10);
    ASSERT_EQ(mine[N + i], want) << i;
  }

  // Back from the right neighbour, x and y walked backwards at the source:
  // back(x, y, z) = my src(X-1-x, y, z).
  std::vector<int> back(N, -1);
  upcxx::rget_strided<3>(dst + (X - 1) + X * (Y - 1), {{-I, -X * I, X * Y * I}}, back.data(), ss, ext).wait();
  for (int z = 0; z < Z; ++z)
    for (int y = 0; y < Y; ++y)
      for (int x = 0; x < X; ++x)
        ASSERT_EQ(back[std::size_t(x + X * y + X * Y * z)], me * 1000 + (X - 1 - x) + X * y + X * Y * z)
            << x << "," << y << "," << z;
  // Irregular get with empty fragments: the second block's [20, 30) into
  // back[0..10), one element at a time on the destination side.
  std::fill(back.begin(), back.end(), -1);
  std::vector<std::pair<upcxx::global_ptr<int>, std::size_t>> gs{{dst + N + 20, 0}, {dst + N + 20, 10}};
  std::vector<std::pair<int*, std::size_t>> gd;
  for (int i = 0; i < 10; ++i) {
    gd.emplace_back(back.data() + i, 1);
    gd.emplace_back(back.data() + i, 0);
  }
  upcxx::rget_irregular(gs.begin(), gs.end(), gd.begin(), gd.end()).wait();
  for (int i = 0; i < N; ++i) ASSERT_EQ(back[std::size_t(i)], i >= 10 ? -1 : me * 1000 + (i < 4 ? i : i - 4 + 10)) << i;
  upcxx::barrier();
  upcxx::delete_array(all[std::size_t(me)]);
}

// Names earlier UPC++ releases used: broadcast_nontrivial and the general
// reduction operators in upcxx::experimental.
TEST(Upcxx, EarlierReleaseNames) {
  const int me = upcxx::rank_me(), n = upcxx::rank_n();
  const int root = n - 1;
  std::string s = me == root ? std::string("from the last rank, ") + std::to_string(root) : std::string();
  EXPECT_EQ(upcxx::broadcast_nontrivial(s, root).wait(), "from the last rank, " + std::to_string(root));
  EXPECT_EQ(upcxx::experimental::broadcast_nontrivial(std::vector<int>(3, me), 0).wait(), std::vector<int>(3, 0));
  EXPECT_EQ(upcxx::reduce_all(me, upcxx::experimental::op_max).wait(), n - 1);
  EXPECT_EQ(upcxx::reduce_all(me + 1, upcxx::experimental::op_min).wait(), 1);
  EXPECT_EQ(upcxx::reduce_all(me, upcxx::experimental::op_add).wait(), n * (n - 1) / 2);
  EXPECT_EQ(upcxx::reduce_all(me == 0 ? 0x6 : 0x7, upcxx::experimental::op_bit_and).wait(), 0x6);
  // The reductions' names of those releases, on serialized values, also
  // with completions and an explicit value type.
  std::string all;
  for (int r = 0; r < n; ++r) all += std::to_string(r) + ";";
  EXPECT_EQ(upcxx::reduce_all_nontrivial(std::to_string(me) + ";", upcxx::op_fast_add).wait(), all);
  EXPECT_EQ(upcxx::experimental::reduce_all_nontrivial(std::to_string(me) + ";", upcxx::experimental::op_add,
                                                       upcxx::world(), upcxx::operation_cx::as_future())
                .wait(),
            all);
  const std::string at_root = upcxx::reduce_one_nontrivial(std::to_string(me) + ";", upcxx::op_fast_add, root).wait();
  EXPECT_EQ(at_root, me == root ? all : std::to_string(me) + ";");
  upcxx::promise<std::string> got;
  upcxx::experimental::reduce_one_nontrivial(std::string(std::size_t(me + 1), 'x'), upcxx::experimental::op_add, 0,
                                             upcxx::world(), upcxx::operation_cx::as_promise(got));
  EXPECT_EQ(got.finalize().wait().size(), me == 0 ? std::size_t(n * (n + 1) / 2) : std::size_t(me + 1));
  std::string mine = "rank " + std::to_string(me);
  EXPECT_EQ(upcxx::broadcast_nontrivial<std::string>(std::move(mine), root).wait(), "rank " + std::to_string(root));
  EXPECT_EQ(
      upcxx::broadcast_nontrivial(std::set<int>{me, -me}, 0, upcxx::world(), upcxx::operation_cx::as_future()).wait(),
      (std::set<int>{0}));
}

// dist_id and team_id are LessThanComparable and hashable (spec: they key
// ordered and unordered containers), the same on every process, and print.
TEST(Upcxx, IdsOrderHashAndPrint) {
  const int me = upcxx::rank_me(), n = upcxx::rank_n();
  upcxx::dist_object<int> first(me), second(10 * me), third(100 * me);
  EXPECT_LT(first.id(), second.id());
  EXPECT_LT(second.id(), third.id());
  EXPECT_GE(third.id(), first.id());
  EXPECT_NE(first.id(), third.id());
  std::map<upcxx::dist_id<int>, int> ordered;
  std::unordered_map<upcxx::dist_id<int>, int> hashed;
  for (auto* d : {&third, &first, &second}) {
    ordered[d->id()] = **d;
    hashed[d->id()] = **d;
  }
  EXPECT_EQ(ordered.begin()->second, me);
  EXPECT_EQ(ordered.rbegin()->second, 100 * me);
  EXPECT_EQ(hashed.size(), 3u);
  upcxx::barrier();
  // An id that travels finds the receiver's own entry, by order and by hash.
  const int seen =
      upcxx::rpc(
          right(),
          [](upcxx::dist_id<int> id, upcxx::dist_object<int>& s) {
            std::set<upcxx::dist_id<int>> ids{id, s.id()};
            std::unordered_set<upcxx::dist_id<int>> hs{id, s.id()};
            return int(ids.size()) * 10 + int(hs.size()) +
                   (std::hash<upcxx::dist_id<int>>{}(id) == std::hash<upcxx::dist_id<int>>{}(s.id()) ? 100 : 0);
          },
          second.id(), second)
          .wait();
  EXPECT_EQ(seen, 111);

  upcxx::team parity = upcxx::world().split(me % 2, me);
  EXPECT_NE(parity.id(), upcxx::world().id());
  std::set<upcxx::team_id> teams{upcxx::world().id(), parity.id(), upcxx::local_team().id()};
  EXPECT_EQ(teams.size(), 3u);
  std::unordered_set<upcxx::team_id> team_hashes(teams.begin(), teams.end());
  EXPECT_EQ(team_hashes.size(), 3u);
  const std::size_t h = std::hash<upcxx::team_id>{}(upcxx::world().id());
  EXPECT_EQ(upcxx::reduce_all(h, upcxx::op_fast_max).wait(), upcxx::reduce_all(h, upcxx::op_fast_min).wait());
  // The printed forms agree everywhere, and printing leaves the stream's
  // number base alone.
  std::ostringstream os;
  os << first.id() << ' ' << upcxx::world().id() << ' ' << 255;
  const std::string text = os.str();
  EXPECT_EQ(text.rfind("dist_id(", 0), 0u) << text;
  EXPECT_NE(text.find(" team_id("), std::string::npos) << text;
  EXPECT_EQ(text.substr(text.size() - 4), " 255") << text;
  EXPECT_EQ(upcxx::broadcast(text, n - 1).wait(), text);
  upcxx::barrier();
  parity.destroy();
}

// UPC++ 2022.9's Reader forms: read_overwrite over live members (the old
// value destroyed, none leaked), read_sequence_overwrite, read_into an
// upcxx::optional; the same through a received view's iterator; and
// std::reference_wrapper travelling as the object it refers to.
struct counted {
  int v = -1;
  static inline int live = 0;
  counted() { ++live; }
  explicit counted(int x) : v(x) { ++live; }
  counted(const counted& o) : v(o.v) { ++live; }
  counted(counted&& o) noexcept : v(o.v) { ++live; }
  counted& operator=(const counted&) = default;
  ~counted() { --live; }
  UPCXX_SERIALIZED_FIELDS(v)
};
struct refilled {
  std::string name = "unset";
  counted c;
  std::string tags[3] = {"a", "b", "c"};
  upcxx::optional<std::vector<int>> extra;
  struct upcxx_serialization {
    template <class Writer>
    static void serialize(Writer& w, const refilled& x) {
      w.write(x.name);
      w.write(x.c);
      w.write_sequence(x.tags, x.tags + 3);
      w.write(*x.extra);
    }
    template <class Reader, class Storage>
    static refilled* deserialize(Reader& r, Storage storage) {
      refilled* x = storage.construct();
      std::string& name = r.template read_overwrite<std::string>(x->name);
      if (&name != &x->name) throw std::logic_error("read_overwrite returned another object");
      r.template read_overwrite<counted>(x->c);
      if (r.template read_sequence_overwrite<std::string>(x->tags, 3) != x->tags)
        throw std::logic_error("read_sequence_overwrite returned another address");
      r.template read_into<std::vector<int>>(x->extra);
      return x;
    }
  };
};
TEST(Upcxx, ReaderOverwriteOptionalAndReferences) {
  const int me = upcxx::rank_me();
  const int base = counted::live;
  {
    refilled out;
    out.name = "from " + std::to_string(me);
    out.c = counted(me + 7);
    out.tags[0] = "x" + std::to_string(me);
    out.tags[2] = std::string(40, 'z');  // beyond the short-string buffer
    out.extra = std::vector<int>{me, me + 1};
    const std::string back = upcxx::rpc(
                                 right(),
                                 [](const refilled& x) {
                                   return x.name + "|" + std::to_string(x.c.v) + "|" + x.tags[0] + x.tags[1] +
                                          std::to_string(x.tags[2].size()) + "|" +
                                          std::to_string(x.extra ? x.extra->at(1) : -1);
                                 },
                                 out)
                                 .wait();
    EXPECT_EQ(back, "from " + std::to_string(me) + "|" + std::to_string(me + 7) + "|x" + std::to_string(me) + "b40|" +
                        std::to_string(me + 1));
  }
  upcxx::barrier();  // every receiver has run and dropped its copy
  EXPECT_EQ(counted::live, base);

  // A received view's iterator: into an optional, and over a live string.
  std::vector<std::string> words = {"alpha", std::string(50, 'w'), "gamma"};
  const std::string joined = upcxx::rpc(
                                 right(),
                                 [](upcxx::view<std::string> v) {
                                   auto it = v.begin();
                                   upcxx::optional<std::string> o = std::string("old");
                                   std::string& first = it.deserialize_into(o);
                                   std::string second = "was here";
                                   std::string& s = (it + 1).deserialize_overwrite(second);
                                   return first + "," + std::to_string(s.size()) + "," + second.substr(0, 2) + "," +
                                          std::to_string(&s == &second);
                                 },
                                 upcxx::make_view(words))
                                 .wait();
  EXPECT_EQ(joined, "alpha,50,ww,1");

  // References travel as their objects, never as addresses.
  static_assert(std::is_same_v<upcxx::deserialized_type_t<std::reference_wrapper<const std::string>>, std::string>);
  static_assert(std::is_same_v<upcxx::deserialized_type_t<std::vector<std::reference_wrapper<int>>>, std::vector<int>>);
  std::string text = "held by " + std::to_string(me);
  int a = me, b = 2 * me;
  std::vector<std::reference_wrapper<int>> refs{std::ref(a), std::ref(b)};
  const std::string got = upcxx::rpc(
                              right(),
                              [](const std::string& s, const std::vector<int>& v) {
                                return s + ":" + std::to_string(v.at(0)) + "," + std::to_string(v.at(1));
                              },
                              std::cref(text), refs)
                              .wait();
  EXPECT_EQ(got, "held by " + std::to_string(me) + ":" + std::to_string(me) + "," + std::to_string(2 * me));
  upcxx::barrier();
}

// A rule that writes its members through serialization_traits and skips
// one on the way back.
struct traits_written {
  std::string keep;
  std::vector<int> dropped;
  int tail = 0;
  struct upcxx_serialization {
    template <class Writer>
    static void serialize(Writer& w, const traits_written& x) {
      upcxx::serialization_traits<std::string>::serialize(w, x.keep);
      upcxx::serialization_traits<std::vector<int>>::serialize(w, x.dropped);
      upcxx::serialization_traits<int>::serialize(w, x.tail);
    }
    template <class Reader>
    static traits_written* deserialize(Reader& r, void* storage) {
      alignas(std::string) std::byte raw[sizeof(std::string)];
      std::string* s = upcxx::serialization_traits<std::string>::deserialize(r, raw);
      upcxx::serialization_traits<std::vector<int>>::skip(r);
      const int t = r.template read<int>();
      auto* x = new (storage) traits_written{std::move(*s), {}, t};
      std::destroy_at(s);
      return x;
    }
  };
};

// serialization_traits: what it says of a type, a value's round trip, and
// a rule built from it.
TEST(Upcxx, SerializationTraits) {
  const int me = upcxx::rank_me();
  using tree_traits = upcxx::serialization_traits<tree>;
  static_assert(tree_traits::is_serializable && !tree_traits::is_actually_trivially_serializable &&
                !tree_traits::references_buffer);
  static_assert(std::is_same_v<tree_traits::deserialized_type, tree>);
  static_assert(upcxx::serialization_traits<double>::is_actually_trivially_serializable);
  static_assert(upcxx::serialization_traits<std::array<double, 3>>::is_actually_trivially_serializable);
  static_assert(!upcxx::serialization_traits<handle>::is_serializable);
  static_assert(std::is_same_v<upcxx::serialization_traits<sums_on_arrival>::deserialized_type, summed>);
  static_assert(upcxx::serialization_traits<upcxx::view<int>>::references_buffer);
  static_assert(upcxx::serialization_traits<std::pair<int, upcxx::view<double>>>::references_buffer);
  static_assert(!upcxx::serialization_traits<upcxx::view<std::string>>::references_buffer);
  static_assert(std::is_same_v<upcxx::view_default_iterator_t<int>, const int*>);
  static_assert(
      std::is_same_v<upcxx::view<std::string>, upcxx::view<std::string, upcxx::view_default_iterator_t<std::string>>>);

  const tree t{me, {tree{1, {}}, tree{2, {tree{3, {}}}}}};
  const tree back = tree_traits::deserialized_value(t);
  EXPECT_EQ(back.sum(), me + 6);
  EXPECT_EQ(back.children.at(1).children.at(0).value, 3);
  EXPECT_EQ(upcxx::serialization_traits<sums_on_arrival>::deserialized_value(sums_on_arrival{{4, 5, me}}).total,
            9L + me);
  const fraction f = upcxx::serialization_traits<fraction>::deserialized_value(fraction(me, 7));
  EXPECT_EQ(f.num(), me);
  EXPECT_EQ(f.den(), 7);
  const std::map<std::string, std::vector<int>> m{{"a", {me, 2}}, {"b", {}}};
  EXPECT_EQ((upcxx::serialization_traits<std::map<std::string, std::vector<int>>>::deserialized_value(m)), m);
  // A view of strings reads its elements back into storage of its own.
  const std::vector<std::string> words{"x" + std::to_string(me), std::string(40, 'y')};
  const auto wv = upcxx::make_view(words);
  const upcxx::view<std::string> got = upcxx::serialization_traits<decltype(wv)>::deserialized_value(wv);
  EXPECT_EQ(std::vector<std::string>(got.begin(), got.end()), words);

  const traits_written x{"kept by " + std::to_string(me), {1, 2, 3}, me + 100};
  const traits_written y = upcxx::serialization_traits<traits_written>::deserialized_value(x);
  EXPECT_EQ(y.keep, x.keep);
  EXPECT_TRUE(y.dropped.empty());
  EXPECT_EQ(y.tail, me + 100);
  const std::string remote =
      upcxx::rpc(
          right(),
          [](const traits_written& z) {
            return z.keep + "|" + std::to_string(z.dropped.size()) + "|" + std::to_string(z.tail);
          },
          x)
          .wait();
  EXPECT_EQ(remote, x.keep + "|0|" + std::to_string(me + 100));
  upcxx::barrier();
}

// Pairs, tuples and arrays of trivially serializable elements are
// trivially serializable themselves (UPC++'s rule): they travel as their
// bytes, a received view of them is walked by pointer, and RMA moves them.
TEST(Upcxx, TriviallySerializableStandardComposites) {
  using pid = std::pair<int, double>;
  static_assert(upcxx::is_trivially_serializable<pid>::value);
  static_assert(upcxx::is_trivially_serializable<std::tuple<int, char, double>>::value);
  static_assert(upcxx::is_trivially_serializable<std::tuple<>>::value);
  static_assert(upcxx::is_trivially_serializable<std::array<double, 3>>::value);
  static_assert(upcxx::is_trivially_serializable<std::array<pid, 2>>::value);
  static_assert(upcxx::is_trivially_serializable<std::pair<const int, std::tuple<long, float>>>::value);
  static_assert(!upcxx::is_trivially_serializable<std::pair<int, std::string>>::value);
  static_assert(!upcxx::is_trivially_serializable<std::tuple<int, std::vector<int>>>::value);
  static_assert(!upcxx::is_trivially_serializable<std::array<std::string, 2>>::value);
  static_assert(std::is_same_v<upcxx::view_default_iterator_t<pid>, const pid*>);
  static_assert(!std::is_pointer_v<upcxx::view_default_iterator_t<std::pair<int, std::string>>>);

  const int me = upcxx::rank_me(), r = right();
  // Values, through a round trip and an RPC.
  const std::tuple<int, char, double> t{me, 'q', me + 0.25};
  EXPECT_EQ(upcxx::serialization_traits<decltype(t)>::deserialized_value(t), t);
  const std::array<pid, 2> a{pid{me, 1.5}, pid{-me, -2.5}};
  EXPECT_EQ((upcxx::serialization_traits<std::array<pid, 2>>::deserialized_value(a)), a);
  const std::pair<int, std::string> mixed{me, std::string(30, 'm')};
  EXPECT_EQ((upcxx::serialization_traits<std::pair<int, std::string>>::deserialized_value(mixed)), mixed);
  std::vector<pid> entries;
  for (int i = 0; i < 5; ++i) entries.push_back({me * 10 + i, i * 0.5});
  const double sum = upcxx::rpc(
                         r,
                         [](upcxx::view<pid> v) {
                           static_assert(std::is_same_v<decltype(v.begin()), const pid*>);
                           double s = 0;
                           for (const pid& e : v) s += e.first + e.second;
                           return s;
                         },
                         upcxx::make_view(entries))
                         .wait();
  EXPECT_EQ(sum, me * 50 + 10 + 5.0);
  EXPECT_EQ(upcxx::rpc(
                r, [](const std::tuple<int, char, double>& x) { return std::get<0>(x) + int(std::get<1>(x)); }, t)
                .wait(),
            me + int('q'));

  // RMA moves a pair: each process writes two into its right neighbour's
  // array and reads them back.
  upcxx::global_ptr<pid> mine = upcxx::new_array<pid>(2);
  upcxx::dist_object<upcxx::global_ptr<pid>> d(mine);
  const upcxx::global_ptr<pid> theirs = d.fetch(r).wait();
  upcxx::barrier();
  const pid out[2] = {{me, me + 0.5}, {me + 1, -0.5}};
  upcxx::rput(out, theirs, 2).wait();
  upcxx::rput(pid{me + 2, 4.0}, theirs + 1).wait();
  upcxx::barrier();
  const pid got = upcxx::rget(theirs).wait();
  EXPECT_EQ(got, out[0]);
  const int l = left();
  EXPECT_EQ(mine.local()[0], (pid{l, l + 0.5}));
  EXPECT_EQ(mine.local()[1], (pid{l + 2, 4.0}));
  upcxx::barrier();
  upcxx::delete_array(mine);
}

// destroy_heap and restore_heap: allocation refused in between, objects
// still allocated stay valid (and are counted on stderr).
TEST(Upcxx, DestroyAndRestoreHeap) {
  const int me = upcxx::rank_me();
  upcxx::global_ptr<int> kept = upcxx::new_<int>(me + 10);
  upcxx::dist_object<upcxx::global_ptr<int>> where(kept);
  const upcxx::global_ptr<int> theirs = where.fetch(right()).wait();
  const std::size_t live = accrete::detail::heap_live_objects();
  testing::internal::CaptureStderr();
  upcxx::experimental::destroy_heap();
  const std::string warned = testing::internal::GetCapturedStderr();
  EXPECT_NE(warned.find(std::to_string(live) + " object"), std::string::npos) << warned;
  EXPECT_NE(warned.find("still allocated"), std::string::npos) << warned;
  try {
    (void)upcxx::new_<int>(1);
    ADD_FAILURE() << "new_ allocated in a destroyed heap";
  } catch (const accrete::error& e) {
    EXPECT_NE(std::string(e.what()).find("destroy_heap"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)upcxx::allocate(64), accrete::error);
  EXPECT_THROW((void)upcxx::new_array<double>(4), accrete::error);
  EXPECT_THROW(upcxx::experimental::destroy_heap(), accrete::error);  // destroyed twice
  EXPECT_EQ(upcxx::rget(theirs).wait(), right() + 10);                // kept objects stay valid
  upcxx::barrier();
  upcxx::delete_(kept);  // deallocating works while the heap is destroyed
  upcxx::experimental::restore_heap();
  EXPECT_THROW(upcxx::restore_heap(), accrete::error);  // restored twice
  upcxx::global_ptr<int> again = upcxx::new_<int>(me + 20);
  EXPECT_EQ(*again.local(), me + 20);
  upcxx::delete_(again);
  static_assert(std::is_base_of_v<std::bad_alloc, upcxx::bad_segment_alloc>);
  EXPECT_STREQ(upcxx::bad_segment_alloc("no device segment").what(), "no device segment");
  if (accrete::detail::heap_live_objects() == 0) {  // nothing left: no warning
    testing::internal::CaptureStderr();
    upcxx::destroy_heap();
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
    upcxx::restore_heap();
  }
  upcxx::barrier();
}

int upcxx_component_read(upcxx::global_ptr<int> p);

// A program may include UPC++'s component headers instead of upcxx.hpp.
TEST(Upcxx, ComponentHeaders) {
  upcxx::global_ptr<int> p = upcxx::new_<int>(upcxx::rank_me() + 41);
  EXPECT_EQ(upcxx_component_read(p), upcxx::rank_me() + 41);
  upcxx::delete_(p);
}

// A type the program declares trivially serializable travels as its bytes,
// alone and in a container.
TEST(Upcxx, DeclaredTriviallySerializable) {
  static_assert(!std::is_trivially_copyable_v<pair_with_copy>);
  static_assert(upcxx::is_serializable<pair_with_copy>::value);
  static_assert(!upcxx::is_trivially_serializable<std::string>::value);
  static_assert(upcxx::is_trivially_serializable<int>::value);
  const pair_with_copy back = upcxx::rpc(
                                  right(), [](pair_with_copy p) { return pair_with_copy(p.a + 1, p.b * 2); },
                                  pair_with_copy(upcxx::rank_me(), 1.5))
                                  .wait();
  EXPECT_EQ(back.a, upcxx::rank_me() + 1);
  EXPECT_EQ(back.b, 3.0);
  std::vector<pair_with_copy> v;
  for (int i = 0; i < 5; ++i) v.emplace_back(i, i / 4.0);
  const std::vector<pair_with_copy> w = upcxx::rpc(
                                            left(), [](const std::vector<pair_with_copy>& x) { return x; }, v)
                                            .wait();
  ASSERT_EQ(w.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(w[std::size_t(i)].a, i);
    EXPECT_EQ(w[std::size_t(i)].b, i / 4.0);
  }
}

// A received view of such a type is walked by `const T*` into the message,
// as UPC++'s view_default_iterator gives for a TriviallySerializable T.
TEST(Upcxx, DeclaredTriviallySerializableView) {
  static_assert(std::is_same_v<upcxx::view<pair_with_copy>::iterator, const pair_with_copy*>);
  static_assert(std::is_same_v<upcxx::deserialized_type_t<upcxx::view<pair_with_copy>>, upcxx::view<pair_with_copy>>);
  std::vector<pair_with_copy> v;
  const int me = upcxx::rank_me();
  for (int i = 0; i < 7; ++i) v.emplace_back(me * 100 + i, i * 0.5);
  const double sum = upcxx::rpc(
                         right(),
                         [](upcxx::view<pair_with_copy> got, int from) {
                           const pair_with_copy* p = got.begin();  // compiles only for a pointer
                           double s = 0;
                           for (std::size_t i = 0; i < got.size(); ++i) {
                             if (p[i].a != from * 100 + int(i) || p[i].b != double(i) * 0.5) return -1.0;
                             s += p[i].b;
                           }
                           return got.end() - got.begin() == 7 ? s : -2.0;
                         },
                         upcxx::make_view(v.begin(), v.end()), me)
                         .wait();
  EXPECT_EQ(sum, 10.5);
}

// Such a type also moves by RMA and the collectives that copy bytes
// (spec: their T must be DefinitelyTriviallySerializable).
TEST(Upcxx, DeclaredTriviallySerializableByRma) {
  const int me = upcxx::rank_me(), n = upcxx::rank_n();
  upcxx::dist_object<upcxx::global_ptr<pair_with_copy>> mine(upcxx::new_array<pair_with_copy>(4));
  const upcxx::global_ptr<pair_with_copy> theirs = mine.fetch(right()).wait();
  upcxx::barrier();
  // Value and array puts into the right neighbour's slots 0 and 1..2.
  upcxx::rput(pair_with_copy(me, 0.5), theirs).wait();
  const pair_with_copy two[2] = {{me + 10, 1.5}, {me + 20, 2.5}};
  upcxx::rput(two, theirs + 1, 2, upcxx::operation_cx::as_future() | upcxx::remote_cx::as_rpc([] { ++arrived; }))
      .wait();
  upcxx::copy(two, theirs + 3, 1).wait();
  upcxx::barrier();
  const pair_with_copy* local = mine->local();
  const int l = left();
  EXPECT_EQ(local[0].a, l);
  EXPECT_EQ(local[0].b, 0.5);
  EXPECT_EQ(local[1].a, l + 10);
  EXPECT_EQ(local[2].b, 2.5);
  EXPECT_EQ(local[3].a, l + 10);
  // Gets back: one value, then an array.
  const pair_with_copy got = upcxx::rget(theirs).wait();
  EXPECT_EQ(got.a, me);
  pair_with_copy back[2];
  upcxx::rget(theirs + 1, back, 2).wait();
  EXPECT_EQ(back[0].a, me + 10);
  EXPECT_EQ(back[1].a, me + 20);
  EXPECT_EQ(upcxx::rget(theirs + 2, upcxx::operation_cx::as_future()).wait().b, 2.5);
  // A non-contiguous put into slots 3 and 1, once every process has checked
  // its slots above.
  upcxx::barrier();
  const pair_with_copy more[2] = {{me + 100, 0}, {me + 101, 0}};
  const std::pair<const pair_with_copy*, std::size_t> src[] = {{&more[0], 1}, {&more[1], 1}};
  const std::pair<upcxx::global_ptr<pair_with_copy>, std::size_t> dst[] = {{theirs + 3, 1}, {theirs + 1, 1}};
  upcxx::rput_irregular(std::begin(src), std::end(src), std::begin(dst), std::end(dst)).wait();
  upcxx::barrier();
  EXPECT_EQ(local[3].a, l + 100);
  EXPECT_EQ(local[1].a, l + 101);
  // Collectives: a buffer broadcast and a reduction with the program's op.
  pair_with_copy buf[2] = {{me, me * 1.0}, {-me, 0.25}};
  upcxx::broadcast(buf, 2, n - 1).wait();
  EXPECT_EQ(buf[0].a, n - 1);
  EXPECT_EQ(buf[1].a, 1 - n);
  const pair_with_copy sum =
      upcxx::reduce_all(pair_with_copy(me, 0.5), [](const pair_with_copy& x, const pair_with_copy& y) {
        return pair_with_copy(x.a + y.a, x.b + y.b);
      }).wait();
  EXPECT_EQ(sum.a, n * (n - 1) / 2);
  EXPECT_EQ(sum.b, 0.5 * n);
  while (arrived < 1) upcxx::progress();
  arrived = 0;
  upcxx::barrier();
  upcxx::delete_array(*mine);
}

namespace {
// A class built on a global pointer of any kind, as libraries over UPC++
// write them (a cache entry, a handle).
template <class T, upcxx::memory_kind K = upcxx::memory_kind::host>
struct tagged_ptr : upcxx::global_ptr<T, K> {
  int tag = 0;
  tagged_ptr(upcxx::global_ptr<T, K> p, int t) : upcxx::global_ptr<T, K>(p), tag(t) {}
};
template <class T>
upcxx::intrank_t owner_of(upcxx::global_ptr<T> p) {
  return p.where();
}
struct with_members {
  int x = 0;
  const int y = 3;
  mutable char z = 'z';
};
}  // namespace

// 5 and 12: memory kinds (host and `any`; device kinds inactive), gets
// from pointers to const, null pointers localize to nullptr.
TEST(Upcxx, MemoryKindsAndConstSources) {
  using upcxx::memory_kind;
  const int n = 64, me = upcxx::rank_me();
  auto all = everyones(upcxx::new_array<int>(n));
  std::iota(all[std::size_t(me)].local(), all[std::size_t(me)].local() + n, 1000 * me);
  upcxx::barrier();
  const int r = right();
  const upcxx::global_ptr<const int> src = all[std::size_t(r)];
  auto expect = [&](const int* got, int first, int count, const char* what) {
    for (int i = 0; i < count; ++i) ASSERT_EQ(got[i], 1000 * r + first + i) << what << " element " << i;
  };
  // Contiguous gets from const: future, promise, one value.
  std::vector<int> out(n, -1);
  upcxx::rget(src, out.data(), n).wait();
  expect(out.data(), 0, n, "rget");
  std::fill(out.begin(), out.end(), -1);
  upcxx::promise<> pr;
  upcxx::rget(src + 8, out.data(), 8, upcxx::operation_cx::as_promise(pr));
  pr.finalize().wait();
  expect(out.data(), 8, 8, "rget as_promise");
  EXPECT_EQ(upcxx::rget(src + 5).wait(), 1000 * r + 5);
  // Non-contiguous gets from const.
  std::fill(out.begin(), out.end(), -1);
  std::vector<std::pair<upcxx::global_ptr<const int>, std::size_t>> sf{{src + 10, 3}, {src + 20, 5}};
  std::vector<std::pair<int*, std::size_t>> df{{out.data(), 8}};
  upcxx::rget_irregular(sf.begin(), sf.end(), df.begin(), df.end()).wait();
  expect(out.data(), 10, 3, "rget_irregular");
  expect(out.data() + 3, 20, 5, "rget_irregular");
  std::vector<upcxx::global_ptr<const int>> rs{src + 40, src + 30};
  std::vector<int*> rd{out.data() + 10};
  upcxx::rget_regular(rs.begin(), rs.end(), 4, rd.begin(), rd.end(), 8).wait();
  expect(out.data() + 10, 40, 4, "rget_regular");
  expect(out.data() + 14, 30, 4, "rget_regular");
  // An 8 x 8 transpose from const, in both strided forms.
  std::vector<int> t(n, -1), t2(n, -1);
  const std::ptrdiff_t ss[2] = {sizeof(int), 8 * sizeof(int)}, ds[2] = {8 * sizeof(int), sizeof(int)};
  const std::size_t ext[2] = {8, 8};
  upcxx::rget_strided<2>(src, {ss[0], ss[1]}, t.data(), {ds[0], ds[1]}, {ext[0], ext[1]}).wait();
  upcxx::rget_strided<2>(src, ss, t2.data(), ds, ext).wait();
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) {
      ASSERT_EQ(t[std::size_t(i * 8 + j)], 1000 * r + j * 8 + i) << i << ", " << j;
      ASSERT_EQ(t2[std::size_t(i * 8 + j)], 1000 * r + j * 8 + i) << i << ", " << j;
    }
  // Kinds: host converts to `any` and back; every pointer names host memory.
  const upcxx::global_ptr<int, memory_kind::any> any_mine = all[std::size_t(me)];
  static_assert(decltype(any_mine)::kind == memory_kind::any && upcxx::global_ptr<int>::kind == memory_kind::host);
  EXPECT_EQ(any_mine.dynamic_kind(), memory_kind::host);
  EXPECT_EQ(upcxx::static_kind_cast<memory_kind::host>(any_mine), all[std::size_t(me)]);
  EXPECT_EQ(upcxx::dynamic_kind_cast<memory_kind::host>(any_mine), all[std::size_t(me)]);
  EXPECT_TRUE(upcxx::dynamic_kind_cast<memory_kind::cuda_device>(any_mine).is_null());
  using any_ptr = upcxx::global_ptr<int, memory_kind::any>;
  EXPECT_EQ(std::hash<any_ptr>{}(any_mine), std::hash<any_ptr>{}(any_ptr(all[std::size_t(me)])));
  // copy from const and between `any` pointers; a right neighbour's data
  // into my second half, then back to the front through `any`.
  upcxx::barrier();  // everyone has read all of its right neighbour's array
  const upcxx::global_ptr<const int, memory_kind::any> any_src = src;
  upcxx::copy(any_src + 4, any_mine + 32, 16).wait();
  upcxx::copy(src, all[std::size_t(me)] + 48, 4).wait();
  upcxx::copy(any_mine + 32, out.data(), 20).wait();
  expect(out.data(), 4, 16, "copy from any");
  expect(out.data() + 16, 0, 4, "copy from const");
  EXPECT_THROW(upcxx::copy(upcxx::global_ptr<const int>(), any_mine, 1).wait(), accrete::bad_global_ptr);
  // Null pointers localize to nullptr, whatever node their owner is on.
  const upcxx::global_ptr<int> null;
  EXPECT_TRUE(null.is_local());
  EXPECT_EQ(null.local(), nullptr);
  // A class built on a global pointer passes where a global_ptr<T> is taken.
  const tagged_ptr<int> tp(all[std::size_t(r)], 7);
  EXPECT_EQ(owner_of(tp), r);
  const tagged_ptr<int, memory_kind::any> tpa(all[std::size_t(r)], 8);
  EXPECT_EQ(upcxx::static_kind_cast<memory_kind::host>(tpa), all[std::size_t(r)]);
  // upcxx_memberof keeps the object's constness (a mutable member drops it).
  const upcxx::global_ptr<const with_members> cw = upcxx::new_<with_members>();
  auto gy = upcxx_memberof(cw, y);
  auto gz = upcxx_memberof(cw, z);
  static_assert(std::is_same_v<decltype(gy), upcxx::global_ptr<const int>>);
  static_assert(std::is_same_v<decltype(gz), upcxx::global_ptr<char>>);
  EXPECT_EQ(upcxx::rget(gy).wait(), 3);
  EXPECT_EQ(upcxx::rget(gz).wait(), 'z');
  upcxx::delete_(upcxx::const_pointer_cast<with_members>(cw));
  // Device kinds: pointers exist (null) and convert to `any`; allocating
  // on an inactive allocator throws.
  upcxx::device_allocator<upcxx::cuda_device> gpu;
  const upcxx::global_ptr<double, memory_kind::cuda_device> dp = gpu.to_global_ptr<double>(nullptr);
  EXPECT_TRUE(dp.is_null());
  const upcxx::global_ptr<double, memory_kind::any> dany = dp;
  EXPECT_TRUE(dany.is_null());
  EXPECT_EQ(upcxx::cuda_device::null_pointer<double>(), nullptr);
  EXPECT_THROW(gpu.allocate<double>(4), accrete::error);
  upcxx::barrier();
  upcxx::delete_array(all[std::size_t(me)]);
}

// 11: team constructors are blocking collectives with user-level progress
// (as barrier()): a member that enters split or create while others wait
// for its answer to an RPC still answers it. Rank 0 goes straight into each
// constructor; the others first wait for an RPC that only rank 0 runs.
TEST(Upcxx, TeamConstructorsServeRpcs) {
  static int served = 0;
  served = 0;
  upcxx::barrier();  // nobody asks before rank 0 has reset its count
  const int me = upcxx::rank_me(), n = upcxx::rank_n();
  auto ask = [&](int k) {
    if (me == 0) return;
    EXPECT_EQ(upcxx::rpc(
                  0, [](int x) { return ++served, 10 * x; }, me + k)
                  .wait(),
              10 * (me + k));
  };
  ask(0);
  upcxx::team parity = upcxx::world().split(me % 2, me);
  EXPECT_EQ(parity.rank_n(), (n + 1 - me % 2) / 2);
  EXPECT_EQ(parity.rank_me(), me / 2);
  // A team passed to an RPC arrives as the callee's own team of that id.
  const upcxx::intrank_t last = parity[parity.rank_n() - 1];
  EXPECT_EQ(upcxx::rpc(
                last, [](upcxx::team& t) { return t.rank_me() * 1000 + t.rank_n(); }, parity)
                .wait(),
            (parity.rank_n() - 1) * 1000 + parity.rank_n());
  EXPECT_EQ(upcxx::rpc(
                last, [](const upcxx::team& t) { return t.rank_n(); }, upcxx::world())
                .wait(),
            n);
  ask(100);
  std::vector<upcxx::intrank_t> all(static_cast<std::size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  std::reverse(all.begin(), all.end());
  upcxx::team reversed = upcxx::world().create(all);
  EXPECT_EQ(reversed.rank_me(), n - 1 - me);
  upcxx::barrier();
  if (me == 0) {
    EXPECT_EQ(served, 2 * (n - 1));
  }
  // Spec queries next to the teams: from_world with a fallback, a
  // dist_object's team, the shared segment's size and use.
  const int next = (me + 1) % n;
  EXPECT_EQ(parity.from_world(next, -7), next % 2 == me % 2 ? next / 2 : -7);
  {
    upcxx::dist_object<int> d(me, parity);
    EXPECT_EQ(&d.team(), &parity);
    upcxx::barrier(parity);
  }
  const std::int64_t used = upcxx::shared_segment_used();
  upcxx::global_ptr<char> block = upcxx::new_array<char>(1 << 16);
  EXPECT_GE(upcxx::shared_segment_used(), used + (1 << 16));
  EXPECT_GE(upcxx::shared_segment_size(), upcxx::shared_segment_used());
  upcxx::delete_array(block);
  EXPECT_EQ(upcxx::shared_segment_used(), used);
  upcxx::barrier(parity);
  reversed.destroy();
  parity.destroy();
}

// 8, 10, 11, 6: copy with a remote completion (at the destination's owner,
// after its data), team::color_none, the persona-scope queries, the
// iterator of a received view.
TEST(Upcxx, CopyRemoteCompletionAndScopes) {
  static int landed = 0;  // at each process: the sum its remote completion saw
  landed = 0;
  const int n = 100, me = upcxx::rank_me(), np = upcxx::rank_n();
  auto all = everyones(upcxx::new_array<int>(2 * n));
  std::iota(all[std::size_t(me)].local(), all[std::size_t(me)].local() + n, me * n);
  upcxx::barrier();
  // right's first half into left's second half (a third party when P > 2);
  // the completion runs at left and sums what landed.
  const upcxx::global_ptr<int> to = all[std::size_t(left())] + n;
  upcxx::copy(upcxx::global_ptr<const int>(all[std::size_t(right())]), to, n,
              upcxx::remote_cx::as_rpc(
                  [](upcxx::global_ptr<int> p) { landed = std::accumulate(p.local(), p.local() + 100, 0); }, to) |
                  upcxx::operation_cx::as_future())
      .wait();
  while (landed == 0) upcxx::progress();
  // I am my right neighbour's left: my second half came from right of right.
  const int from = (me + 2) % np;
  EXPECT_EQ(landed, from * n * n + n * (n - 1) / 2);
  for (int i = 0; i < n; ++i) ASSERT_EQ(all[std::size_t(me)].local()[n + i], from * n + i) << i;
  upcxx::barrier();
  upcxx::delete_array(all[std::size_t(me)]);

  // color_none: the process gets an inactive team, the others a team
  // without it.
  upcxx::team rest = upcxx::world().split(me == 0 ? upcxx::team::color_none : 1, me);
  EXPECT_EQ(rest.is_active(), me != 0);
  if (me != 0) {
    EXPECT_EQ(rest.rank_n(), np - 1);
    rest.destroy();
  }

  // Scopes: the implicit one at the bottom, a pushed one on top.
  EXPECT_EQ(&upcxx::top_persona_scope(), &upcxx::default_persona_scope());
  upcxx::persona extra;
  {
    upcxx::persona_scope s(extra);
    EXPECT_EQ(&upcxx::top_persona_scope(), &s);
    EXPECT_NE(&upcxx::default_persona_scope(), &s);
    upcxx::discharge(upcxx::top_persona_scope());
    EXPECT_FALSE(upcxx::progress_required(upcxx::default_persona_scope()));
  }
  EXPECT_EQ(&upcxx::top_persona_scope(), &upcxx::default_persona_scope());

  // A received view's type, spelled as the spec spells it.
  using received = upcxx::view<int, upcxx::deserializing_iterator<int>>;
  static_assert(std::is_same_v<upcxx::deserialized_type_t<upcxx::view<int>>, received>);
  const std::vector<int> v{3, 4, 5};
  EXPECT_EQ(upcxx::rpc(
                right(), [](received w) { return std::accumulate(w.begin(), w.end(), 0); }, upcxx::make_view(v))
                .wait(),
            12);
}

// The specification's preconditions on promises hold in every build (UPC++
// checks them in its debug mode): a second result, and a new dependency
// (directly or through a completion request) on a promise already ready,
// throw instead of passing unnoticed.
TEST(Upcxx, PromisePreconditionsAreChecked) {
  upcxx::promise<int> p;
  p.fulfill_result(1);
  EXPECT_THROW(p.fulfill_result(2), std::logic_error);
  EXPECT_EQ(p.get_future().wait(), 1);  // the first result fulfilled its one dependency

  upcxx::promise<> ready;
  ready.finalize().wait();
  EXPECT_THROW(ready.require_anonymous(1), std::logic_error);
  upcxx::global_ptr<int> mine = upcxx::new_array<int>(3);
  std::fill_n(mine.local(), 3, -1);
  const std::vector<upcxx::global_ptr<int>> all = everyones(mine);
  const upcxx::global_ptr<int> there = all[std::size_t(right())];
  // The value the puts below leave there, should this one have gone out.
  EXPECT_THROW(upcxx::rput(10 * (upcxx::rank_me() + 1), there, upcxx::operation_cx::as_promise(ready)),
               std::logic_error);
  upcxx::promise<int> got;
  got.fulfill_result(7);  // ready
  EXPECT_THROW(upcxx::rget(there, upcxx::operation_cx::as_promise(got)), std::logic_error);

  // A promise still waiting takes any number of dependencies.
  upcxx::barrier();
  upcxx::promise<> open;
  for (int k = 0; k < 3; ++k)
    upcxx::rput(10 * (upcxx::rank_me() + 1), there + k, upcxx::operation_cx::as_promise(open));
  open.finalize().wait();
  upcxx::barrier();
  for (int k = 0; k < 3; ++k) EXPECT_EQ(mine.local()[k], 10 * (left() + 1));
  upcxx::barrier();
  upcxx::delete_array(mine);
}

// Atomics on any integer type of 32 or 64 bits (UPC++ since 2020.3), not
// only the fixed-width names: long long and unsigned long long are types
// of their own beside int64_t and uint64_t on LP64.
template <class T>
void count_on_rank_zero() {
  using upcxx::atomic_op;
  upcxx::atomic_domain<T> ad({atomic_op::fetch_add, atomic_op::load, atomic_op::bit_xor});
  upcxx::global_ptr<T> c = upcxx::new_<T>(T(0));
  const upcxx::global_ptr<T> c0 = upcxx::broadcast(c, 0).wait();
  const T before = ad.fetch_add(c0, T(upcxx::rank_me() + 1), std::memory_order_relaxed).wait();
  EXPECT_LE(before, T(upcxx::rank_n() * (upcxx::rank_n() + 1) / 2));
  upcxx::barrier();
  EXPECT_EQ(ad.load(c0, std::memory_order_relaxed).wait(), T(upcxx::rank_n() * (upcxx::rank_n() + 1) / 2));
  upcxx::barrier();
  if (upcxx::rank_me() == 0) {
    ad.bit_xor(c0, T(1), std::memory_order_relaxed).wait();
    EXPECT_EQ(ad.load(c0, std::memory_order_relaxed).wait(), T(upcxx::rank_n() * (upcxx::rank_n() + 1) / 2) ^ T(1));
  }
  upcxx::barrier();
  ad.destroy();
  upcxx::delete_(c);
}

TEST(Upcxx, AtomicsOnEveryIntegerSpelling) {
  count_on_rank_zero<long long>();
  count_on_rank_zero<unsigned long long>();
  count_on_rank_zero<long>();
  count_on_rank_zero<unsigned>();
  count_on_rank_zero<std::size_t>();
  count_on_rank_zero<char32_t>();
}

// copy with a pointer to local memory at either end takes a remote
// completion too; it runs at dest's owner (the caller, for a get into local
// memory) in user-level progress, never inside the call.
TEST(Upcxx, CopyWithALocalEndRunsTheRemoteCompletion) {
  static int ran = 0, outside_progress = 0;
  static long seen = 0;
  ran = outside_progress = 0;
  seen = 0;
  const int n = 50, me = upcxx::rank_me();
  upcxx::global_ptr<int> mine = upcxx::new_array<int>(n);
  std::fill_n(mine.local(), n, -1);
  const std::vector<upcxx::global_ptr<int>> all = everyones(mine);
  std::vector<int> src(n);
  std::iota(src.begin(), src.end(), me * 1000);
  upcxx::barrier();

  // A put from local memory: the completion runs at right, after the data.
  upcxx::copy(src.data(), all[std::size_t(right())], std::size_t(n),
              upcxx::remote_cx::as_rpc(
                  [](upcxx::global_ptr<int> p) {
                    if (!upcxx::in_progress()) ++outside_progress;
                    seen = std::accumulate(p.local(), p.local() + 50, 0L);
                    ++ran;
                  },
                  all[std::size_t(right())]) |
                  upcxx::operation_cx::as_future())
      .wait();
  while (ran == 0) upcxx::progress();
  EXPECT_EQ(seen, 50L * left() * 1000 + 50 * 49 / 2);
  EXPECT_EQ(outside_progress, 0);
  upcxx::barrier();

  // A get into local memory: the completion runs here, not inside the call.
  std::vector<int> back(n, 0);
  ran = 0;
  upcxx::copy(all[std::size_t(right())], back.data(), std::size_t(n),
              upcxx::remote_cx::as_rpc([] { ++ran; }) | upcxx::operation_cx::as_future())
      .wait();
  for (int i = 0; i < n; ++i) ASSERT_EQ(back[std::size_t(i)], me * 1000 + i) << i;  // right got mine above
  while (ran == 0) upcxx::progress();
  EXPECT_EQ(ran, 1);
  upcxx::barrier();  // left has read my segment before I overwrite it

  // The completion alone (no future to wait for), with the caller as dest's
  // owner: not run by the call itself.
  ran = 0;
  upcxx::copy(src.data(), mine, std::size_t(n), upcxx::remote_cx::as_rpc([] { ++ran; }));
  EXPECT_EQ(ran, 0);
  while (ran == 0) upcxx::progress();
  EXPECT_EQ(mine.local()[n - 1], me * 1000 + n - 1);
  ran = 0;
  upcxx::copy(mine, back.data(), 0, upcxx::remote_cx::as_rpc([] { ++ran; }));
  EXPECT_EQ(ran, 0);
  while (ran == 0) upcxx::progress();
  upcxx::barrier();
  upcxx::delete_array(mine);
}

// dist_object's value constructor is not explicit (UPC++'s `dist_object(T
// value, team& = world())`), and `dist_object<T> d({})` holds T{} although
// the default constructor (inactive) exists too.
struct holds_a_map {
  upcxx::dist_object<std::map<int, int>> m;
  holds_a_map() : m({}) {}
};

TEST(Upcxx, DistObjectInitializationForms) {
  const int me = upcxx::rank_me(), right = (me + 1) % upcxx::rank_n();
  upcxx::dist_object<int> steps = 10 + me;
  upcxx::dist_object<bool> stop = false;
  holds_a_map h;
  (*h.m)[me] = me * me;
  upcxx::dist_object<std::vector<int>> empty({});
  upcxx::dist_object<std::vector<int>> three({1, 2, 3});
  upcxx::dist_object<int> zero({});
  upcxx::dist_object<int> inactive{};
  EXPECT_TRUE(steps.is_active());
  EXPECT_TRUE(empty.is_active());
  EXPECT_FALSE(inactive.is_active());
  EXPECT_EQ(steps.fetch(right).wait(), 10 + right);
  EXPECT_FALSE(stop.fetch(right).wait());
  EXPECT_EQ(h.m.fetch(right).wait(), (std::map<int, int>{{right, right * right}}));
  EXPECT_TRUE(empty.fetch(right).wait().empty());
  EXPECT_EQ(three.fetch(right).wait(), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(zero.fetch(right).wait(), 0);
  upcxx::barrier();
}

namespace accrete_tests {
// For upcxx_defer_completion.cpp, which defines UPCXX_DEFER_COMPLETION: this
// unit keeps the eager default in the same program.
bool eager_unit_local_put_ready_at_return() {
  upcxx::global_ptr<int> mine = upcxx::new_<int>(0);
  upcxx::future<> f = upcxx::rput(1, mine, upcxx::operation_cx::as_future());
  const bool ready = f.is_ready();
  f.wait();
  upcxx::delete_(mine);
  return ready;
}
}  // namespace accrete_tests
