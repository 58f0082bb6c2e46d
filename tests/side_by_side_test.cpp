// Data structures side by side: two convergent_matrix objects (double with
// the default options; complex<double>, reproducible, on a column-ordered
// grid of another shape), a sparse_matrix and a dist_array, alive at once
// and fed from one loop, each process interleaving its updates to the four
// in its own random order, with user RPCs crossing them. The commits follow
// in one order on every process (they are collectives), so packets of one
// structure arrive while another commits. Several rounds: the matrices are
// reopened or reset, the array keeps accumulating. Every local element and
// a few remote ones are checked exactly against a reference every process
// computes from every process's updates (small integer values: every sum
// is exact in any order).
#include <algorithm>
#include <complex>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "accrete/accrete.hpp"
#include "accrete/array/dist_array.hpp"
#include "accrete/matrix/convergent_matrix.hpp"
#include "accrete/sparse/sparse_matrix.hpp"
#include "test_random.hpp"

using namespace accrete;

namespace {

using accrete_tests::pick;
using accrete_tests::rng;
using cplx = std::complex<double>;

// One update: a block of small integers at (rows x cols) of one structure.
struct upd {
  int target = 0;  // 0: A, 1: B, 2: C (sparse), 3: D (array)
  std::vector<std::int64_t> rows, cols;
  std::vector<std::int64_t> re, im;  // column-major values (im: B only)
};

constexpr std::int64_t am = 37, an = 29;  // A
constexpr std::int64_t bm = 23, bn = 31;  // B
constexpr std::int64_t dm = 40, dn = 33;  // D

// Process p's updates in round r, drawn alike by every process.
std::vector<upd> updates_of(int p, int r, std::int64_t cm, std::int64_t cn) {
  rng g(0x51de0000ull + std::uint64_t(p) * 7919 + std::uint64_t(r) * 104729);
  // Which structure each update goes to, and the sparse matrix's shapes,
  // are the same every round (its pattern is frozen after round 0); the
  // values are not, nor the other structures' shapes.
  rng shape(0x5a4e0000ull + std::uint64_t(p) * 7919);
  std::vector<upd> us;
  for (int k = 0; k < 200; ++k) {
    upd u;
    u.target = int(pick(shape, 0, 3));
    std::int64_t m = am, n = an;
    if (u.target == 1) m = bm, n = bn;
    if (u.target == 2) m = cm, n = cn;
    if (u.target == 3) m = dm, n = dn;
    rng& sg = u.target == 2 ? shape : g;
    if (u.target == 3) {
      // A patch: rows and columns contiguous.
      const std::int64_t r0 = pick(g, 0, m - 1), c0 = pick(g, 0, n - 1);
      const std::int64_t nr = pick(g, 1, std::min<std::int64_t>(9, m - r0)),
                         nc = pick(g, 1, std::min<std::int64_t>(9, n - c0));
      for (std::int64_t i = 0; i < nr; ++i) u.rows.push_back(r0 + i);
      for (std::int64_t j = 0; j < nc; ++j) u.cols.push_back(c0 + j);
    } else {
      const std::int64_t nr = pick(sg, 1, 7), nc = pick(sg, 1, 7);
      for (std::int64_t i = 0; i < nr; ++i) u.rows.push_back(pick(sg, 0, m - 1));  // repeats allowed
      for (std::int64_t j = 0; j < nc; ++j) u.cols.push_back(pick(sg, 0, n - 1));
    }
    for (std::size_t e = 0; e < u.rows.size() * u.cols.size(); ++e) {
      u.re.push_back(pick(g, -50, 50));
      u.im.push_back(u.target == 1 ? pick(g, -50, 50) : 0);
    }
    us.push_back(std::move(u));
  }
  return us;
}

struct reference {
  std::int64_t m, n;
  std::vector<std::int64_t> re, im;
  reference(std::int64_t m_, std::int64_t n_) : m(m_), n(n_), re(std::size_t(m * n)), im(std::size_t(m * n)) {}
  void clear() {
    std::fill(re.begin(), re.end(), 0);
    std::fill(im.begin(), im.end(), 0);
  }
  void add(const upd& u) {
    for (std::size_t j = 0; j < u.cols.size(); ++j)
      for (std::size_t i = 0; i < u.rows.size(); ++i) {
        const std::size_t e = std::size_t(u.rows[i] + u.cols[j] * m), s = i + j * u.rows.size();
        re[e] += u.re[s];
        im[e] += u.im[s];
      }
  }
  double real(std::int64_t i, std::int64_t j) const { return double(re[std::size_t(i + j * m)]); }
  cplx complex(std::int64_t i, std::int64_t j) const {
    return {double(re[std::size_t(i + j * m)]), double(im[std::size_t(i + j * m)])};
  }
};

// User RPCs in flight beside the structures' traffic, checked on arrival.
int rpc_wrong = 0;

}  // namespace

