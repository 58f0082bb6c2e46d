// convergent_matrix: exact assembly results for every strategy, grid shape,
// block size and update form; rounds, threads, the memory cap, MPI-IO,
// ScaLAPACK interoperability and input validation.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "accrete/accrete.hpp"
#include "accrete/matrix/convergent_matrix.hpp"
#include "accrete/matrix/scalapack.hpp"
#include "hessian_workload.hpp"

using namespace accrete;
namespace hw = bench::hessian;

namespace {

// Deterministic random updates whose values are multiples of 0.25, so every
// sum is exact in float whatever the order of application.
struct gen {
  std::uint64_t s;
  explicit gen(std::uint64_t seed) : s(seed) {}
  std::uint64_t next() { return hw::splitmix_next(s); }
  std::int64_t below(std::int64_t n) { return std::int64_t(next() % std::uint64_t(n)); }
};

struct slice {
  std::vector<std::int64_t> rows, cols;
  std::vector<float> vals;  // column-major, ld = rows.size()
};

slice make_slice(int rank, int k, std::int64_t m, std::int64_t n) {
  gen g(0x1234 + std::uint64_t(rank) * 1000003 + std::uint64_t(k));
  slice s;
  const std::int64_t nr = 1 + g.below(12), nc = 1 + g.below(12);
  for (std::int64_t i = 0; i < nr; ++i) s.rows.push_back(g.below(m));  // duplicates allowed
  for (std::int64_t j = 0; j < nc; ++j) s.cols.push_back(g.below(n));
  for (std::int64_t e = 0; e < nr * nc; ++e) s.vals.push_back(0.25f * float(1 + g.below(16)));
  return s;
}

// The dense global result of `count` slices from every rank.
std::vector<double> reference(std::int64_t m, std::int64_t n, int count) {
  std::vector<double> a(std::size_t(m * n), 0.0);
  for (int r = 0; r < rank_n(); ++r)
    for (int k = 0; k < count; ++k) {
      slice s = make_slice(r, k, m, n);
      for (std::size_t j = 0; j < s.cols.size(); ++j)
        for (std::size_t i = 0; i < s.rows.size(); ++i)
          a[std::size_t(s.rows[i] + s.cols[j] * m)] += s.vals[i + j * s.rows.size()];
    }
  return a;
}

// Compares this process's local block with the dense reference exactly.
template <class T>
std::int64_t mismatches(const convergent_matrix<T>& A, const std::vector<double>& ref) {
  const auto& L = A.layout();
  std::int64_t bad = 0;
  for (std::int64_t lj = 0; lj < A.local_cols(); ++lj)
    for (std::int64_t li = 0; li < A.local_rows(); ++li) {
      const std::int64_t i = L.global_row(A.grid().my_row(), li), j = L.global_col(A.grid().my_col(), lj);
      if (double(A.local()[li + lj * A.lld()]) != ref[std::size_t(i + j * A.rows())]) ++bad;
    }
  return bad;
}

std::int64_t all_sum(std::int64_t v) {
  std::int64_t s = 0;
  MPI_Allreduce(&v, &s, 1, MPI_INT64_T, MPI_SUM, world().mpi_comm());
  return s;
}

const update_strategy all_strategies[] = {update_strategy::packets, update_strategy::alltoall};

std::string name(update_strategy s) { return s == update_strategy::packets ? "packets" : "alltoall"; }

}  // namespace

TEST(ConvergentMatrix, HessianTinyWorkloadExact) {
  const hw::params prm = hw::preset("tiny");
  const auto [pr, pc] = hw::grid_shape(rank_n());
  process_grid grid(world().mpi_comm(), pr, pc);
  for (auto strat : all_strategies) {
    convergent_matrix_options o;
    o.strategy = strat;
    convergent_matrix<float> H(prm.N, prm.N, grid, hw::MB, hw::NB, o);
    hw::update up;
    for (std::int64_t u = 0; u < prm.U; ++u) {
      hw::make_update(prm, rank_me(), u, up);
      H.update(up.B.data(), prm.n(), up.ix, up.ix);
    }
    H.commit();
    EXPECT_EQ(all_sum(hw::full_check(prm, rank_n(), grid.my_row(), grid.my_col(), H.local(), H.lld())), 0)
        << name(strat);
    double local = hw::local_sum(H.local(), H.lld(), H.local_rows(), H.local_cols()), total = 0;
    MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, world().mpi_comm());
    EXPECT_EQ(total, hw::expected_checksum(prm, rank_n())) << name(strat);
  }
}

