// Tests of the matrix layout layer: process_grid, block_cyclic, ScaLAPACK
// descriptors (checked against the real library) and raw MPI-IO files.
#include <accrete/matrix/block_cyclic.hpp>
#include <accrete/matrix/mpiio.hpp>
#include <accrete/matrix/process_grid.hpp>
#include <accrete/matrix/scalapack.hpp>

#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace {

using accrete::block_cyclic;
using accrete::grid_order;
using accrete::process_grid;

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int s = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

// GoogleTest failures are per process; fold them so every rank reports a
// failure that happened on any rank (otherwise mpiexec's exit status depends
// on which rank failed).
class MatrixLayout : public ::testing::Test {
 protected:
  void TearDown() override {
    const int here = HasFailure() ? 1 : 0;
    int anywhere = 0;
    MPI_Allreduce(&here, &anywhere, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (anywhere && !here) ADD_FAILURE() << "a check failed on another rank";
  }
};

double value_at(std::int64_t i, std::int64_t j) { return static_cast<double>(i + 1000 * j); }

// Fills this process's piece (column-major, leading dimension lld) with
// value_at(global i, global j); padding rows get a sentinel so stray writes
// into them are noticed.
template <class T>
std::vector<T> make_local(const block_cyclic& l, const process_grid& g, std::int64_t lld) {
  const std::int64_t lr = l.local_rows(g.my_row()), lc = l.local_cols(g.my_col());
  std::vector<T> a(static_cast<std::size_t>(std::max<std::int64_t>(1, lld * lc)), T(-7));
  for (std::int64_t lj = 0; lj < lc; ++lj) {
    for (std::int64_t li = 0; li < lr; ++li) {
      a[static_cast<std::size_t>(li + lj * lld)] =
          static_cast<T>(value_at(l.global_row(g.my_row(), li), l.global_col(g.my_col(), lj)));
    }
  }
  return a;
}

// Counts entries that differ from value_at, and padding that was touched.
template <class T>
int count_bad(const std::vector<T>& a, const block_cyclic& l, const process_grid& g, std::int64_t lld, T pad = T(-7)) {
  const std::int64_t lr = l.local_rows(g.my_row()), lc = l.local_cols(g.my_col());
  int bad = 0;
  for (std::int64_t lj = 0; lj < lc; ++lj) {
    for (std::int64_t li = 0; li < lld; ++li) {
      const T got = a[static_cast<std::size_t>(li + lj * lld)];
      const T want =
          li < lr ? static_cast<T>(value_at(l.global_row(g.my_row(), li), l.global_col(g.my_col(), lj))) : pad;
      if (got != want) ++bad;
    }
  }
  return bad;
}

// Every factorisation pr x pc of the world size, in both orders.
std::vector<process_grid> all_grids() {
  std::vector<process_grid> grids;
  const int p = world_size();
  for (int pr = 1; pr <= p; ++pr) {
    if (p % pr != 0) continue;
    grids.emplace_back(MPI_COMM_WORLD, pr, p / pr, grid_order::row_major);
    grids.emplace_back(MPI_COMM_WORLD, pr, p / pr, grid_order::col_major);
  }
  return grids;
}

// A scratch file name all ranks agree on (rank 0 picks it); rank 0 deletes
// the file when the guard dies, also when a test throws.
struct shared_temp_file {
  std::string path;
  explicit shared_temp_file(const std::string& tag) {
    long long pid = world_rank() == 0 ? static_cast<long long>(::getpid()) : 0;
    MPI_Bcast(&pid, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    path =
        (std::filesystem::temp_directory_path() / ("accrete_mlt_" + std::to_string(pid) + "_" + tag + ".bin")).string();
  }
  shared_temp_file(const shared_temp_file&) = delete;
  shared_temp_file& operator=(const shared_temp_file&) = delete;
  ~shared_temp_file() {
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank() == 0) std::remove(path.c_str());
  }
};

// ---------------------------------------------------------------------------

TEST_F(MatrixLayout, NumrocMatchesScalapack) {
  for (int n = 0; n <= 45; ++n) {
    for (int nb = 1; nb <= 9; ++nb) {
      for (int np = 1; np <= 5; ++np) {
        for (int src = 0; src < np; ++src) {
          std::int64_t total = 0;
          for (int ip = 0; ip < np; ++ip) {
            const int ref = numroc_(&n, &nb, &ip, &src, &np);
            EXPECT_EQ(accrete::numroc(n, nb, ip, src, np), ref)
                << n << " " << nb << " " << ip << " " << src << " " << np;
            total += ref;
          }
          EXPECT_EQ(total, n);
        }
      }
    }
  }
  // Large values, still within ScaLAPACK's int range.
  for (int n : {1000000007, 2147483647}) {
    for (int nb : {1, 64, 1000}) {
      for (int np = 1; np <= 7; np += 3) {
        for (int ip = 0; ip < np; ++ip) {
          int src = np - 1;
          EXPECT_EQ(accrete::numroc(n, nb, ip, src, np), numroc_(&n, &nb, &ip, &src, &np));
        }
      }
    }
  }
  // And the 64-bit range ScaLAPACK cannot express: block counts must add up.
  const std::int64_t big = 5'000'000'000'123LL;
  std::int64_t sum = 0;
  for (int ip = 0; ip < 3; ++ip) sum += accrete::numroc(big, 64, ip, 1, 3);
  EXPECT_EQ(sum, big);
}

// Checks one dimension of a layout exhaustively in both directions.
void check_dimension(std::int64_t extent, int nprocs, const std::function<int(std::int64_t)>& owner,
                     const std::function<std::int64_t(std::int64_t)>& to_local,
                     const std::function<std::int64_t(int, std::int64_t)>& to_global,
                     const std::function<std::int64_t(int)>& count, const std::string& what) {
  std::vector<std::int64_t> next_local(static_cast<std::size_t>(nprocs), 0);
  for (std::int64_t g = 0; g < extent; ++g) {
    const int p = owner(g);
    ASSERT_GE(p, 0) << what;
    ASSERT_LT(p, nprocs) << what;
    const std::int64_t l = to_local(g);
    // Local storage keeps global order, densely.
    EXPECT_EQ(l, next_local[static_cast<std::size_t>(p)]) << what << " global " << g;
    next_local[static_cast<std::size_t>(p)] = l + 1;
    EXPECT_EQ(to_global(p, l), g) << what << " global " << g;
  }
  std::int64_t total = 0;
  for (int p = 0; p < nprocs; ++p) {
    EXPECT_EQ(count(p), next_local[static_cast<std::size_t>(p)]) << what << " proc " << p;
    for (std::int64_t l = 0; l < count(p); ++l) {
      const std::int64_t g = to_global(p, l);
      EXPECT_EQ(owner(g), p) << what;
      EXPECT_EQ(to_local(g), l) << what;
    }
    total += count(p);
  }
  EXPECT_EQ(total, extent) << what;
}

TEST_F(MatrixLayout, BlockCyclicRoundTripAllIndices) {
  const int p = world_size();
  const std::vector<std::pair<int, int>> grids = {{1, p}, {p, 1}, {2, 2}, {2, 3}, {3, 2}, {1, 1}, {4, 1}};
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {{0, 5}, {1, 1}, {7, 5}, {100, 37}, {130, 129}};
  for (auto [pr, pc] : grids) {
    for (auto [m, n] : shapes) {
      for (std::int64_t mb : {1, 3, 64}) {
        for (std::int64_t nb : {1, 3, 64}) {
          for (int src : {0, 1}) {
            const int rsrc = src % pr, csrc = (pc - 1) * src;
            const block_cyclic l(m, n, mb, nb, pr, pc, rsrc, csrc);
            const std::string what = std::to_string(m) + "x" + std::to_string(n) + " blocks " + std::to_string(mb) +
                                     "x" + std::to_string(nb) + " grid " + std::to_string(pr) + "x" +
                                     std::to_string(pc) + " src " + std::to_string(rsrc) + "," + std::to_string(csrc);
            check_dimension(
                m, pr, [&](std::int64_t i) { return l.owner_row(i); }, [&](std::int64_t i) { return l.local_row(i); },
                [&](int q, std::int64_t li) { return l.global_row(q, li); }, [&](int q) { return l.local_rows(q); },
                what + " rows");
            check_dimension(
                n, pc, [&](std::int64_t j) { return l.owner_col(j); }, [&](std::int64_t j) { return l.local_col(j); },
                [&](int q, std::int64_t lj) { return l.global_col(q, lj); }, [&](int q) { return l.local_cols(q); },
                what + " cols");
          }
        }
      }
    }
  }
  // Element-cyclic: mb = nb = 1 deals single rows round-robin.
  const block_cyclic e(10, 10, 1, 1, 3, 2);
  for (std::int64_t i = 0; i < 10; ++i) {
    EXPECT_EQ(e.owner_row(i), i % 3);
    EXPECT_EQ(e.local_row(i), i / 3);
    EXPECT_EQ(e.owner_col(i), i % 2);
  }
}

template <class F>
void expect_message(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const std::exception& ex) {
    const std::string msg = ex.what();
    for (const auto& part : parts) EXPECT_NE(msg.find(part), std::string::npos) << "'" << part << "' not in: " << msg;
  }
}

