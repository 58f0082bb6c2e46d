// A UPC++ program that writes `using namespace upcxx;` and calls the
// library's functions unqualified, as many programs do. upcxx's pointers
// and futures are accrete's types, so argument-dependent lookup also finds
// accrete's functions of the same names: each call below must still find
// one function (it did not compile when upcxx and accrete each had one),
// and do what the specification says. Also the calls that UPC++'s own
// argument-dependent lookup allows with no using-directive at all.
#include <upcxx/upcxx.hpp>

#include <array>
#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace {

// Filled by the rpc_ff of TeamRpcWithCompletions at its target.
int team_rpc_ff_from = -1;

struct node {
  upcxx::global_ptr<node> next;
  int value;
  node(upcxx::global_ptr<node> n, int v) : next(n), value(v) {}
};

// The neighbour's array of `n` ints, everyone's allocated here.
upcxx::global_ptr<int> right_array(upcxx::global_ptr<int> mine) {
  using namespace upcxx;
  dist_object<global_ptr<int>> d(mine);
  global_ptr<int> r = d.fetch((rank_me() + 1) % rank_n()).wait();
  barrier();  // nobody fetches from d after this
  return r;
}

// No using-directive: the unqualified calls with completion requests find
// upcxx's functions through the requests' type, as in UPC++.
int put_and_get_by_adl(upcxx::global_ptr<int> p, int v) {
  rput(v, p, upcxx::operation_cx::as_future()).wait();
  return rget(p, upcxx::operation_cx::as_future()).wait();
}

}  // namespace

TEST(UpcxxUnqualified, OneSidedCallsFindOneFunction) {
  using namespace upcxx;
  constexpr int n = 32;
  global_ptr<int> mine = new_array<int>(n);
  for (int i = 0; i < n; ++i) mine.local()[i] = -1;
  global_ptr<int> there = right_array(mine);
  const int me = rank_me();
  const int base = 1000 * me;

  // Contiguous puts, with and without completion requests.
  rput(base + 0, there).wait();
  rput(base + 1, there + 1, operation_cx::as_future()).wait();
  int two[2] = {base + 2, base + 3};
  rput(two, there + 2, 2).wait();
  promise<> done;
  rput(two, there + 4, 2, operation_cx::as_promise(done) | source_cx::as_buffered());
  done.finalize().wait();
  // Irregular, regular and strided puts, both ways.
  int src[6] = {base + 6, base + 7, base + 8, base + 9, base + 10, base + 11};
  std::vector<std::pair<int*, std::size_t>> lf{{src, 2}};
  std::vector<std::pair<global_ptr<int>, std::size_t>> rf{{there + 6, 2}};
  rput_irregular(lf.begin(), lf.end(), rf.begin(), rf.end()).wait();
  std::vector<std::pair<int*, std::size_t>> lf2{{src + 2, 2}};
  std::vector<std::pair<global_ptr<int>, std::size_t>> rf2{{there + 8, 2}};
  rput_irregular(lf2.begin(), lf2.end(), rf2.begin(), rf2.end(), operation_cx::as_future()).wait();
  std::vector<int*> lr{src + 4};
  std::vector<global_ptr<int>> rr{there + 10};
  rput_regular(lr.begin(), lr.end(), 2, rr.begin(), rr.end(), 2).wait();
  // Every other element of src into 3 consecutive ones (strides in bytes).
  const std::array<std::ptrdiff_t, 1> every_other{2 * sizeof(int)}, dense{sizeof(int)};
  const std::array<std::size_t, 1> three{3};
  rput_strided<1>(src, every_other, there + 12, dense, three).wait();
  rput_strided<1>(src + 1, every_other, there + 15, dense, three, operation_cx::as_future()).wait();
  barrier();

  // Every value the left neighbour wrote is here.
  const int lb = 1000 * ((me + rank_n() - 1) % rank_n());
  const std::vector<int> expect{lb + 0, lb + 1, lb + 2,  lb + 3, lb + 2,  lb + 3, lb + 6, lb + 7, lb + 8,
                                lb + 9, lb + 10, lb + 11, lb + 6, lb + 8, lb + 10, lb + 7, lb + 9, lb + 11};
  EXPECT_EQ(std::vector<int>(mine.local(), mine.local() + expect.size()), expect);

  // Gets, also from a pointer to const, with and without requests.
  global_ptr<const int> cthere = there;
  static_assert(std::is_same_v<decltype(rget(cthere)), future<int>>);
  EXPECT_EQ(rget(there).wait(), base + 0);
  EXPECT_EQ(rget(cthere + 1).wait(), base + 1);
  EXPECT_EQ(rget(there + 2, operation_cx::as_future()).wait(), base + 2);
  int got[3] = {};
  rget(cthere + 3, got, 2).wait();
  EXPECT_EQ(got[0], base + 3);
  EXPECT_EQ(got[1], base + 2);
  rget(there + 6, got, 3, operation_cx::as_future()).wait();
  EXPECT_EQ(got[2], base + 8);
  std::vector<std::pair<global_ptr<int>, std::size_t>> gf{{there + 9, 3}};
  std::vector<std::pair<int*, std::size_t>> lg{{got, 3}};
  rget_irregular(gf.begin(), gf.end(), lg.begin(), lg.end()).wait();
  EXPECT_EQ(got[0], base + 9);
  EXPECT_EQ(got[2], base + 11);
  std::vector<global_ptr<int>> gr{there + 12};
  std::vector<int*> lgr{got};
  rget_regular(gr.begin(), gr.end(), 3, lgr.begin(), lgr.end(), 3, operation_cx::as_future()).wait();
  EXPECT_EQ(got[1], base + 8);
  int every[6] = {};
  rget_strided<1>(there + 15, dense, every, every_other, three).wait();
  EXPECT_EQ(every[0], base + 7);
  EXPECT_EQ(every[2], base + 9);
  EXPECT_EQ(every[4], base + 11);
  EXPECT_EQ(put_and_get_by_adl(there + 20, base + 20), base + 20);
  barrier();  // everyone's reads of its neighbour are done before the arrays go
  delete_array(mine);
}