struct shape_case {
  int pr;  // 0: 1 x P; -1: P x 1; else default shape
  grid_order order;
  std::int64_t mb, nb;
};

class GridsAndBlocks : public testing::TestWithParam<shape_case> {};

TEST_P(GridsAndBlocks, RandomSlicesExact) {
  const auto c = GetParam();
  const int P = rank_n();
  int pr = c.pr == 0 ? 1 : c.pr == -1 ? P : hw::grid_shape(P).first;
  process_grid grid(world().mpi_comm(), pr, P / pr, c.order);
  const std::int64_t m = 97, n = 70;
  const int count = 40;
  const auto ref = reference(m, n, count);
  for (auto strat : all_strategies) {
    convergent_matrix_options o;
    o.strategy = strat;
    convergent_matrix<double> A(m, n, grid, c.mb, c.nb, o);
    for (int k = 0; k < count; ++k) {
      slice s = make_slice(rank_me(), k, m, n);
      std::vector<double> v(s.vals.begin(), s.vals.end());
      if (k % 2 == 0) {
        A.update(v.data(), std::int64_t(s.rows.size()), s.rows, s.cols);
      } else {
        // The same block stored row-major with padding.
        const std::int64_t ld = std::int64_t(s.cols.size()) + 3;
        std::vector<double> rm(s.rows.size() * std::size_t(ld), -99.0);
        for (std::size_t i = 0; i < s.rows.size(); ++i)
          for (std::size_t j = 0; j < s.cols.size(); ++j) rm[i * std::size_t(ld) + j] = v[i + j * s.rows.size()];
        A.update(rm.data(), ld, s.rows, s.cols, matrix_layout::row_major);
      }
    }
    A.commit();
    EXPECT_EQ(all_sum(mismatches(A, ref)), 0) << name(strat) << " grid " << pr << "x" << P / pr << " mb " << c.mb;
    // Remote reads see the committed values too.
    for (int t = 0; t < 5; ++t) {
      const std::int64_t i = (rank_me() * 31 + t * 17) % m, j = (rank_me() * 7 + t * 29) % n;
      EXPECT_EQ(A.get(i, j), ref[std::size_t(i + j * m)]);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, GridsAndBlocks,
                         testing::Values(shape_case{0, grid_order::row_major, 1, 1},
                                         shape_case{-1, grid_order::row_major, 3, 3},
                                         shape_case{1, grid_order::row_major, 64, 64},
                                         shape_case{1, grid_order::col_major, 3, 5},
                                         shape_case{0, grid_order::col_major, 64, 1}));

// fill_lower and symmetrize of a non-symmetric matrix on every grid shape,
// with row and column blocks of different sizes (so a row's owner and the
// same index's column owner differ), against the dense reference; values
// are multiples of 0.25 and halves of their sums stay exact.
TEST_P(GridsAndBlocks, TransposesExact) {
  const auto c = GetParam();
  const int P = rank_n();
  int pr = c.pr == 0 ? 1 : c.pr == -1 ? P : hw::grid_shape(P).first;
  process_grid grid(world().mpi_comm(), pr, P / pr, c.order);
  const std::int64_t n = 83;
  const int count = 30;
  const auto a = reference(n, n, count);
  for (bool upper_only : {true, false}) {
    convergent_matrix<double> A(n, n, grid, c.mb, c.nb + 1);
    for (int k = 0; k < count; ++k) {
      slice s = make_slice(rank_me(), k, n, n);
      std::vector<double> v(s.vals.begin(), s.vals.end());
      A.update(v.data(), std::int64_t(s.rows.size()), s.rows, s.cols);
    }
    A.commit();
    std::vector<double> want(a);
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < n; ++i) {
        const double x = a[std::size_t(i + j * n)], xt = a[std::size_t(j + i * n)];
        if (upper_only)
          want[std::size_t(i + j * n)] = i > j ? xt : x;
        else
          want[std::size_t(i + j * n)] = (x + xt) / 2;
      }
    if (upper_only)
      A.fill_lower();
    else
      A.symmetrize();
    EXPECT_EQ(all_sum(mismatches(A, want)), 0)
        << (upper_only ? "fill_lower" : "symmetrize") << " grid " << pr << "x" << P / pr << " mb " << c.mb;
  }
}

TEST(ConvergentMatrix, SymmetricUpdatesAndFillLower) {
  process_grid grid(world().mpi_comm());
  const std::int64_t n = 60;
  convergent_matrix<float> A(n, n, grid, 3, 3);
  std::vector<double> full(std::size_t(n * n), 0.0);
  for (int r = 0; r < rank_n(); ++r)
    for (int k = 0; k < 10; ++k) {
      // A symmetric block over an index set (with a duplicate index).
      gen g(77 + std::uint64_t(r) * 100 + std::uint64_t(k));
      std::vector<std::int64_t> ix;
      for (int i = 0; i < 8; ++i) ix.push_back(g.below(n));
      ix.push_back(ix[0]);
      const std::size_t d = ix.size();
      std::vector<float> b(d * d);
      for (std::size_t j = 0; j < d; ++j)
        for (std::size_t i = 0; i <= j; ++i) b[i + j * d] = b[j + i * d] = 0.25f * float(1 + g.below(8));
      // Expected: only pairs with ix[i] <= ix[j] land, then the upper
      // triangle is mirrored.
      for (std::size_t j = 0; j < d; ++j)
        for (std::size_t i = 0; i < d; ++i)
          if (ix[i] <= ix[j]) full[std::size_t(ix[i] + ix[j] * n)] += b[i + j * d];
      if (r == rank_me()) A.update_symmetric(b.data(), std::int64_t(d), ix);
    }
  A.commit();
  A.fill_lower();
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = j + 1; i < n; ++i) full[std::size_t(i + j * n)] = full[std::size_t(j + i * n)];
  EXPECT_EQ(all_sum(mismatches(A, full)), 0);
  // symmetrize() of a symmetric matrix changes nothing.
  A.symmetrize();
  EXPECT_EQ(all_sum(mismatches(A, full)), 0);
}

