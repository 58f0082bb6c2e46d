// convergent_matrix merge operations (issue 13, item 2): max, min and a
// user function (gcd of integer-valued elements) on both strategies,
// against a reference every process computes from all processes'
// deterministic updates; -0/+0 and NaN give order-independent results;
// bad combinations are rejected on every process.
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "accrete/accrete.hpp"
#include "accrete/matrix/convergent_matrix.hpp"

using namespace accrete;

namespace {

constexpr std::int64_t M = 31, N = 23;

double gcd_merge(double a, double b) { return double(std::gcd(std::int64_t(a), std::int64_t(b))); }
double other_merge(double a, double b) { return a + b; }

struct update_rec {
  std::vector<std::int64_t> rows, cols;
  std::vector<double> vals;
};

// Process p's updates (indices may repeat); integer values for gcd.
std::vector<update_rec> updates_of(int p, bool integers) {
  std::mt19937_64 g(std::uint64_t(p) * 7919 + 1);
  std::vector<update_rec> us(25);
  for (auto& u : us) {
    const int nr = 1 + int(g() % 6), nc = 1 + int(g() % 5);
    for (int i = 0; i < nr; ++i) u.rows.push_back(std::int64_t(g() % M));
    for (int j = 0; j < nc; ++j) u.cols.push_back(std::int64_t(g() % N));
    for (int k = 0; k < nr * nc; ++k)
      u.vals.push_back(integers ? double(6 * (1 + g() % 20) * (1 + g() % 3)) : double(std::int64_t(g() % 2001) - 1000) / 8);
  }
  return us;
}

std::vector<double> reference(merge_op op, double init) {
  std::vector<double> ref(std::size_t(M * N), init);
  for (int p = 0; p < rank_n(); ++p)
    for (const auto& u : updates_of(p, op == merge_op::user))
      for (std::size_t j = 0; j < u.cols.size(); ++j)
        for (std::size_t i = 0; i < u.rows.size(); ++i) {
          double& x = ref[std::size_t(u.rows[i] + u.cols[j] * M)];
          const double v = u.vals[i + j * u.rows.size()];
          x = op == merge_op::max ? std::max(x, v) : op == merge_op::min ? std::min(x, v) : gcd_merge(x, v);
        }
  return ref;
}

struct merge_case {
  merge_op op;
  update_strategy strategy;
};

class Merge : public testing::TestWithParam<merge_case> {};

TEST_P(Merge, MatchesTheReference) {
  const auto [op, strategy] = GetParam();
  convergent_matrix_options o;
  o.strategy = strategy;
  o.buffer_cap = 2 << 10;  // packets travel while updating
  o.coalesce_bytes = 256;
  o.merge = op == merge_op::user ? merge_op::sum : op;
  process_grid grid(world().mpi_comm());
  auto A = op == merge_op::user ? convergent_matrix<double>(M, N, grid, 4, 3, &gcd_merge, o)
                                : convergent_matrix<double>(M, N, grid, 4, 3, o);
  EXPECT_EQ(A.merge(), op);
  // max from -inf, min from +inf, gcd from 0 (its identity).
  const double init = op == merge_op::max   ? -std::numeric_limits<double>::infinity()
                      : op == merge_op::min ? std::numeric_limits<double>::infinity()
                                            : 0.0;
  for (std::int64_t k = 0; k < A.lld() * A.local_cols(); ++k) A.local()[k] = init;
  barrier();  // before any process's updates reach this part
  for (const auto& u : updates_of(rank_me(), op == merge_op::user))
    A.update(u.vals.data(), std::int64_t(u.rows.size()), u.rows, u.cols);
  A.commit();
  const auto ref = reference(op, init);
  std::int64_t wrong = 0;
  for (std::int64_t j = 0; j < N; ++j)
    for (std::int64_t i = rank_me(); i < M; i += rank_n()) wrong += A.get(i, j) != ref[std::size_t(i + j * M)];
  EXPECT_EQ(wrong, 0);
  // A second round merges on top of the first.
  A.reopen();
  if (rank_me() == 0) A.update(op == merge_op::min ? -1e9 : 1e9 * (op == merge_op::user ? 0 : 1) + 7 * 6, 0, 0);
  A.commit();
  const double v0 = op == merge_op::min ? -1e9 : op == merge_op::max ? 1e9 + 42 : gcd_merge(ref[0], 42);
  EXPECT_EQ(A.get(0, 0), v0);
}

INSTANTIATE_TEST_SUITE_P(OpsAndStrategies, Merge,
                         testing::Values(merge_case{merge_op::max, update_strategy::packets},
                                         merge_case{merge_op::max, update_strategy::alltoall},
                                         merge_case{merge_op::min, update_strategy::packets},
                                         merge_case{merge_op::min, update_strategy::alltoall},
                                         merge_case{merge_op::user, update_strategy::packets},
                                         merge_case{merge_op::user, update_strategy::alltoall}));

TEST(MergeValues, SignedZerosAndNaNAreOrderIndependent) {
  for (merge_op op : {merge_op::max, merge_op::min}) {
    convergent_matrix_options o;
    o.merge = op;
    convergent_matrix<float> A(4, 4, process_grid(world().mpi_comm()), 2, 2, o);
    // Element (0, 0): every process sends -0 and +0, in an order that
    // depends on its rank. Element (1, 1): rank 0 sends NaN, the others 5.
    const float z[2] = {rank_me() % 2 ? -0.0f : 0.0f, rank_me() % 2 ? 0.0f : -0.0f};
    A.update(z[0], 0, 0);
    A.update(z[1], 0, 0);
    A.update(rank_me() == 0 ? std::numeric_limits<float>::quiet_NaN() : 5.0f, 1, 1);
    A.update(3.0f, 1, 1);
    A.commit();
    EXPECT_EQ(std::signbit(A.get(0, 0)), op == merge_op::min);
    EXPECT_EQ(A.get(0, 0), 0.0f);
    EXPECT_TRUE(std::isnan(A.get(1, 1)));
  }
}

TEST(MergeValues, BadCombinationsAreRejectedEverywhere) {
  process_grid grid(world().mpi_comm());
  convergent_matrix_options o;
  o.merge = merge_op::user;  // without a function
  EXPECT_THROW(convergent_matrix<double>(8, 8, grid, 2, 2, o), std::invalid_argument);
  o.merge = static_cast<merge_op>(42);
  EXPECT_THROW(convergent_matrix<double>(8, 8, grid, 2, 2, o), std::invalid_argument);
  o.merge = merge_op::sum;
  o.reproducible = true;
  EXPECT_THROW(convergent_matrix<double>(8, 8, grid, 2, 2, &gcd_merge, o), std::invalid_argument);
  o.reproducible = false;
  EXPECT_THROW(convergent_matrix<double>(8, 8, grid, 2, 2, nullptr, o), std::invalid_argument);
  if (rank_n() > 1) {
    auto f = rank_me() == 0 ? &gcd_merge : &other_merge;
    EXPECT_THROW(convergent_matrix<double>(8, 8, grid, 2, 2, f, o), collective_misuse);
  }
  // Still usable afterwards.
  convergent_matrix<double> B(8, 8, grid, 2, 2, &gcd_merge, o);
  B.update(12.0, 1, 1);
  B.commit();
  EXPECT_EQ(B.get(1, 1), 12.0);
}

}  // namespace