TEST(UpcxxUnqualified, ProgressAndStorage) {
  using namespace upcxx;
  progress();
  progress(progress_level::internal);
  progress(progress_level::user);
  global_ptr<double> d = allocate<double>(4);
  ASSERT_FALSE(d.is_null());
  deallocate(d);
  void* raw = allocate(64);
  ASSERT_NE(raw, nullptr);
  deallocate(raw);
  // new_ with a global pointer among its arguments (accrete::new_ is found
  // too), and its nothrow form.
  global_ptr<node> tail = new_<node>(nullptr, 1);
  global_ptr<node> head = new_<node>(tail, 2);
  global_ptr<node> front = new_<node>(std::nothrow, head, 3);
  ASSERT_FALSE(front.is_null());
  EXPECT_EQ(front.local()->value, 3);
  EXPECT_EQ(front.local()->next, head);
  EXPECT_EQ(head.local()->next.local()->value, 1);
  delete_(front);
  delete_(head);
  delete_(tail);
}

TEST(UpcxxUnqualified, TeamRpcWithCompletions) {
  using namespace upcxx;
  team halves = world().split(rank_me() % 2, rank_me());
  const intrank_t next = (halves.rank_me() + 1) % halves.rank_n();
  // rpc(team, rank, completions, f, args...): the callee is the member of
  // that rank in the team.
  EXPECT_EQ(rpc(halves, next, operation_cx::as_future(), [](int x) { return rank_me() * 10 + x; }, 7).wait(),
            halves[next] * 10 + 7);
  promise<int> p;
  rpc(halves, next, operation_cx::as_promise(p), [] { return rank_me(); });
  EXPECT_EQ(p.finalize().wait(), halves[next]);
  team_rpc_ff_from = -1;
  barrier();
  rpc_ff(halves, next, source_cx::as_buffered(), [](int from) { team_rpc_ff_from = from; }, rank_me());
  while (team_rpc_ff_from < 0) progress();
  EXPECT_EQ(team_rpc_ff_from, halves[(halves.rank_me() + halves.rank_n() - 1) % halves.rank_n()]);
  barrier();
  halves.destroy();
}