TEST(ConvergentMatrix, SingleElementsRoundsAndReset) {
  process_grid grid(world().mpi_comm());
  const std::int64_t n = 33;
  convergent_matrix<double> A(n, n, grid, 4, 4);
  for (int round = 1; round <= 3; ++round) {
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < n; ++j)
        if ((i + j + rank_me()) % 3 == 0) A.update(double(round) * (1 + rank_me()), i, j);
    A.commit();
    for (std::int64_t i = 0; i < n; i += 5)
      for (std::int64_t j = 0; j < n; j += 3) {
        double want = 0;
        for (int r = 0; r < rank_n(); ++r)
          if ((i + j + r) % 3 == 0) want += double(round) * (1 + r);
        ASSERT_EQ(A.get(i, j), want) << "round " << round << " at " << i << "," << j;
      }
    A.reset();
  }
  double s = 0;
  for (std::int64_t e = 0; e < A.local_cols() * A.lld(); ++e) s += std::abs(A.local()[e]);
  EXPECT_EQ(s, 0.0);
}

TEST(ConvergentMatrix, ConcurrentUpdatesFromFourThreads) {
  process_grid grid(world().mpi_comm());
  const std::int64_t m = 80, n = 80;
  const int per_thread = 30, threads = 4;
  convergent_matrix<float> A(m, n, grid, 8, 8);
  // A tiny cap and coalescing size: threads flush, wait for room and poll
  // concurrently (the paths ThreadSanitizer checks, label tsan).
  convergent_matrix_options tiny;
  tiny.buffer_cap = 2 << 10;
  tiny.coalesce_bytes = 256;
  convergent_matrix<float> B(m, n, grid, 8, 8, tiny);
  std::vector<std::thread> team_threads;
  for (int t = 0; t < threads; ++t)
    team_threads.emplace_back([&, t] {
      for (int k = t; k < threads * per_thread; k += threads) {
        slice s = make_slice(rank_me(), k, m, n);
        A.update(s.vals.data(), std::int64_t(s.rows.size()), s.rows, s.cols);
        B.update(s.vals.data(), std::int64_t(s.rows.size()), s.rows, s.cols);
      }
    });
  for (auto& th : team_threads) th.join();
  A.commit();
  B.commit();
  const auto ref = reference(m, n, threads * per_thread);
  EXPECT_EQ(all_sum(mismatches(A, ref)), 0);
  EXPECT_EQ(all_sum(mismatches(B, ref)), 0);
  EXPECT_LE(B.stats().peak_buffered, tiny.buffer_cap);
}

