// dist_object: collective naming, fetch, dist_object& arguments translated
// to the target's instance, early arrival (an RPC reaching a process before
// it constructed the object), and objects on teams.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <mpi.h>

#include "accrete/accrete.hpp"
#include "accrete/dist_object.hpp"
#include "accrete/rpc.hpp"

using namespace accrete;

TEST(DistObject, FetchFromEveryRank) {
  dist_object<int> d(rank_me() * 10);
  dist_object<std::string> s("rank " + std::to_string(rank_me()));
  dist_object<std::vector<double>> v(std::vector<double>(std::size_t(rank_me()), 1.5));
  EXPECT_EQ(*d, rank_me() * 10);
  for (int r = 0; r < rank_n(); ++r) {
    EXPECT_EQ(d.fetch(r).wait(), r * 10);
    EXPECT_EQ(s.fetch(r).wait(), "rank " + std::to_string(r));
    EXPECT_EQ(v.fetch(r).wait().size(), std::size_t(r));
  }
  barrier();  // nobody destroys an instance others may still fetch
}

TEST(DistObject, ArgumentIsTheTargetsInstance) {
  dist_object<std::int64_t> sum(0);
  dist_object<int> other(-1);  // a second object: the right one must be chosen
  barrier();
  for (int r = 0; r < rank_n(); ++r)
    rpc(
        r, [](dist_object<std::int64_t>& s, int add) { *s += add; }, sum, rank_me() + 1)
        .wait();
  barrier();
  EXPECT_EQ(*sum, std::int64_t(rank_n()) * (rank_n() + 1) / 2);
  EXPECT_EQ(*other, -1);
  // The callee sees its own instance and may return data from it.
  int right = (rank_me() + 1) % rank_n();
  EXPECT_EQ(rpc(
                right, [](dist_object<int>& o) { return *o + rank_me(); }, other)
                .wait(),
            right - 1);
  barrier();
}

TEST(DistObject, EarlyArrivalWaitsForConstruction) {
  if (rank_n() < 2) GTEST_SKIP() << "needs two processes";
  barrier();
  int token = 0;
  if (rank_me() == 0) {
    dist_object<int> d(0);
    auto f = rpc(
        1, [](dist_object<int>& x) { return *x; }, d);
    auto g = rpc(
        1,
        [](dist_object<int>& x, int y) {
          *x += y;
          return *x;
        },
        d, 5);
    // Only now may rank 1 go on: our RPCs are on their way to it.
    MPI_Send(&token, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
    EXPECT_EQ(f.wait(), 77);
    EXPECT_EQ(g.wait(), 82);
    barrier();
  } else if (rank_me() == 1) {
    MPI_Recv(&token, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    // Run progress until both RPCs have arrived and been set aside.
    unsigned spins = 0;
    while (detail::rpc_parked() < 2) {
      progress();
      detail::idle_backoff(spins);
    }
    dist_object<int> d(77);
    EXPECT_EQ(*d, 77);  // nothing ran inside the constructor
    barrier();          // progress: the parked RPCs run now
    EXPECT_EQ(*d, 82);
    EXPECT_EQ(detail::rpc_parked(), 0u);
  } else {
    dist_object<int> d(0);
    barrier();
  }
  barrier();
}

TEST(DistObject, OnTeams) {
  team parity = world().split(rank_me() % 2, rank_me());
  team same = world().split(rank_me() % 2, rank_me());  // same members, another team
  dist_object<int> a(100 + parity.rank_me(), parity);
  dist_object<int> b(200 + same.rank_me(), same);
  dist_object<int> c(300 + parity.rank_me(), parity);
  int tr = (parity.rank_me() + 1) % parity.rank_n();
  EXPECT_EQ(a.fetch(tr).wait(), 100 + tr);
  EXPECT_EQ(b.fetch(tr).wait(), 200 + tr);
  EXPECT_EQ(c.fetch(tr).wait(), 300 + tr);
  EXPECT_THROW(a.fetch(parity.rank_n()), std::out_of_range);
  EXPECT_FALSE(a.key() == b.key());
  EXPECT_FALSE(a.key() == c.key());
  barrier();
}

TEST(DistObject, FetchOfADestroyedInstanceSaysWhy) {
  // Rank 1 destroys its instance, then rank 0 fetches it. The fetch can
  // never be served; rank 1's progress reports it, naming the object and
  // the sender (it once parked the request forever, and the fetch hung).
  if (rank_n() < 2) GTEST_SKIP() << "needs two processes";
  auto* d = new dist_object<int>(rank_me());
  barrier();
  if (rank_me() == 1) {
    delete d;
    d = nullptr;
  }
  barrier();
  // Rank 0 fetches only once rank 1 has left that barrier: a fetch arriving
  // while rank 1 still waited in it would throw from barrier(), not from the
  // loop below. A plain MPI message makes no accrete progress.
  int go = 1;
  if (rank_me() == 1) MPI_Send(&go, 1, MPI_INT, 0, 77, MPI_COMM_WORLD);
  if (rank_me() == 0) {
    MPI_Recv(&go, 1, MPI_INT, 1, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    (void)d->fetch(1);  // abandoned: it cannot complete
  }
  if (rank_me() == 1) {
    std::string msg;
    const double until = MPI_Wtime() + 20;
    while (msg.empty() && MPI_Wtime() < until) {
      try {
        progress();
      } catch (const error& e) {
        msg = e.what();
      }
    }
    EXPECT_NE(msg.find("destroyed already"), std::string::npos) << "progress said: '" << msg << "'";
    EXPECT_NE(msg.find("from rank 0"), std::string::npos) << msg;
  }
  barrier();
  delete d;
}