TEST_F(MatrixLayout, BlockCyclicValidation) {
  const block_cyclic l(10, 20, 3, 4, 2, 3, 1, 2);
  EXPECT_THROW(l.owner_row(-1), std::out_of_range);
  EXPECT_THROW(l.owner_row(10), std::out_of_range);
  EXPECT_THROW(l.local_col(20), std::out_of_range);
  EXPECT_THROW(l.local_rows(2), std::out_of_range);
  EXPECT_THROW(l.local_cols(-1), std::out_of_range);
  EXPECT_THROW(l.global_row(0, l.local_rows(0)), std::out_of_range);
  EXPECT_THROW(l.global_col(3, 0), std::out_of_range);
  expect_message([&] { (void)l.owner_row(12); }, {"12", "10"});
  expect_message([&] { (void)l.local_col(25); }, {"25", "20"});
  EXPECT_THROW(block_cyclic(-1, 1, 1, 1, 1, 1), std::invalid_argument);
  EXPECT_THROW(block_cyclic(1, 1, 0, 1, 1, 1), std::invalid_argument);
  EXPECT_THROW(block_cyclic(1, 1, 1, 1, 0, 1), std::invalid_argument);
  EXPECT_THROW(block_cyclic(1, 1, 1, 1, 2, 2, 2, 0), std::invalid_argument);
  EXPECT_THROW(block_cyclic(1, 1, 1, 1, 2, 2, 0, -1), std::invalid_argument);
}

