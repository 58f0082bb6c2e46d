// A translation unit that asks for deferred completion by default
// (UPCXX_DEFER_COMPLETION, UPC++'s implementation-defined switch), linked
// into one program with others that keep the eager default: here
// as_future() and as_promise(p) must behave as as_defer_future() and
// as_defer_promise(p), and in the other units as the eager forms.
#define UPCXX_DEFER_COMPLETION 1
#include <upcxx/upcxx.hpp>

#include <type_traits>

#include <gtest/gtest.h>

namespace accrete_tests {
// Defined in upcxx_test.cpp, which keeps the eager default: a put to the
// caller's own segment through operation_cx::as_future(), and whether its
// future was ready when the call returned.
bool eager_unit_local_put_ready_at_return();
}  // namespace accrete_tests

namespace {

static_assert(
    std::is_same_v<decltype(upcxx::operation_cx::as_future()), decltype(upcxx::operation_cx::as_defer_future())>);
static_assert(std::is_same_v<decltype(upcxx::source_cx::as_future()), decltype(upcxx::source_cx::as_defer_future())>);
static_assert(
    !std::is_same_v<decltype(upcxx::operation_cx::as_future()), decltype(upcxx::operation_cx::as_eager_future())>);

TEST(UpcxxDeferCompletion, LocalPutIsNotReadyAtReturnHere) {
  upcxx::global_ptr<int> mine = upcxx::new_<int>(0);
  // A put into the caller's own segment is done inside the call; only the
  // deferred notification keeps its future from being ready at return.
  upcxx::future<> f = upcxx::rput(7, mine, upcxx::operation_cx::as_future());
  EXPECT_FALSE(f.is_ready());
  f.wait();
  EXPECT_EQ(*mine.local(), 7);

  upcxx::promise<> p;
  upcxx::rput(8, mine, upcxx::operation_cx::as_promise(p));
  upcxx::future<> pf = p.finalize();
  EXPECT_FALSE(pf.is_ready());
  pf.wait();
  EXPECT_EQ(*mine.local(), 8);

  auto [src, op] = upcxx::rput(9, mine, upcxx::source_cx::as_future() | upcxx::operation_cx::as_future());
  EXPECT_FALSE(src.is_ready());
  EXPECT_FALSE(op.is_ready());
  op.wait();
  src.wait();
  EXPECT_EQ(*mine.local(), 9);

  upcxx::promise<> sp;
  upcxx::future<> sop = upcxx::rput(10, mine, upcxx::source_cx::as_promise(sp) | upcxx::operation_cx::as_future());
  upcxx::future<> sf = sp.finalize();
  EXPECT_FALSE(sf.is_ready());
  sop.wait();
  sf.wait();
  EXPECT_EQ(*mine.local(), 10);

  // The value of a get arrives through the deferred future too.
  upcxx::future<int> g = upcxx::rget(mine, upcxx::operation_cx::as_future());
  EXPECT_FALSE(g.is_ready());
  EXPECT_EQ(g.wait(), 10);
  upcxx::delete_(mine);
}

TEST(UpcxxDeferCompletion, OtherUnitsKeepTheEagerDefault) {
  EXPECT_TRUE(accrete_tests::eager_unit_local_put_ready_at_return());
}

}  // namespace