TEST(ConvergentMatrix, SmallMemoryCapUnderFlood) {
  process_grid grid(world().mpi_comm());
  const std::int64_t m = 200, n = 200;
  convergent_matrix_options o;
  o.buffer_cap = 16 << 10;
  o.coalesce_bytes = 4 << 10;
  convergent_matrix<float> A(m, n, grid, 16, 16, o);
  const int count = 400;
  std::size_t largest_packet = 0;
  for (int k = 0; k < count; ++k) {
    slice s = make_slice(rank_me(), k, m, n);
    largest_packet = std::max(largest_packet, 8 + 4 * (s.rows.size() + s.cols.size()) + 8 + 4 * s.vals.size());
    A.update(s.vals.data(), std::int64_t(s.rows.size()), s.rows, s.cols);
  }
  A.commit();
  EXPECT_EQ(all_sum(mismatches(A, reference(m, n, count))), 0);
  // Buffered + in-flight data never grew past the cap by more than the one
  // message being formed when it was reached.
  EXPECT_LE(A.stats().peak_buffered, o.buffer_cap + o.coalesce_bytes + largest_packet);
}

// A process with a little data for every part must not hold a whole
// coalescing buffer's capacity per part (P x coalesce_bytes, unseen by
// buffer_cap): the buffers' memory stays within buffer_cap plus the first
// packet of each part.
TEST(ConvergentMatrix, CoalescingBuffersStayWithinBufferCap) {
  process_grid grid(world().mpi_comm());
  const std::int64_t m = 24, n = 24;
  convergent_matrix_options o;
  o.buffer_cap = 4 << 10;
  o.coalesce_bytes = 1 << 20;  // a whole buffer would be 1 MiB per part
  convergent_matrix<float> A(m, n, grid, 2, 2, o);
  // Every element, so every part gets a piece: at most 24 x 24 / P values
  // and 48 indices, under 3 KiB as one packet.
  std::vector<std::int64_t> idx(m);
  for (std::int64_t i = 0; i < m; ++i) idx[std::size_t(i)] = i;
  std::vector<float> v(std::size_t(m * n), float(rank_me() + 1));
  A.update(v.data(), m, idx, idx);
  const std::size_t peak = A.stats().peak_reserved;  // before commit: every buffer still held
  A.commit();
  const float total = float(rank_n() * (rank_n() + 1) / 2);
  std::int64_t wrong = 0;
  for (std::int64_t lj = 0; lj < A.local_cols(); ++lj)
    for (std::int64_t li = 0; li < A.local_rows(); ++li) wrong += A.local()[li + lj * A.lld()] != total;
  EXPECT_EQ(all_sum(wrong), 0);
  const std::size_t packet_slack = 8 + 4 * 48 + 4 * 24 * 24 + 64;  // header, indices, values, message prefix
  EXPECT_LE(peak, o.buffer_cap + std::size_t(rank_n()) * packet_slack);
  // Remote parts (other nodes, or ACCRETE_NODE_SIZE=1) went through the
  // buffers, so the bound above was measured, not vacuous.
  if (A.stats().messages_sent > 0) {
    EXPECT_GT(peak, 0u);
  }
}

