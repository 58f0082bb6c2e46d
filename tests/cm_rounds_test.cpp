// convergent_matrix rounds and re-entrancy (issue 9, items 1, 2, 3, 5, 6):
//  - updates issued by RPC bodies and .then callbacks while commit() runs
//    (the same matrix and another one) belong to the next round, exactly;
//  - a committed part stays put while its owner reads it, however fast the
//    other processes start the next round;
//  - reset() refuses pending updates on every process together;
//  - bad arguments on one process make every process throw (no hang);
//  - sizes that overflow, non-square fill_lower, use after destruction;
//  - packets larger than the memory cap are split, the cap holds;
//  - a malformed packet message is rejected whole.
// White-box test: reaches into accrete/detail/.
#define ACCRETE_INTERNAL_INCLUDE
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "accrete/accrete.hpp"
#include "accrete/detail/packet_format.hpp"
#include "accrete/matrix/convergent_matrix.hpp"

using namespace accrete;

namespace {

// Where each callback ran, relative to this process's commit of A.
enum phase : int { before = 0, during = 1, after = 2, not_run = 3 };
int g_phase = before;
convergent_matrix<double>* gA = nullptr;
convergent_matrix<double>* gB = nullptr;
int body_phase = not_run;  // the RPC body that ran here
int then_phase = not_run;  // this process's .then callback
int nested_commit = -1;    // 1: commit() inside the callback threw as it must

void rpc_body(int src) {
  const int me = rank_me();
  gA->update(1.0, src, me);        // column block [0, P): bodies
  gB->update(2.0, me, src);        // another matrix, never committing here
  (void)gA->stats();               // took the backend lock inside commit before
  body_phase = g_phase;
}

std::int64_t all_sum(std::int64_t v) {
  std::int64_t s = 0;
  MPI_Allreduce(&v, &s, 1, MPI_INT64_T, MPI_SUM, world().mpi_comm());
  return s;
}

std::vector<int> all_gather(int v) {
  std::vector<int> out(static_cast<std::size_t>(rank_n()));
  MPI_Allgather(&v, 1, MPI_INT, out.data(), 1, MPI_INT, world().mpi_comm());
  return out;
}

class Strategies : public testing::TestWithParam<update_strategy> {};

TEST_P(Strategies, UpdatesFromCallbacksDuringCommitBelongToTheNextRound) {
  const int P = rank_n(), me = rank_me();
  process_grid grid(world().mpi_comm());
  convergent_matrix_options o;
  o.strategy = GetParam();
  convergent_matrix<double> A(P, 2 * P, grid, 1, 1, o);
  convergent_matrix<double> B(P, P, grid, 1, 1, o);
  gA = &A;
  gB = &B;
  body_phase = then_phase = not_run;
  nested_commit = -1;
  g_phase = before;
  barrier();
  // Nothing makes user-level progress between here and the commit, so the
  // body and the callback run inside commit() (or after it).
  const int target = (me + 1) % P;
  future<> f = rpc(target, [](int src) { rpc_body(src); }, me).then([] {
    const int r = rank_me();
    gA->update(1.0, r, rank_n() + r);  // column block [P, 2P): callbacks
    then_phase = g_phase;
    if (g_phase == during) {
      try {
        gA->commit();
        nested_commit = 0;
      } catch (const error&) {
        nested_commit = 1;
      }
    }
  });
  g_phase = during;
  A.commit();
  g_phase = after;
  // Round 0 holds exactly the callbacks that ran before this commit.
  const auto bodies = all_gather(body_phase), thens = all_gather(then_phase);
  for (int t = 0; t < P; ++t) {
    const int src = (t + P - 1) % P;
    EXPECT_EQ(A.get(src, t), bodies[t] == before ? 1.0 : 0.0) << "body on " << t;
    EXPECT_EQ(A.get(t, P + t), thens[t] == before ? 1.0 : 0.0) << "callback on " << t;
  }
  if (then_phase == during) {
    EXPECT_EQ(nested_commit, 1);
  }
  if (std::getenv("CM_ROUNDS_VERBOSE") && me == 0)
    for (int t = 0; t < P; ++t) std::printf("rank %d: body phase %d, callback phase %d\n", t, bodies[t], thens[t]);
  f.wait();
  barrier();  // every body and callback has run somewhere
  A.commit();
  B.commit();
  // Everything, exactly once; nothing else anywhere.
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < P; ++i)
    for (std::int64_t j = 0; j < 2 * P; ++j) {
      const bool body = j < P && i == (j + P - 1) % P, cb = j >= P && i == j - P;
      if (A.layout().owner_row(i) == grid.my_row() && A.layout().owner_col(j) == grid.my_col()) {
        bad += A.get(i, j) != ((body || cb) ? 1.0 : 0.0);
      }
      if (j < P && B.layout().owner_row(i) == grid.my_row() && B.layout().owner_col(j) == grid.my_col()) {
        bad += B.get(i, j) != (i == (j + 1) % P ? 2.0 : 0.0);
      }
    }
  EXPECT_EQ(all_sum(bad), 0);
  gA = gB = nullptr;
}