TEST_F(MatrixLayout, ProcessGridShapeAndCoordinates) {
  const int p = world_size(), me = world_rank();
  const process_grid def(MPI_COMM_WORLD);
  EXPECT_EQ(def.rows() * def.cols(), p);
  EXPECT_LE(def.rows(), def.cols());
  EXPECT_EQ(def.order(), grid_order::row_major);
  for (int r = def.rows() + 1; r * r <= p; ++r) EXPECT_NE(p % r, 0) << "a larger divisor exists";
  if (p == 4) {
    EXPECT_EQ(def.rows(), 2);
  } else if (p <= 3) {
    EXPECT_EQ(def.rows(), 1);
  }
  EXPECT_EQ(def.comm(), MPI_COMM_WORLD);

  for (const auto& g : all_grids()) {
    EXPECT_EQ(g.rank_of(g.my_row(), g.my_col()), me);
    EXPECT_EQ(g.coords_of(me), (accrete::grid_coords{g.my_row(), g.my_col()}));
    std::vector<int> seen(static_cast<std::size_t>(p), 0);
    for (int r = 0; r < g.rows(); ++r) {
      for (int c = 0; c < g.cols(); ++c) {
        const int rank = g.rank_of(r, c);
        ++seen[static_cast<std::size_t>(rank)];
        EXPECT_EQ(g.coords_of(rank), (accrete::grid_coords{r, c}));
        EXPECT_EQ(rank, g.order() == grid_order::row_major ? r * g.cols() + c : c * g.rows() + r);
      }
    }
    for (int s : seen) EXPECT_EQ(s, 1);
    EXPECT_THROW(g.rank_of(g.rows(), 0), std::out_of_range);
    EXPECT_THROW(g.coords_of(p), std::out_of_range);
  }
  expect_message([&] { process_grid bad(MPI_COMM_WORLD, p + 1, 1); },
                 {std::to_string(p + 1), "pc (1)", "size (" + std::to_string(p) + ")"});
  EXPECT_THROW(process_grid(MPI_COMM_WORLD, 0, p), std::invalid_argument);
}