TEST(SideBySide, FourStructuresFedFromOneLoop) {
  const int me = rank_me(), P = rank_n();
  // A on the default grid; B on a column-ordered grid of another shape
  // (P x 1 where the default is squarer).
  process_grid ga(world().mpi_comm());
  process_grid gb(world().mpi_comm(), P, 1, grid_order::col_major);
  convergent_matrix<double> A(am, an, ga, 4, 3);
  convergent_matrix_options bo;
  bo.reproducible = true;
  convergent_matrix<cplx> B(bm, bn, gb, 5, 2, bo);
  // C: rows in uneven ranges, rank 1's empty; columns likewise.
  std::vector<std::int64_t> crows(static_cast<std::size_t>(P)), ccols(static_cast<std::size_t>(P));
  for (int p = 0; p < P; ++p) {
    crows[std::size_t(p)] = p == 1 ? 0 : 3 + (p * 5) % 7;
    ccols[std::size_t(p)] = 2 + (p * 3) % 5;
  }
  std::int64_t cm = 0, cn = 0, cfirst = 0;
  for (int p = 0; p < P; ++p) {
    if (p == me) cfirst = cm;
    cm += crows[std::size_t(p)];
    cn += ccols[std::size_t(p)];
  }
  sparse_matrix<double> C(crows[std::size_t(me)], ccols[std::size_t(me)]);
  dist_array<double> D(dm, dn);
  D.zero();
  D.sync();

  reference ra(am, an), rb(bm, bn), rc(cm, cn), rd(dm, dn);
  rng mine(0xabcdull + std::uint64_t(me));
  constexpr int rounds = 6;
  for (int r = 0; r < rounds; ++r) {
    const bool reset = r == 2;  // round 2 starts the matrices from zero; the others reopen
    if (r > 0) {
      if (reset) {
        A.reset();
        B.reset();
        C.reset();
        ra.clear();
        rb.clear();
        rc.clear();
      } else {
        A.reopen();
        B.reopen();
        C.reopen();
      }
    }
    // This process's updates in its own order, RPCs among them.
    std::vector<upd> us = updates_of(me, r, cm, cn);
    std::shuffle(us.begin(), us.end(), mine);
    std::vector<future<>> pending;
    std::vector<cplx> cbuf;
    std::vector<double> dbuf;
    for (const upd& u : us) {
      dbuf.assign(u.re.begin(), u.re.end());
      const std::int64_t ld = std::int64_t(u.rows.size());
      switch (u.target) {
        case 0:
          A.update(dbuf.data(), ld, u.rows, u.cols);
          break;
        case 1:
          cbuf.clear();
          for (std::size_t e = 0; e < u.re.size(); ++e) cbuf.push_back({double(u.re[e]), double(u.im[e])});
          B.update(cbuf.data(), ld, u.rows, u.cols);
          break;
        case 2:
          C.update(dbuf.data(), ld, u.rows, u.cols);
          break;
        default: {
          const patch p{u.rows.front(), u.rows.back() + 1, u.cols.front(), u.cols.back() + 1};
          D.acc(p, dbuf.data(), ld).wait();  // the buffer is reused at once
          break;
        }
      }
      if (mine() % 5 == 0) {
        const int to = int(mine() % std::uint64_t(P));
        pending.push_back(rpc(
                              to, [](int x) { return x + 1000 * rank_me(); }, me)
                              .then([to, me](int v) {
                                if (v != me + 1000 * to) ++rpc_wrong;
                              }));
      }
    }
    for (auto& f : pending) f.wait();
    // One order on every process: A, C, B, then the array.
    A.commit();
    C.commit();
    B.commit();
    D.sync();
    for (int p = 0; p < P; ++p)
      for (const upd& u : updates_of(p, r, cm, cn))
        (u.target == 0 ? ra : u.target == 1 ? rb : u.target == 2 ? rc : rd).add(u);
    EXPECT_EQ(rpc_wrong, 0);

    std::int64_t bad = 0;
    for (std::int64_t lj = 0; lj < A.local_cols(); ++lj)
      for (std::int64_t li = 0; li < A.local_rows(); ++li)
        bad += A.local()[li + lj * A.lld()] != ra.real(A.global_row(li), A.global_col(lj));
    EXPECT_EQ(bad, 0) << "round " << r << ": A's local part";
    bad = 0;
    for (std::int64_t lj = 0; lj < B.local_cols(); ++lj)
      for (std::int64_t li = 0; li < B.local_rows(); ++li)
        bad += B.local()[li + lj * B.lld()] != rb.complex(B.global_row(li), B.global_col(lj));
    EXPECT_EQ(bad, 0) << "round " << r << ": B's local part";
    bad = 0;
    for (std::int64_t i = C.row_begin(); i < C.row_end(); ++i)
      for (std::int64_t j = 0; j < cn; ++j) bad += C.get(i, j) != rc.real(i, j);
    EXPECT_EQ(bad, 0) << "round " << r << ": C's rows";
    if (C.row_end() > C.row_begin()) {
      EXPECT_GT(C.local_nnz(), 0) << "round " << r;
    }
    EXPECT_EQ(C.row_begin(), cfirst);
    bad = 0;
    const double* d = D.access();
    for (std::int64_t lj = 0; lj < D.local_cols(); ++lj)
      for (std::int64_t li = 0; li < D.local_rows(); ++li)
        bad += d[li + lj * D.lld()] != rd.real(D.global_row(li), D.global_col(lj));
    D.release();
    EXPECT_EQ(bad, 0) << "round " << r << ": D's local part";
    // A few elements of the others' parts.
    for (int q = 0; q < 8; ++q) {
      const std::int64_t i = pick(mine, 0, am - 1), j = pick(mine, 0, an - 1);
      EXPECT_EQ(A.get(i, j), ra.real(i, j)) << "round " << r << ": A(" << i << ", " << j << ")";
      const std::int64_t k = pick(mine, 0, bm - 1), l = pick(mine, 0, bn - 1);
      EXPECT_EQ(B.get(k, l), rb.complex(k, l)) << "round " << r << ": B(" << k << ", " << l << ")";
    }
    barrier();  // every get done before anyone reopens
  }
}
