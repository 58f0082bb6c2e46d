// Remote atomics: every operation and type, exact results under contention,
// and errors.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>
#include <mpi.h>

#include "accrete/accrete.hpp"
#include "accrete/atomic.hpp"

using namespace accrete;

namespace {
// Rank 0 allocates one T; everyone gets the pointer.
template <class T>
global_ptr<T> shared_cell(T init) {
  global_ptr<T> g;
  if (rank_me() == 0) g = new_<T>(init);
  MPI_Bcast(&g, sizeof g, MPI_BYTE, 0, world().mpi_comm());
  return g;
}
}  // namespace

template <class T>
class AtomicTypes : public testing::Test {};
using atomic_types = testing::Types<std::int32_t, std::int64_t, std::uint32_t, std::uint64_t, float, double>;
TYPED_TEST_SUITE(AtomicTypes, atomic_types);

TYPED_TEST(AtomicTypes, EveryOperationOnEveryRank) {
  using T = TypeParam;
  atomic_domain<T> ad;
  // Each rank owns a cell and works on its right neighbour's.
  global_ptr<T> mine = new_<T>(T(0));
  std::vector<global_ptr<T>> all(rank_n());
  MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, world().mpi_comm());
  barrier();
  auto p = all[(rank_me() + 1) % rank_n()];
  ad.store(p, T(10)).wait();
  EXPECT_EQ(ad.load(p).wait(), T(10));
  EXPECT_EQ(ad.fetch_add(p, T(5)).wait(), T(10));
  ad.add(p, T(1)).wait();
  EXPECT_EQ(ad.fetch_sub(p, T(2)).wait(), T(16));
  ad.sub(p, T(4)).wait();
  EXPECT_EQ(ad.load(p).wait(), T(10));
  EXPECT_EQ(ad.fetch_min(p, T(3)).wait(), T(10));
  EXPECT_EQ(ad.fetch_max(p, T(7)).wait(), T(3));
  ad.max(p, T(8)).wait();
  ad.min(p, T(9)).wait();
  EXPECT_EQ(ad.exchange(p, T(20)).wait(), T(8));
  EXPECT_EQ(ad.compare_exchange(p, T(1), T(30)).wait(), T(20));   // fails
  EXPECT_EQ(ad.compare_exchange(p, T(20), T(30)).wait(), T(20));  // succeeds
  EXPECT_EQ(ad.load(p).wait(), T(30));
  if constexpr (std::is_integral_v<T>) {
    EXPECT_EQ(ad.fetch_bit_and(p, T(0x1c)).wait(), T(30));
    EXPECT_EQ(ad.fetch_bit_or(p, T(1)).wait(), T(0x1c));
    EXPECT_EQ(ad.fetch_bit_xor(p, T(0xff)).wait(), T(0x1d));
    EXPECT_EQ(ad.load(p).wait(), T(0xe2));
  }
  if constexpr (std::is_unsigned_v<T>) {  // subtraction wraps
    ad.store(p, T(1)).wait();
    EXPECT_EQ(ad.fetch_sub(p, T(2)).wait(), T(1));
    EXPECT_EQ(ad.load(p).wait(), T(~T(0)));
  }
  barrier();
  delete_(mine);
  ad.destroy();
}

TEST(Atomics, ContendedFetchAddIsExact) {
  constexpr int per_rank = 10000;
  atomic_domain<std::int64_t> ad;
  auto ctr = shared_cell<std::int64_t>(0);
  barrier();
  std::vector<std::int64_t> got(per_rank);
  for (int i = 0; i < per_rank; ++i) got[i] = ad.fetch_add(ctr, 1).wait();
  barrier();
  EXPECT_EQ(ad.load(ctr).wait(), std::int64_t(per_rank) * rank_n());
  // Every value 0 .. n*per_rank-1 was returned exactly once across ranks.
  std::vector<std::int64_t> all(rank_me() == 0 ? std::size_t(per_rank) * rank_n() : 0);
  MPI_Gather(got.data(), per_rank, MPI_INT64_T, all.data(), per_rank, MPI_INT64_T, 0, world().mpi_comm());
  if (rank_me() == 0) {
    std::sort(all.begin(), all.end());
    std::vector<std::int64_t> expect(all.size());
    std::iota(expect.begin(), expect.end(), 0);
    EXPECT_EQ(all, expect);
  }
  EXPECT_TRUE(std::is_sorted(got.begin(), got.end()));  // one process's own adds are ordered
  barrier();
  if (rank_me() == 0) delete_(ctr);
}