TEST_F(MatrixLayout, BlacsContextMatchesGrid) {
  for (const auto& g : all_grids()) {
    const int ctx = g.blacs_context();
    int nprow = -1, npcol = -1, myrow = -1, mycol = -1;
    Cblacs_gridinfo(ctx, &nprow, &npcol, &myrow, &mycol);
    EXPECT_EQ(nprow, g.rows());
    EXPECT_EQ(npcol, g.cols());
    EXPECT_EQ(myrow, g.my_row());
    EXPECT_EQ(mycol, g.my_col());
    const process_grid copy = g;  // copies share one context
    EXPECT_EQ(copy.blacs_context(), ctx);
  }
  // Contexts are freed with the grids; a fresh grid must still work.
  const process_grid again(MPI_COMM_WORLD);
  int nprow = -1, npcol = -1, myrow = -1, mycol = -1;
  Cblacs_gridinfo(again.blacs_context(), &nprow, &npcol, &myrow, &mycol);
  EXPECT_EQ(myrow, again.my_row());
  EXPECT_EQ(mycol, again.my_col());
}

TEST_F(MatrixLayout, DescriptorFieldsAndValidation) {
  const process_grid g(MPI_COMM_WORLD);
  const block_cyclic l(50, 40, 4, 3, g.rows(), g.cols(), 0, g.cols() - 1);
  const std::int64_t lr = l.local_rows(g.my_row());
  const auto d = accrete::descriptor(l, g, lr + 5);
  // Compare with ScaLAPACK's own DESCINIT.
  int ref[9], info = -1;
  const int m = 50, n = 40, mb = 4, nb = 3, rs = 0, cs = g.cols() - 1, ctx = g.blacs_context(),
            lld = static_cast<int>(lr + 5);
  descinit_(ref, &m, &n, &mb, &nb, &rs, &cs, &ctx, &lld, &info);
  EXPECT_EQ(info, 0);
  for (int k = 0; k < 9; ++k) EXPECT_EQ(d[static_cast<std::size_t>(k)], ref[k]) << "field " << k;

  expect_message([&] { (void)accrete::descriptor(l, g, std::max<std::int64_t>(1, lr) - 1); }, {"lld"});
  const block_cyclic wrong(50, 40, 4, 3, g.rows() + 1, g.cols());
  EXPECT_THROW((void)accrete::descriptor(wrong, g, 100), std::invalid_argument);
  const block_cyclic huge(3'000'000'000LL, 1, 1, 1, g.rows(), g.cols());
  expect_message([&] { (void)accrete::descriptor(huge, g, 3'000'000'000LL); }, {"3000000000"});
}

struct redist_case {
  std::int64_t m, n, mb_a, nb_a, mb_b, nb_b;
  int src_b;
};

TEST_F(MatrixLayout, ScalapackRedistributeAndNorm) {
  const int p = world_size();
  const process_grid ga(MPI_COMM_WORLD);
  // A different grid (shape and order) on the same processes.
  const process_grid gb(MPI_COMM_WORLD, p == 4 ? 2 : p, p == 4 ? 2 : 1, grid_order::col_major);
  const std::vector<redist_case> cases = {
      {37, 23, 3, 2, 5, 7, 0}, {37, 23, 1, 1, 64, 64, 1}, {64, 64, 64, 64, 1, 1, 1}, {5, 130, 2, 3, 3, 1, 0}};
  for (const auto& c : cases) {
    const block_cyclic la(c.m, c.n, c.mb_a, c.nb_a, ga.rows(), ga.cols());
    const block_cyclic lb(c.m, c.n, c.mb_b, c.nb_b, gb.rows(), gb.cols(), c.src_b % gb.rows(), c.src_b % gb.cols());
    const std::int64_t lda = std::max<std::int64_t>(1, la.local_rows(ga.my_row())) + 2;
    const std::int64_t ldb = std::max<std::int64_t>(1, lb.local_rows(gb.my_row())) + 1;
    const auto desca = accrete::descriptor(la, ga, lda);
    const auto descb = accrete::descriptor(lb, gb, ldb);
    const int m = static_cast<int>(c.m), n = static_cast<int>(c.n), one = 1, ctx = ga.blacs_context();

    auto a = make_local<double>(la, ga, lda);
    std::vector<double> b(static_cast<std::size_t>(std::max<std::int64_t>(1, ldb * lb.local_cols(gb.my_col()))), -7.0);
    pdgemr2d_(&m, &n, a.data(), &one, &one, desca.data(), b.data(), &one, &one, descb.data(), &ctx);
    EXPECT_EQ(count_bad(b, lb, gb, ldb), 0) << c.m << "x" << c.n;

    // Float path as well; the values are integers below 2^24, so exact.
    auto af = make_local<float>(la, ga, lda);
    std::vector<float> bf(b.size(), -7.0f);
    psgemr2d_(&m, &n, af.data(), &one, &one, desca.data(), bf.data(), &one, &one, descb.data(), &ctx);
    EXPECT_EQ(count_bad(bf, lb, gb, ldb), 0) << c.m << "x" << c.n;

    double frob = 0.0;
    for (std::int64_t j = 0; j < c.n; ++j)
      for (std::int64_t i = 0; i < c.m; ++i) frob += value_at(i, j) * value_at(i, j);
    frob = std::sqrt(frob);
    std::vector<double> work(static_cast<std::size_t>(c.m + c.n + 64));
    const double maxa = pdlange_("M", &m, &n, a.data(), &one, &one, desca.data(), work.data());
    const double fa = pdlange_("F", &m, &n, a.data(), &one, &one, desca.data(), work.data());
    const double fb = pdlange_("F", &m, &n, b.data(), &one, &one, descb.data(), work.data());
    EXPECT_EQ(maxa, value_at(c.m - 1, c.n - 1));
    EXPECT_NEAR(fa, frob, 1e-12 * frob);
    EXPECT_NEAR(fb, frob, 1e-12 * frob);
    std::vector<float> workf(work.size());
    EXPECT_EQ(pslange_("M", &m, &n, bf.data(), &one, &one, descb.data(), workf.data()),
              static_cast<float>(value_at(c.m - 1, c.n - 1)));
  }
}

TEST_F(MatrixLayout, ScalapackSolveWithDescriptor) {
  // A = (n+1) I + ones is SPD; with x_i = i + 1, b_i = n * x_i + sum(x).
  const process_grid g(MPI_COMM_WORLD);
  const std::int64_t n = 41, nb = 4;
  const block_cyclic la(n, n, nb, nb, g.rows(), g.cols());
  const block_cyclic lb(n, 1, nb, nb, g.rows(), g.cols());
  const std::int64_t lr = la.local_rows(g.my_row()), lc = la.local_cols(g.my_col());
  const std::int64_t ld = std::max<std::int64_t>(1, lr);
  std::vector<double> a(static_cast<std::size_t>(std::max<std::int64_t>(1, ld * lc)));
  for (std::int64_t lj = 0; lj < lc; ++lj)
    for (std::int64_t li = 0; li < lr; ++li)
      a[static_cast<std::size_t>(li + lj * ld)] =
          la.global_row(g.my_row(), li) == la.global_col(g.my_col(), lj) ? double(n + 1) : 1.0;
  const double sum_x = double(n * (n + 1) / 2);
  std::vector<double> b(static_cast<std::size_t>(ld), 0.0);
  if (lb.local_cols(g.my_col()) > 0)
    for (std::int64_t li = 0; li < lr; ++li)
      b[static_cast<std::size_t>(li)] = double(n) * double(la.global_row(g.my_row(), li) + 1) + sum_x;
  const auto desca = accrete::descriptor(la, g, ld);
  const auto descb = accrete::descriptor(lb, g, ld);
  const int in = static_cast<int>(n), one = 1;
  int info = -1;
  pdposv_("L", &in, &one, a.data(), &one, &one, desca.data(), b.data(), &one, &one, descb.data(), &info);
  EXPECT_EQ(info, 0);
  if (lb.local_cols(g.my_col()) > 0) {
    for (std::int64_t li = 0; li < lr; ++li) {
      EXPECT_NEAR(b[static_cast<std::size_t>(li)], double(la.global_row(g.my_row(), li) + 1), 1e-10);
    }
  }
}

// Rank 0 checks the file byte for byte against the column-major matrix.
template <class T>
void expect_raw_file(const std::string& path, std::int64_t m, std::int64_t n) {
  if (world_rank() != 0) return;
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in.good()) << path;
  std::vector<T> all(static_cast<std::size_t>(m * n));
  in.read(reinterpret_cast<char*>(all.data()), static_cast<std::streamsize>(all.size() * sizeof(T)));
  EXPECT_EQ(in.gcount(), static_cast<std::streamsize>(all.size() * sizeof(T)));
  EXPECT_EQ(std::filesystem::file_size(path), static_cast<std::uintmax_t>(m * n) * sizeof(T));
  int bad = 0;
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i)
      if (all[static_cast<std::size_t>(i + j * m)] != static_cast<T>(value_at(i, j))) ++bad;
  EXPECT_EQ(bad, 0) << path;
}

struct io_case {
  std::int64_t m, n, mb_w, nb_w, mb_r, nb_r;
  int src;
};

// Every grid (each with a transposed reader grid) meets `per_grid` of the
// cases, rotating so that all cases are covered; all of them would be slow
// under oversubscribed MPICH, where each collective open costs ~0.1 s.
template <class T>
void io_round_trip(const std::string& tag, std::size_t per_grid) {
  const shared_temp_file tmp(tag);
  const std::string& path = tmp.path;
  const std::vector<io_case> cases = {
      {37, 23, 3, 2, 5, 7, 0}, {10, 9, 1, 1, 64, 64, 1}, {64, 3, 64, 64, 2, 1, 1}, {1, 77, 4, 5, 1, 3, 0}};
  const int p = world_size();
  const auto grids = all_grids();
  for (std::size_t k = 0; k < grids.size(); ++k) {
    const process_grid& wg = grids[k];
    // Read back on a grid of another shape/order to prove independence.
    const process_grid rg(MPI_COMM_WORLD, wg.cols(), wg.rows(),
                          wg.order() == grid_order::row_major ? grid_order::col_major : grid_order::row_major);
    for (std::size_t t = 0; t < per_grid; ++t) {
      const io_case& c = cases[(k * per_grid + t) % cases.size()];
      const block_cyclic lw(c.m, c.n, c.mb_w, c.nb_w, wg.rows(), wg.cols(), c.src % wg.rows(), c.src % wg.cols());
      const block_cyclic lr(c.m, c.n, c.mb_r, c.nb_r, rg.rows(), rg.cols(), (c.src + 1) % rg.rows(), 0);
      const std::int64_t ldw = std::max<std::int64_t>(1, lw.local_rows(wg.my_row())) + (c.src ? 3 : 0);
      const std::int64_t ldr = std::max<std::int64_t>(1, lr.local_rows(rg.my_row())) + 2;
      const auto a = make_local<T>(lw, wg, ldw);
      accrete::write_matrix(path, lw, wg, a.data(), ldw);
      expect_raw_file<T>(path, c.m, c.n);
      std::vector<T> b(static_cast<std::size_t>(std::max<std::int64_t>(1, ldr * lr.local_cols(rg.my_col()))), T(-7));
      accrete::read_matrix(path, lr, rg, b.data(), ldr);
      EXPECT_EQ(count_bad(b, lr, rg, ldr), 0) << c.m << "x" << c.n << " on " << p << " ranks";
    }
  }
}

TEST_F(MatrixLayout, MpiioRoundTripDouble) { io_round_trip<double>("d", 2); }
TEST_F(MatrixLayout, MpiioRoundTripFloat) { io_round_trip<float>("f", 1); }

TEST_F(MatrixLayout, MpiioOverwriteTruncates) {
  const process_grid g(MPI_COMM_WORLD);
  const shared_temp_file tmp("trunc");
  const std::string& path = tmp.path;
  const block_cyclic big(50, 50, 8, 8, g.rows(), g.cols()), small(6, 5, 2, 2, g.rows(), g.cols());
  const auto a = make_local<double>(big, g, std::max<std::int64_t>(1, big.local_rows(g.my_row())));
  accrete::write_matrix(path, big, g, a.data(), std::max<std::int64_t>(1, big.local_rows(g.my_row())));
  const auto s = make_local<double>(small, g, std::max<std::int64_t>(1, small.local_rows(g.my_row())));
  accrete::write_matrix(path, small, g, s.data(),
                        std::max<std::int64_t>(1, small.local_rows(g.my_row())));
  expect_raw_file<double>(path, 6, 5);
}

TEST_F(MatrixLayout, MpiioWrongSizeThrows) {
  const process_grid g(MPI_COMM_WORLD);
  const shared_temp_file tmp("wrong");
  const std::string& path = tmp.path;
  const block_cyclic l(12, 7, 2, 3, g.rows(), g.cols());
  const std::int64_t ld = std::max<std::int64_t>(1, l.local_rows(g.my_row()));
  const auto a = make_local<double>(l, g, ld);
  accrete::write_matrix(path, l, g, a.data(), ld);

  // Same dimensions, wrong element type: 672 bytes on disk, 336 expected.
  std::vector<float> f(a.size());
  expect_message([&] { accrete::read_matrix(path, l, g, f.data(), ld); }, {"672", "336"});
  EXPECT_THROW(accrete::read_matrix(path, l, g, f.data(), ld), std::runtime_error);
  // Right type, wrong dimensions.
  const block_cyclic l2(12, 8, 2, 3, g.rows(), g.cols());
  const std::int64_t ld2 = std::max<std::int64_t>(1, l2.local_rows(g.my_row()));
  std::vector<double> d(static_cast<std::size_t>(ld2 * std::max<std::int64_t>(1, l2.local_cols(g.my_col()))));
  EXPECT_THROW(accrete::read_matrix(path, l2, g, d.data(), ld2), std::runtime_error);
  // A bad lld on one rank must make every rank throw rather than hang.
  std::vector<double> r(a.size());
  EXPECT_THROW(accrete::read_matrix(path, l, g, r.data(), world_rank() == 0 ? 0 : ld),
               std::invalid_argument);
  // Missing file.
  EXPECT_THROW(accrete::read_matrix(path + ".missing", l, g, r.data(), ld), std::runtime_error);
}

}  // namespace

#ifndef ACCRETE_SHARED_TEST_MAIN
namespace {
// Non-zero ranks print only their failures, tagged with the rank.
class rank_failure_printer : public ::testing::EmptyTestEventListener {
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed()) {
      std::fprintf(stderr, "[rank %d] %s:%d: %s\n", world_rank(), r.file_name() ? r.file_name() : "?", r.line_number(),
                   r.summary());
    }
  }
};
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  if (world_rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new rank_failure_printer);
  }
  const int rc = RUN_ALL_TESTS();
  MPI_Finalize();
  return rc;
}
#endif