INSTANTIATE_TEST_SUITE_P(Both, Strategies, testing::Values(update_strategy::packets, update_strategy::alltoall),
                         [](const auto& i) { return i.param == update_strategy::packets ? "packets" : "alltoall"; });

// Each round, every process adds (rank + 1) to every element, then one
// process reads its part slowly while the others rush into the next round.
// Odd rounds reopen explicitly after reading, even ones leave it to the
// next commit.
TEST(Rounds, CommittedPartStaysPutWhileItsOwnerReads) {
  const int P = rank_n(), me = rank_me();
  process_grid grid(world().mpi_comm());
  const std::int64_t n = 30;
  convergent_matrix<double> A(n, n, grid, 4, 4);
  std::vector<std::int64_t> all(n);
  for (std::int64_t i = 0; i < n; ++i) all[std::size_t(i)] = i;
  std::vector<double> block(std::size_t(n * n), double(me + 1));
  const double per_round = double(P) * (P + 1) / 2;
  auto part_is = [&](double want) {
    std::int64_t bad = 0;
    for (std::int64_t j = 0; j < A.local_cols(); ++j)
      for (std::int64_t i = 0; i < A.local_rows(); ++i) bad += A.local()[i + j * A.lld()] != want;
    return bad;
  };
  const int rounds = 6;
  for (int k = 1; k <= rounds; ++k) {
    A.update(block.data(), n, all, all);
    A.commit();
    EXPECT_EQ(A.round(), std::uint64_t(k));
    const double want = k * per_round;
    if (me == k % P) {
      EXPECT_EQ(part_is(want), 0) << "round " << k << " before sleeping";
      std::this_thread::sleep_for(std::chrono::milliseconds(40));
      progress();  // progress must not apply next-round packets either
      EXPECT_EQ(part_is(want), 0) << "round " << k << " after others started the next round";
    } else {
      EXPECT_EQ(part_is(want), 0) << "round " << k;
    }
    if (k % 2) A.reopen();
  }
  A.commit();  // an empty round: still exact
  EXPECT_EQ(part_is(rounds * per_round), 0);
  EXPECT_EQ(A.held_messages(), 0u);
}

TEST(Rounds, ResetRefusesPendingUpdatesEverywhere) {
  process_grid grid(world().mpi_comm());
  convergent_matrix<double> A(7, 5, grid, 2, 2);
  A.update(1.0, 3, 4);
  A.commit();
  if (rank_me() == 0) A.update(1.0, 6, 0);
  EXPECT_THROW(A.reset(), collective_misuse);
  A.commit();  // the pending update lands in the next round
  EXPECT_EQ(A.get(3, 4), double(rank_n()));
  EXPECT_EQ(A.get(6, 0), 1.0);
  A.reset();
  EXPECT_EQ(A.get(3, 4), 0.0);
  A.update(2.0, 0, 0);
  A.commit();
  EXPECT_EQ(A.get(0, 0), 2.0 * rank_n());
}