// Operations are non-blocking: a process may have thousands in flight,
// completed by one promise or a set of futures, and none is lost or
// applied twice. (Operations in flight together are not ordered: Open MPI
// over TCP applies one process's fetch_adds out of issue order.)
TEST(Atomics, FloodsInFlightAreExact) {
  constexpr int adds = 20000, fetches = 3000;
  atomic_domain<std::int64_t> ad;
  auto sum = shared_cell<std::int64_t>(0);
  auto ticket = shared_cell<std::int64_t>(0);
  barrier();
  promise<> all_added;
  for (int i = 0; i < adds; ++i) ad.add(sum, std::int64_t(i % 7), all_added);
  std::vector<future<std::int64_t>> got;
  got.reserve(fetches);
  for (int i = 0; i < fetches; ++i) got.push_back(ad.fetch_add(ticket, 1));
  all_added.finalize().wait();
  std::vector<std::int64_t> mine(fetches);
  for (int i = 0; i < fetches; ++i) mine[std::size_t(i)] = got[std::size_t(i)].wait();
  barrier();
  std::int64_t per_rank = 0;
  for (int i = 0; i < adds; ++i) per_rank += i % 7;
  EXPECT_EQ(ad.load(sum).wait(), per_rank * rank_n());
  std::vector<std::int64_t> all(rank_me() == 0 ? std::size_t(fetches) * rank_n() : 0);
  MPI_Gather(mine.data(), fetches, MPI_INT64_T, all.data(), fetches, MPI_INT64_T, 0, world().mpi_comm());
  if (rank_me() == 0) {
    std::sort(all.begin(), all.end());
    for (std::size_t i = 0; i < all.size(); ++i) ASSERT_EQ(all[i], std::int64_t(i));
  }
  // Once an operation is complete, every later one sees it.
  barrier();  // every process has read the sum
  if (rank_me() == rank_n() - 1) {
    promise<> stored;
    ad.store(sum, -5, stored);
    stored.finalize().wait();
    EXPECT_EQ(ad.fetch_add(sum, 1).wait(), -5);
  }
  barrier();
  if (rank_me() == 0) {
    delete_(sum);
    delete_(ticket);
  }
}

TEST(Atomics, ContendedCompareExchangeLoop) {
  constexpr int per_rank = 500;
  atomic_domain<double> ad;
  auto cell = shared_cell<double>(0.0);
  barrier();
  for (int i = 0; i < per_rank; ++i) {
    double old = ad.load(cell).wait();
    for (;;) {
      double seen = ad.compare_exchange(cell, old, old + 0.5).wait();
      if (seen == old) break;
      old = seen;
    }
  }
  barrier();
  EXPECT_EQ(ad.load(cell).wait(), 0.5 * per_rank * rank_n());
  barrier();
  if (rank_me() == 0) delete_(cell);
}

// Floating-point adds, mins and maxes from every process on one cell, in
// flight together, mixed with compare_exchange on the same cell: exact
// (every value is a multiple of 0.25 far below 2^53). In the mixed layout
// (ACCRETE_NODE_SIZE=2) Open MPI's osc/ucx once turned a double's
// MPI_SUM into an integer addition of its bits.
TYPED_TEST(AtomicTypes, ContendedFloatReadModifyWrite) {
  using T = TypeParam;
  if constexpr (std::is_floating_point_v<T>) {
    constexpr int per_rank = 150;
    atomic_domain<T> ad;
    auto sum = shared_cell<T>(T(0));
    auto lo = shared_cell<T>(T(1000));
    auto hi = shared_cell<T>(T(-1000));
    barrier();
    promise<> added;
    std::vector<future<T>> fetched;
    std::vector<future<>> lowered;
    for (int i = 0; i < per_rank; ++i) {
      ad.add(sum, T(0.25), added);
      fetched.push_back(ad.fetch_add(sum, T(0.5)));
      lowered.push_back(ad.min(lo, T(rank_me() * per_rank + i)));
      fetched.push_back(ad.fetch_max(hi, T(rank_me() * per_rank + i)));
    }
    // compare_exchange on the same cell: another 0.25 per round.
    for (int i = 0; i < 20; ++i) {
      T old = ad.load(sum).wait();
      for (T seen; (seen = ad.compare_exchange(sum, old, old + T(0.25)).wait()) != old;) old = seen;
    }
    added.finalize().wait();
    for (auto& f : fetched) f.wait();
    for (auto& f : lowered) f.wait();
    barrier();
    EXPECT_EQ(ad.load(sum).wait(), T(per_rank * 0.75 + 20 * 0.25) * T(rank_n()));
    EXPECT_EQ(ad.load(lo).wait(), T(0));
    EXPECT_EQ(ad.load(hi).wait(), T(rank_n() * per_rank - 1));
    barrier();
    if (rank_me() == 0) {
      delete_(sum);
      delete_(lo);
      delete_(hi);
    }
  }
}

TEST(AtomicErrors, BadPointers) {
  atomic_domain<std::int32_t> ad;
  EXPECT_THROW(ad.load(global_ptr<std::int32_t>()), bad_global_ptr);
  auto g = new_<std::int64_t>(0);
  auto odd = reinterpret_pointer_cast<std::int32_t>(reinterpret_pointer_cast<std::byte>(g) + 1);
  EXPECT_THROW(ad.fetch_add(odd, 1), bad_global_ptr);
  auto past = reinterpret_pointer_cast<std::int32_t>(g) + std::ptrdiff_t(segment_size() / 4);
  EXPECT_THROW(ad.store(past, 1), bad_global_ptr);
  delete_(g);
  ad.destroy();
  EXPECT_THROW(ad.load(reinterpret_pointer_cast<std::int32_t>(g)), error);
}
