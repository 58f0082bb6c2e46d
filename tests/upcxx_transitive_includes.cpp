// A UPC++ translation unit that includes nothing but <upcxx/upcxx.hpp> and
// uses assert and the standard containers UPC++'s serialization covers, as
// programs written against UPC++ do (its headers bring them in).
#include <upcxx/upcxx.hpp>

#include <gtest/gtest.h>

TEST(UpcxxTransitiveIncludes, AssertAndContainers) {
  const int me = upcxx::rank_me(), right = (me + 1) % upcxx::rank_n();
  std::map<int, std::set<int>> m{{me, {1, 2}}};
  std::unordered_map<int, std::list<int>> u{{me, {3}}};
  std::deque<int> d{4, 5};
  std::forward_list<int> f{6, 60};  // order kept: 6 first
  std::unordered_set<int> s{7};
  std::unordered_multiset<int> ms{8, 8};
  std::unordered_multimap<int, int> mm{{1, 9}, {1, 90}};
  const int total = upcxx::rpc(
                        right,
                        [](const std::map<int, std::set<int>>& m, const std::unordered_map<int, std::list<int>>& u,
                           const std::deque<int>& d, const std::forward_list<int>& f, const std::unordered_set<int>& s,
                           const std::unordered_multiset<int>& ms, const std::unordered_multimap<int, int>& mm) {
                          int t = f.front() == 6 ? 0 : -1000;
                          for (const auto& [k, v] : m)
                            for (int x : v) t += x;
                          for (const auto& [k, v] : u)
                            for (int x : v) t += x;
                          for (int x : d) t += x;
                          for (int x : f) t += x;
                          for (int x : s) t += x;
                          for (int x : ms) t += x;
                          for (const auto& [k, v] : mm) t += k * v;
                          return t;
                        },
                        m, u, d, f, s, ms, mm)
                        .wait();
  assert(total == 203);
  EXPECT_EQ(total, 203);  // 1+2 + 3 + 4+5 + 6+60 + 7 + 8+8 + 1*9+1*90
}