TEST(ConvergentMatrix, SaveLoadAndScaLAPACK) {
  process_grid grid(world().mpi_comm());
  const std::int64_t m = 50, n = 37;
  convergent_matrix<double> A(m, n, grid, 5, 4);
  const auto ref = reference(m, n, 8);
  for (int k = 0; k < 8; ++k) {
    slice s = make_slice(rank_me(), k, m, n);
    std::vector<double> v(s.vals.begin(), s.vals.end());
    A.update(v.data(), std::int64_t(s.rows.size()), s.rows, s.cols);
  }
  A.commit();
  const std::string path = "cm_test_" + std::to_string(rank_n()) + "_" +
                           (std::getenv("ACCRETE_NODE_SIZE") ? std::getenv("ACCRETE_NODE_SIZE") : "n") + ".bin";
  A.save(path);
  if (rank_me() == 0) {
    std::ifstream f(path, std::ios::binary);
    std::vector<double> file(std::size_t(m * n));
    f.read(reinterpret_cast<char*>(file.data()), std::streamsize(file.size() * sizeof(double)));
    ASSERT_TRUE(f.good());
    EXPECT_EQ(file, ref);
  }
  // Load into a matrix of another block size: same values.
  convergent_matrix<double> B(m, n, grid, 7, 7);
  B.load(path);
  EXPECT_EQ(all_sum(mismatches(B, ref)), 0);
  // A float matrix cannot load a file of doubles.
  convergent_matrix<float> F(m, n, grid, 5, 4);
  EXPECT_ANY_THROW(F.load(path));
  // ScaLAPACK takes the storage as is: max-abs and Frobenius norms.
  auto d = A.descriptor();
  const int one = 1, mi = int(m), ni = int(n);
  std::vector<double> work(std::size_t(std::max<std::int64_t>(A.local_rows(), A.local_cols()) + 1));
  double maxabs = pdlange_("M", &mi, &ni, A.local(), &one, &one, d.data(), work.data());
  double fro = pdlange_("F", &mi, &ni, A.local(), &one, &one, d.data(), work.data());
  double want_max = 0, want_fro = 0;
  for (double x : ref) {
    want_max = std::max(want_max, std::abs(x));
    want_fro += x * x;
  }
  EXPECT_EQ(maxabs, want_max);
  EXPECT_NEAR(fro, std::sqrt(want_fro), 1e-12 * std::sqrt(want_fro));
  barrier();
  if (rank_me() == 0) std::remove(path.c_str());
}

TEST(ConvergentMatrix, BadInputIsRejectedWhole) {
  process_grid grid(world().mpi_comm());
  convergent_matrix<float> A(10, 12, grid, 2, 2);
  const float v[4] = {1, 1, 1, 1};
  const std::int64_t good[2] = {1, 2}, bad_row[2] = {3, 10}, bad_col[2] = {0, -1};
  try {
    A.update(v, 2, bad_row, good);
    FAIL() << "expected out_of_range";
  } catch (const std::out_of_range& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("row index 10"), std::string::npos) << w;
    EXPECT_NE(w.find("position 1"), std::string::npos) << w;
  }
  try {
    A.update(v, 2, good, bad_col);
    FAIL() << "expected out_of_range";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("column index -1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(A.update(v, 1, good, good), std::invalid_argument);   // ld below the row count
  EXPECT_THROW(A.update(v, -2, good, good), std::invalid_argument);  // negative ld
  EXPECT_THROW(A.update(1.0f, 10, 0), std::out_of_range);
  A.commit();
  // Nothing of the rejected updates landed.
  double s = 0;
  for (std::int64_t j = 0; j < A.local_cols(); ++j)
    for (std::int64_t i = 0; i < A.local_rows(); ++i) s += A.local()[i + j * A.lld()];
  EXPECT_EQ(s, 0.0);
  convergent_matrix_options o;
  o.lld = 1;
  // Every process has more than one local row here (Pr <= 2), so all throw,
  // before any collective step of the construction.
  ASSERT_GT(A.local_rows(), 1);
  EXPECT_THROW(convergent_matrix<float>(10, 12, grid, 2, 2, o), std::invalid_argument);
}