TEST(Arguments, BadOnOneProcessThrowsOnEvery) {
  process_grid grid(world().mpi_comm());
  convergent_matrix_options o;
  const int last = rank_n() - 1;
  if (rank_me() == last) o.lld = 1;  // every process has more than one local row
  ASSERT_GT(block_cyclic(10, 12, 2, 2, grid.rows(), grid.cols()).local_rows(grid.my_row()), 1);
  if (rank_me() == last) {
    EXPECT_THROW(convergent_matrix<float>(10, 12, grid, 2, 2, o), std::invalid_argument);
  } else {
    EXPECT_THROW(convergent_matrix<float>(10, 12, grid, 2, 2, o), collective_misuse);
  }
  // Block sizes differing on one process: block_cyclic rejects 0.
  const std::int64_t mb = rank_me() == last ? 0 : 2;
  EXPECT_ANY_THROW(convergent_matrix<float>(10, 12, grid, mb, 2));
  // And the runtime is still usable: a good matrix works.
  convergent_matrix<float> ok(10, 12, grid, 2, 2);
  ok.update(1.0f, 9, 11);
  ok.commit();
  EXPECT_EQ(ok.get(9, 11), float(rank_n()));
}

TEST(Arguments, StorageSizesThatOverflowAreRejected) {
  process_grid grid(world().mpi_comm(), 1, rank_n());
  convergent_matrix_options o;
  o.lld = 1073764994;  // x 2^31 columns x 8 bytes wraps 2^64 at P = 1
  EXPECT_THROW(convergent_matrix<double>(1, 2147437309, grid, 1, 1, o), std::invalid_argument);
  o.lld = 0;
  o.buffer_cap = 100;
  EXPECT_THROW(convergent_matrix<double>(4, 4, grid, 1, 1, o), std::invalid_argument);
}

TEST(Arguments, FillLowerAndSymmetrizeNeedSquare) {
  process_grid grid(world().mpi_comm());
  convergent_matrix<double> A(6, 5, grid, 2, 2);
  A.commit();
  try {
    A.fill_lower();
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("6 x 5, not square"), std::string::npos) << e.what();
  }
  EXPECT_THROW(A.symmetrize(), std::invalid_argument);
}

// Calling a member of a destroyed object is undefined behaviour; the check
// is a diagnostic for programs that do it by mistake. UBSan's vptr check
// reports the call itself (rightly), so the sanitizer build skips this.
TEST(Lifetime, MembersAfterDestructionThrow) {
#ifdef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "calls members of a destroyed object, which UBSan reports by design";
#endif
  process_grid grid(world().mpi_comm());
  using M = convergent_matrix<double>;
  alignas(M) unsigned char storage[sizeof(M)];
  M* a = new (storage) M(4, 4, grid, 2, 2);
  a->~M();
  EXPECT_THROW(a->reset(), error);
  EXPECT_THROW(a->get(0, 0), error);
  EXPECT_THROW(a->local(), error);
  EXPECT_THROW(a->commit(), error);
  EXPECT_THROW(a->update(1.0, 0, 0), error);
  EXPECT_THROW(a->stats(), error);
  EXPECT_THROW(a->reopen(), error);
}

