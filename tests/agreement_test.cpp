// Collective calls whose arguments differ between processes, or are
// rejected on one process only. Each case once lost updates, overwrote a
// peer's part or never returned; now every process throws, the message
// names the argument and the ranks, and nothing is left allocated.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "accrete/accrete.hpp"
#include "accrete/array/counter.hpp"
#include "accrete/array/dist_array.hpp"
#include "accrete/matrix/convergent_matrix.hpp"

using namespace accrete;

namespace {

// Runs `make` on every process; every one must throw. Rank `odd` (the one
// that differs) may throw its own exception type; the others must throw
// collective_misuse. Returns this process's message, after checking that
// no shared memory was left allocated and that the runtime still works.
template <class F>
std::string all_throw(F&& make) {
  const std::size_t blocks = detail::live_shared_blocks();
  std::string msg;
  bool threw = false;
  try {
    make();
  } catch (const std::exception& e) {
    threw = true;
    msg = e.what();
  }
  EXPECT_TRUE(threw) << "rank " << rank_me() << " returned normally";
  EXPECT_EQ(detail::live_shared_blocks(), blocks) << "a failed construction left shared memory behind";
  if (std::getenv("AGREEMENT_TEST_PRINT")) std::fprintf(stderr, "[rank %d] %s\n", rank_me(), msg.c_str());
  barrier();  // still in step
  return msg;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(Agreement, DistArrayShapes) {
  if (rank_n() < 2) GTEST_SKIP() << "needs two processes";
  const int p = rank_n();
  const std::int64_t cols = rank_me() == 1 ? 40000 : 4;
  const std::string m = all_throw([&] { dist_array<double> A(distribution::block(4, cols, 1, p)); });
  EXPECT_TRUE(has(m, "cols = 4 on rank")) << m;
  EXPECT_TRUE(has(m, "cols = 40000 on rank 1")) << m;
  // Afterwards the same array, agreed, works.
  dist_array<double> A(distribution::block(4, 4, 1, p));
  A.fill(1.0);
  EXPECT_EQ(A.norm(), 4.0);
}

TEST(Agreement, DistArrayElementTypeAndBounds) {
  if (rank_n() < 2) GTEST_SKIP() << "needs two processes";
  const int p = rank_n();
  std::string m = all_throw([&] {
    if (rank_me() == 0)
      dist_array<float> A(distribution::block(4, 4, 1, p));
    else
      dist_array<std::int32_t> A(distribution::block(4, 4, 1, p));
  });
  EXPECT_TRUE(has(m, "element type")) << m;
  std::vector<std::int64_t> rb{0, 4}, cb(std::size_t(p) + 1);
  for (int k = 0; k <= p; ++k) cb[std::size_t(k)] = k;
  if (rank_me() == 1) cb[1] = 0;  // a different (valid) split of the columns
  m = all_throw([&] { dist_array<double> A(distribution::irregular(rb, cb)); });
  EXPECT_TRUE(has(m, "column bounds with hash")) << m;
}

TEST(Agreement, RejectedOnOneProcess) {
  if (rank_n() < 2) GTEST_SKIP() << "needs two processes";
  // Rank 1's shape is invalid: it throws its own error, the others say so.
  const std::int64_t rows = rank_me() == 1 ? -5 : 4;
  const std::string m = all_throw([&] { dist_array<double> A(rows, 4); });
  if (rank_me() == 1)
    EXPECT_TRUE(has(m, "-5")) << m;
  else
    EXPECT_TRUE(has(m, "rejected on rank 1")) << m;
}

TEST(Agreement, MatrixShapeAndOptions) {
  if (rank_n() < 2) GTEST_SKIP() << "needs two processes";
  process_grid grid(world().mpi_comm());
  const bool odd = rank_me() == 1;
  std::string m = all_throw([&] { convergent_matrix<double> A(odd ? 64 : 8, 8, grid, 4, 4); });
  EXPECT_TRUE(has(m, "m = 64 on rank 1")) << m;

  convergent_matrix_options repro;
  repro.reproducible = odd;
  m = all_throw([&] { convergent_matrix<double> A(8, 8, grid, 4, 4, repro); });
  EXPECT_TRUE(has(m, "reproducible = true on rank 1")) << m;

  convergent_matrix_options strat;
  strat.strategy = odd ? update_strategy::alltoall : update_strategy::packets;
  m = all_throw([&] { convergent_matrix<double> A(8, 8, grid, 4, 4, strat); });
  EXPECT_TRUE(has(m, "strategy")) << m;

  m = all_throw([&] {
    if (odd) {
      convergent_matrix<double> A(8, 8, grid, 4, 4, [](double a, double b) { return a > b ? a : b; });
    } else {
      convergent_matrix_options mx;
      mx.merge = merge_op::max;
      convergent_matrix<double> A(8, 8, grid, 4, 4, mx);
    }
  });
  EXPECT_TRUE(has(m, "merge")) << m;

  // Per-process options may differ: each process's own memory and order.
  convergent_matrix_options own;
  own.buffer_cap = odd ? (std::size_t{1} << 20) : (std::size_t{2} << 20);
  own.seed = std::uint64_t(rank_me());
  convergent_matrix<double> A(8, 8, grid, 4, 4, own);
  A.update(1.0, 7, 7);
  A.commit();
  EXPECT_EQ(A.get(7, 7), double(rank_n()));
}

TEST(Agreement, MatrixCollectiveMembers) {
  if (rank_n() < 2) GTEST_SKIP() << "needs two processes";
  process_grid grid(world().mpi_comm());
  convergent_matrix<double> A(8, 8, grid, 4, 4);
  A.commit();
  const std::string m = all_throw([&] {
    if (rank_me() == 1)
      A.symmetrize();
    else
      A.fill_lower();
  });
  EXPECT_TRUE(has(m, "different collective calls")) << m;
}

TEST(Agreement, ArrayCollectiveMembers) {
  if (rank_n() < 2) GTEST_SKIP() << "needs two processes";
  const int p = rank_n();
  dist_array<double> A(distribution::block(4, 4, 1, p)), B(distribution::block(4, 4, 1, p));
  std::string m = all_throw([&] { A.fill(rank_me() == 1 ? 2.0 : 1.0); });
  EXPECT_TRUE(has(m, "value")) << m;
  m = all_throw([&] {
    if (rank_me() == 1)
      A.add(1.0, B, 1.0, A);
    else
      A.add(1.0, A, 1.0, B);
  });
  EXPECT_TRUE(has(m, "first array")) << m;
  m = all_throw([&] { (void)(rank_me() == 1 ? B : A).norm(); });
  EXPECT_TRUE(has(m, "object")) << m;
  // Agreed calls still work, and gave the same data everywhere.
  A.fill(3.0);
  B.copy(A);
  EXPECT_EQ(B.dot(A), 9.0 * 16);
}

TEST(Agreement, Counter) {
  if (rank_n() < 2) GTEST_SKIP() << "needs two processes";
  std::string m = all_throw([&] { counter c(rank_me() == 1 ? 5 : 0); });
  EXPECT_TRUE(has(m, "initial = 5 on rank 1")) << m;
  counter c(10);
  m = all_throw([&] { c.reset(rank_me() == 1 ? 1 : 2); });
  EXPECT_TRUE(has(m, "value")) << m;
  barrier();
  if (rank_me() == 0) {
    EXPECT_EQ(c.fetch_add(0), 10) << "a refused reset changed the value";
  }
  barrier();
}
