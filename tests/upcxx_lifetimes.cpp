// The UPC++ layer: how long what a call hands over lives, and which thread
// may make progress. Written as a UPC++ program would use it; results exact.
#include <upcxx/upcxx.hpp>

#include <cstdlib>
#include <numeric>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

namespace {

// The gates the RPC bodies below wait behind, and what they saw. Globals:
// an RPC may arrive before its target reaches the test's own code.
upcxx::promise<>* gate = nullptr;
long seen_sum = -1;
std::size_t seen_chars = 0;

std::vector<int> held_values{4, 5, 6};
const int& held_value(std::size_t i) { return held_values[i]; }

}  // namespace

// When an RPC's callable returns a future, its arguments (a view's elements
// included) live until that future is ready: the body may hand them to
// later work. Messages sent meanwhile must not overwrite them.
TEST(UpcxxLifetimes, RpcArgumentsLiveUntilTheReturnedFutureIsReady) {
  const int me = upcxx::rank_me(), n = upcxx::rank_n();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  upcxx::promise<> mine;
  gate = &mine;
  seen_sum = -1;
  seen_chars = 0;
  upcxx::barrier();

  std::vector<long> values(1000);
  std::iota(values.begin(), values.end(), 10000L * me);
  upcxx::future<> answered = upcxx::rpc(
      right,
      [](upcxx::view<long> v, const std::string& tag) {
        return gate->get_future().then([v, &tag] {
          long s = 0;
          for (long x : v) s += x;
          seen_sum = s;
          seen_chars += tag.size();
        });
      },
      upcxx::make_view(values), std::string("tag of twenty chars!"));
  upcxx::rpc_ff(
      right,
      [](upcxx::view<std::string> words) {
        return gate->get_future().then([words] {
          for (const std::string& w : words) seen_chars += w.size();
        });
      },
      upcxx::make_view(std::vector<std::string>{"a", "bb", "ccc"}));
  upcxx::barrier();
  // Other messages, in both directions, while the gates are shut.
  for (int k = 0; k < 20; ++k) {
    std::size_t len = upcxx::rpc(right, [](std::vector<long> x) { return x.size(); }, std::vector<long>(500, k)).wait();
    ASSERT_EQ(len, 500u);
  }
  upcxx::barrier();
  mine.fulfill_anonymous(1);
  answered.wait();
  upcxx::barrier();
  EXPECT_EQ(seen_sum, 1000L * 10000L * left + 999L * 1000L / 2);
  EXPECT_EQ(seen_chars, 20u + 6u);
  upcxx::barrier();
  gate = nullptr;
}

// An lpc whose callable returns an lvalue reference gives a future of that
// reference; an rvalue reference is decayed to a value (as for rpc). A
// returned future of a reference keeps naming the same object.
TEST(UpcxxLifetimes, LpcResultsKeepLvalueReferences) {
  upcxx::persona& self = upcxx::current_persona();
  auto by_ref = self.lpc([]() -> int& { return held_values[1]; });
  static_assert(std::is_same_v<decltype(by_ref), upcxx::future<int&>>);
  EXPECT_EQ(&by_ref.wait(), &held_values[1]);
  auto by_rvalue = self.lpc([]() -> int&& { return std::move(held_values[2]); });
  static_assert(std::is_same_v<decltype(by_rvalue), upcxx::future<int>>);
  EXPECT_EQ(by_rvalue.wait(), 6);
  auto nested = self.lpc([] { return upcxx::make_future<const int&>(held_value(0)); });
  static_assert(std::is_same_v<decltype(nested), upcxx::future<const int&>>);
  EXPECT_EQ(&nested.wait(), &held_values[0]);
  // The same from an RPC: a returned reference arrives as a value.
  int remote = upcxx::rpc((upcxx::rank_me() + 1) % upcxx::rank_n(), held_value, 2).wait();
  EXPECT_EQ(remote, 6);
}

// make_future with an explicit reference type gives a future of that
// reference. An RPC whose callable returns a future of a reference (to the
// target's own object, or to an argument, which lives until the future is
// ready) sends the object: the caller's future holds a value.
TEST(UpcxxLifetimes, RpcFuturesOfReferencesArriveAsValues) {
  int local = 3;
  upcxx::future<int&> f = upcxx::make_future<int&>(local);
  EXPECT_EQ(&f.wait(), &local);
  auto both = upcxx::when_all(f, upcxx::make_future(4));
  EXPECT_EQ(&both.result<0>(), &local);
  EXPECT_EQ(both.result<1>(), 4);

  const int me = upcxx::rank_me(), n = upcxx::rank_n();
  const int right = (me + 1) % n;
  auto theirs = upcxx::rpc(right, [] { return upcxx::make_future<const std::vector<int>&>(held_values); });
  static_assert(std::is_same_v<decltype(theirs), upcxx::future<std::vector<int>>>);
  EXPECT_EQ(theirs.wait(), (std::vector<int>{4, 5, 6}));

  upcxx::promise<> mine;
  gate = &mine;
  upcxx::barrier();
  auto echoed = upcxx::rpc(
      right,
      [](const std::string& s) {
        return upcxx::when_all(gate->get_future(), upcxx::make_future<const std::string&>(s));
      },
      std::string(100, char('a' + me % 26)));
  static_assert(std::is_same_v<decltype(echoed), upcxx::future<std::string>>);
  // Other messages, in both directions, while the gates are shut.
  for (int k = 0; k < 10; ++k)
    ASSERT_EQ(upcxx::rpc(right, [](const std::string& x) { return x.size(); }, std::string(100, 'z')).wait(), 100u);
  upcxx::barrier();
  mine.fulfill_anonymous(1);
  EXPECT_EQ(echoed.wait(), std::string(100, char('a' + me % 26)));
  upcxx::barrier();  // every gate's RPC has answered before the gate goes
  gate = nullptr;
}

// In the seq thread mode (this program's unless ACCRETE_THREAD_MODE=par),
// a thread without the master persona may not make progress: it is told
// so, instead of racing the master inside MPI. In par it may.
TEST(UpcxxLifetimes, ProgressFromAnotherThreadFollowsTheThreadMode) {
  const char* mode = std::getenv("ACCRETE_THREAD_MODE");
  const bool par = mode != nullptr && std::string(mode) == "par";
  std::string what;
  bool returned = false;
  std::thread other([&] {
    try {
      upcxx::progress();
      returned = true;
    } catch (const std::exception& e) {
      what = e.what();
    }
  });
  other.join();
  if (par) {
    EXPECT_TRUE(returned) << what;
  } else {
    EXPECT_FALSE(returned);
    EXPECT_NE(what.find("seq thread mode"), std::string::npos) << what;
    EXPECT_NE(what.find("UPCXX_THREADMODE=1"), std::string::npos) << what;
  }
  upcxx::barrier();
}