// A part bigger than the memory cap for one target: split into pieces of at
// most half the cap, and buffered + in-flight bytes never pass the cap.
TEST(Packets, LargerThanTheCapAreSplit) {
  process_grid grid(world().mpi_comm());
  convergent_matrix_options o;
  o.buffer_cap = 4 << 10;
  o.coalesce_bytes = 1 << 10;
  const std::int64_t n = 120;
  convergent_matrix<double> A(n, n, grid, 8, 8, o);
  std::vector<std::int64_t> all(n);
  for (std::int64_t i = 0; i < n; ++i) all[std::size_t(i)] = i;
  std::vector<double> block(std::size_t(n * n));
  for (std::int64_t e = 0; e < n * n; ++e) block[std::size_t(e)] = double(e % 13);
  for (int rep = 0; rep < 3; ++rep) A.update(block.data(), n, all, all);
  A.commit();
  std::int64_t bad = 0;
  for (std::int64_t lj = 0; lj < A.local_cols(); ++lj)
    for (std::int64_t li = 0; li < A.local_rows(); ++li) {
      const std::int64_t i = A.layout().global_row(grid.my_row(), li), j = A.layout().global_col(grid.my_col(), lj);
      bad += A.local()[li + lj * A.lld()] != 3.0 * rank_n() * double((i + j * n) % 13);
    }
  EXPECT_EQ(all_sum(bad), 0);
  EXPECT_LE(A.stats().peak_buffered, o.buffer_cap);
}

// Two packets, the second with a column out of range: nothing is applied.
TEST(Packets, MalformedMessageIsRejectedWhole) {
  std::vector<std::byte> msg;
  auto add = [&](std::int32_t row, std::int32_t col) {
    const std::size_t at = msg.size(), bytes = *detail::packet_bytes(1, 1, sizeof(double));
    msg.resize(at + bytes);
    const std::int32_t head[4] = {1, 1, row, col};
    std::memcpy(msg.data() + at, head, sizeof head);
    const double v = 1.0;
    std::memcpy(msg.data() + at + bytes - sizeof v, &v, sizeof v);
  };
  add(0, 0);
  add(0, 9);
  int applied = 0;
  EXPECT_THROW(detail::for_each_packet(msg, sizeof(double), 4, 4, [&](const auto&) { ++applied; }), error);
  EXPECT_EQ(applied, 0);
  // Dimensions whose byte count wraps: rejected, not trusted.
  const std::int32_t huge[2] = {INT32_MAX, INT32_MAX};
  std::memcpy(msg.data(), huge, sizeof huge);
  EXPECT_THROW(detail::for_each_packet(msg, sizeof(double), 4, 4, [&](const auto&) { ++applied; }), error);
  EXPECT_FALSE(detail::packet_bytes(std::size_t{1} << 40, 1, 8));
  EXPECT_EQ(applied, 0);
  // The intact first packet alone is fine.
  msg.resize(*detail::packet_bytes(1, 1, sizeof(double)));
  add(0, 0);
  msg.erase(msg.begin(), msg.begin() + std::ptrdiff_t(msg.size() / 2));
  EXPECT_EQ(detail::for_each_packet(msg, sizeof(double), 4, 4, [&](const auto&) { ++applied; }), 1u);
  EXPECT_EQ(applied, 1);
}

}  // namespace

namespace {
// axis_map::split (the binning's fast path) against owner() and local().
TEST(AxisMap, SplitMatchesOwnerAndLocal) {
  std::uint64_t s = 12345;
  auto next = [&] { return s = s * 6364136223846793005ULL + 1442695040888963407ULL, s >> 17; };
  for (int trial = 0; trial < 200000; ++trial) {
    detail::axis_map m;
    m.block = 1 + std::int64_t(next() % (trial % 2 ? 7 : 300));
    m.parts = 1 + int(next() % 6);
    m.src = int(next() % std::uint64_t(m.parts));
    const std::int64_t i = trial % 5 == 0 ? std::int64_t(next() % (std::uint64_t(1) << 40)) : std::int64_t(next() % 100000);
    int part = -1;
    std::int32_t loc = -1;
    m.split(i, part, loc);
    ASSERT_EQ(part, m.owner(i)) << i << " block " << m.block << " parts " << m.parts << " src " << m.src;
    if (m.local(i) <= INT32_MAX) {
      ASSERT_EQ(loc, m.local(i)) << i;
    }
  }
}
}  // namespace
