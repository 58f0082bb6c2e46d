// Features where they combine: many random configurations of
// convergent_matrix (element type, shape, blocks, grid shape and order,
// strategy, buffer and coalescing sizes, leading dimension, reproducible
// sums, whole-update atomicity, merges, threads, rounds carried over by
// reopen or cleared by reset), of dist_array (distribution, empty parts,
// element type, put/get/acc/scatter/gather with either layout and padded
// leading dimensions) and of sparse_matrix (row and column ranges with
// empty parts, frozen or growing pattern, slot cache on or off, later
// rounds in another order, layout or subset of the first's updates,
// strategy, buffers, merges, reproducible sums, threads, rounds carried
// over or reset), each checked element by element against a serial
// reference that every process computes from every process's updates.
// Values are chosen so that the reference is exact: small integers where
// the order of additions is free, and for reproducible sums the exact sum
// (in 128-bit integers) rounded once. Run in every layout: one node, every
// process its own node, and several processes on each of several nodes.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
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
using i128 = __int128;
template <class V>
V pick_of(rng& g, std::initializer_list<V> vs) {
  return *(vs.begin() + pick(g, 0, std::int64_t(vs.size()) - 1));
}

template <class T>
constexpr bool is_complex = false;
template <class R>
constexpr bool is_complex<std::complex<R>> = true;
// The real type under a floating-point element type.
template <class T>
struct real_of {
  using type = decltype(std::real(T{}));
};
template <class T>
constexpr int parts_of = is_complex<T> ? 2 : 1;

template <class T>
typename real_of<T>::type component(const T& v, int c) {
  if constexpr (is_complex<T>)
    return c == 0 ? v.real() : v.imag();
  else
    return v;
}
template <class T, class R>
T make_value(R re, R im) {
  if constexpr (is_complex<T>)
    return T(re, im);
  else
    return T(re);
}

template <class T>
const char* type_name() {
  if constexpr (std::is_same_v<T, float>) return "float";
  if constexpr (std::is_same_v<T, double>) return "double";
  if constexpr (std::is_same_v<T, std::complex<float>>) return "complex<float>";
  if constexpr (std::is_same_v<T, std::complex<double>>) return "complex<double>";
  if constexpr (std::is_same_v<T, std::int32_t>) return "int32";
  return "int64";
}

// Divisors d of p, for grid shapes d x p/d.
std::vector<int> divisors(int p) {
  std::vector<int> d;
  for (int k = 1; k <= p; ++k)
    if (p % k == 0) d.push_back(k);
  return d;
}

// ---- convergent_matrix ------------------------------------------------------------

double plus_merge_d(double a, double b) { return a + b; }
float plus_merge_f(float a, float b) { return a + b; }

enum class kind { sum, repro, max, min, user };

struct cm_case {
  int index = 0;
  std::int64_t m = 0, n = 0, mb = 1, nb = 1;
  int pr = 1;
  grid_order order = grid_order::row_major;
  convergent_matrix_options opt;
  kind k = kind::sum;
  int rounds = 1, updates = 1, threads = 1;
  bool large = false;
  std::vector<bool> reset_before;  // per round after the first: reset (else reopen and carry over)

  std::string describe(const char* type) const {
    std::ostringstream s;
    s << "case " << index << ": " << type << ' ' << m << 'x' << n << " blocks " << mb << 'x' << nb << " grid " << pr
      << 'x' << rank_n() / pr << (order == grid_order::row_major ? " row-major" : " col-major") << " strategy "
      << (opt.strategy == update_strategy::packets ? "packets" : "alltoall") << " buffer_cap " << opt.buffer_cap
      << " coalesce " << opt.coalesce_bytes << " lld " << opt.lld << " merge "
      << (k == kind::sum     ? "sum"
          : k == kind::repro ? "sum (reproducible)"
          : k == kind::max   ? "max"
          : k == kind::min   ? "min"
                             : "user")
      << (opt.atomic_updates ? " atomic_updates" : "") << " rounds " << rounds << " updates " << updates << " threads "
      << threads << (large ? " (large)" : "");
    return s.str();
  }
};

template <class T>
cm_case make_cm_case(int index) {
  rng g(0xc0b1 + std::uint64_t(index) * 7919);
  cm_case c;
  c.index = index;
  // One case in six is large: updates of up to 48 x 48 split into several
  // packets under the smaller caps, and parts of many blocks.
  c.large = pick(g, 0, 5) == 0;
  c.m = c.large ? pick(g, 60, 250) : pick(g, 1, 40);
  c.n = c.large ? pick(g, 60, 250) : pick(g, 1, 40);
  if (pick(g, 0, 3) == 0) c.n = c.m;  // square: update_symmetric too
  c.mb = pick_of<std::int64_t>(g, {1, 2, 3, 5, 8, 64});
  c.nb = pick_of<std::int64_t>(g, {1, 2, 3, 5, 8, 64});
  const auto ds = divisors(rank_n());
  c.pr = ds[std::size_t(pick(g, 0, std::int64_t(ds.size()) - 1))];
  c.order = pick(g, 0, 1) ? grid_order::row_major : grid_order::col_major;
  c.opt.strategy = pick(g, 0, 3) ? update_strategy::packets : update_strategy::alltoall;
  c.opt.buffer_cap = pick_of<std::size_t>(g, {1 << 10, 4 << 10, 64 << 20});
  c.opt.coalesce_bytes = pick_of<std::size_t>(g, {64, 512, 16 << 10});
  c.opt.seed = g();
  const int kinds = is_complex<T> ? 2 : 5;  // max, min and user need an order / a real function
  c.k = kind(pick(g, 0, kinds - 1));
  c.opt.reproducible = c.k == kind::repro;
  c.opt.merge = c.k == kind::max ? merge_op::max : c.k == kind::min ? merge_op::min : merge_op::sum;
  // Whole-update atomicity sends a piece in one packet of at most half the
  // cap, so it is drawn with a cap that holds the largest update here.
  c.opt.atomic_updates = c.k != kind::repro && pick(g, 0, 3) == 0;
  if (c.opt.atomic_updates) c.opt.buffer_cap = std::max<std::size_t>(c.opt.buffer_cap, 128 << 10);
  c.rounds = int(pick(g, 1, 3));
  c.updates = int(pick(g, 1, 24));
  c.threads = pick(g, 0, 4) == 0 ? 2 : 1;
  for (int r = 1; r < c.rounds; ++r) c.reset_before.push_back(pick(g, 0, 1) == 1);
  // lld is each process's own: padded on some processes only.
  rng mine(g() + std::uint64_t(rank_me()));
  c.opt.lld = pick(mine, 0, 1) ? 0 : -1;  // -1: local rows + 3, set once the part's size is known
  return c;
}

enum class upd_kind { block_col, block_row, symmetric, single };

template <class T>
struct cm_update {
  upd_kind how = upd_kind::block_col;
  std::vector<std::int64_t> rows, cols;  // symmetric: rows = cols = ix
  std::int64_t ld = 1;
  std::vector<T> block;  // in its layout with its ld
  T at(std::size_t i, std::size_t j) const {
    return how == upd_kind::block_row ? block[i * std::size_t(ld) + j] : block[i + j * std::size_t(ld)];
  }
};

// A contribution's value in integer units of 2^-scale (exact in T).
template <class R>
struct units {
  // Reproducible sums: values spread over more bits than R holds, so that
  // many partial sums are inexact and take the logged path; the exact sum
  // of every contribution still fits a 128-bit integer.
  static constexpr int scale = std::is_same_v<R, float> ? 20 : 30;
  static R to_real(i128 u) { return std::ldexp(R(u), -scale); }  // one rounding (R(u)), then exact
  static i128 from_real(R v) { return i128(std::ldexp(static_cast<long double>(v), scale)); }
};

template <class T>
T draw_value(rng& g, kind k) {
  using R = typename real_of<T>::type;
  R c[2];
  for (R& x : c) {
    if (k == kind::repro) {
      const int bits = std::is_same_v<R, float> ? 16 : 20, spread = std::is_same_v<R, float> ? 24 : 34;
      const i128 u =
          i128(pick(g, -(std::int64_t(1) << bits), std::int64_t(1) << bits)) * (i128(1) << pick(g, 0, spread));
      x = units<R>::to_real(u);  // exact: at most `bits + 1` significant bits
    } else {
      x = R(pick(g, -64, 64));  // small integers: every order of sums is exact
    }
  }
  return make_value<T>(c[0], c[1]);
}

// An nr x nc block in u's layout, its leading dimension `pad` past the
// minimum, every entry drawn from `values`.
template <class T>
void fill_block(cm_update<T>& u, std::int64_t nr, std::int64_t nc, std::int64_t pad, rng& values, kind k) {
  const bool rowmaj = u.how == upd_kind::block_row;
  u.ld = (rowmaj ? nc : nr) + pad;
  u.block.assign(std::size_t(u.ld * (rowmaj ? nr : nc)), T(0));
  for (std::size_t i = 0; i < std::size_t(nr); ++i)
    for (std::size_t j = 0; j < std::size_t(nc); ++j)
      u.block[rowmaj ? i * std::size_t(u.ld) + j : i + j * std::size_t(u.ld)] = draw_value<T>(values, k);
}

// Process p's updates in round r of case c (every process can make them).
template <class T>
std::vector<cm_update<T>> cm_updates(const cm_case& c, int p, int r) {
  rng g(std::uint64_t(c.index) * 1000003 + std::uint64_t(p) * 7919 + std::uint64_t(r) * 31 + 5);
  std::vector<cm_update<T>> us(std::size_t(c.updates));
  for (auto& u : us) {
    const int w = int(pick(g, 0, 9));
    u.how = w < 4 ? upd_kind::block_col : w < 7 ? upd_kind::block_row : w < 8 ? upd_kind::single : upd_kind::symmetric;
    if (u.how == upd_kind::symmetric && c.m != c.n) u.how = upd_kind::block_col;
    const std::int64_t most = c.large ? 48 : 9;
    const auto nr = u.how == upd_kind::single ? 1 : pick(g, 1, most);
    const auto nc = u.how == upd_kind::single ? 1 : u.how == upd_kind::symmetric ? nr : pick(g, 1, most);
    for (std::int64_t i = 0; i < nr; ++i) u.rows.push_back(pick(g, 0, c.m - 1));  // repeats allowed
    if (u.how == upd_kind::symmetric)
      u.cols = u.rows;
    else
      for (std::int64_t j = 0; j < nc; ++j) u.cols.push_back(pick(g, 0, c.n - 1));
    fill_block(u, nr, nc, pick(g, 0, 2), g, c.k);
  }
  return us;
}

template <class T>
void issue(convergent_matrix<T>& A, const cm_update<T>& u) {
  switch (u.how) {
    case upd_kind::block_col:
      A.update(u.block.data(), u.ld, u.rows, u.cols);
      break;
    case upd_kind::block_row:
      A.update(u.block.data(), u.ld, u.rows, u.cols, matrix_layout::row_major);
      break;
    case upd_kind::symmetric:
      A.update_symmetric(u.block.data(), u.ld, u.rows);
      break;
    case upd_kind::single:
      A.update(u.block[0], u.rows[0], u.cols[0]);
      break;
  }
}

// A round's updates, from `threads` threads taking every threads-th one.
// (The sparse_matrix issue() further down is found by argument-dependent lookup.)
template <class M, class U>
void issue_all(M& A, const std::vector<U>& mine, int threads) {
  if (threads == 1) {
    for (const auto& u : mine) issue(A, u);
    return;
  }
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      for (std::size_t k = std::size_t(t); k < mine.size(); k += std::size_t(threads)) issue(A, mine[k]);
    });
  for (auto& t : ts) t.join();
}

// The serial reference of one case: per element, per component, either an
// exact integer sum (sum, user, reproducible) or the running max/min.
template <class T>
struct cm_reference {
  using R = typename real_of<T>::type;
  const cm_case& c;
  std::vector<i128> sums;  // (element, component)
  std::vector<R> extreme;

  explicit cm_reference(const cm_case& cc) : c(cc) { clear(); }
  void clear() {
    sums.assign(std::size_t(c.m * c.n * parts_of<T>), 0);
    extreme.assign(std::size_t(c.m * c.n), R(0));
  }
  void add(std::int64_t i, std::int64_t j, T v) {
    const std::size_t e = std::size_t(i + j * c.m);
    if (c.k == kind::max || c.k == kind::min) {
      const R x = component(v, 0);
      extreme[e] = c.k == kind::max ? std::max(extreme[e], x) : std::min(extreme[e], x);
      return;
    }
    for (int q = 0; q < parts_of<T>; ++q)
      sums[e * parts_of<T> + std::size_t(q)] += units<R>::from_real(component(v, q));
  }
  void add_round(int r) {
    for (int p = 0; p < rank_n(); ++p)
      for (const auto& u : cm_updates<T>(c, p, r))
        for (std::size_t j = 0; j < u.cols.size(); ++j)
          for (std::size_t i = 0; i < u.rows.size(); ++i)
            if (u.how != upd_kind::symmetric || u.rows[i] <= u.cols[j]) add(u.rows[i], u.cols[j], u.at(i, j));
  }
  T value(std::int64_t i, std::int64_t j) const {
    const std::size_t e = std::size_t(i + j * c.m);
    if (c.k == kind::max || c.k == kind::min) return make_value<T>(extreme[e], R(0));
    R q[2] = {R(0), R(0)};
    for (int k = 0; k < parts_of<T>; ++k) q[k] = units<R>::to_real(sums[e * parts_of<T> + std::size_t(k)]);
    return make_value<T>(q[0], q[1]);
  }
  // After a reproducible round the committed (rounded) value is where the
  // next round starts: the reference rounds likewise.
  void round_off() {
    if (c.k != kind::repro) return;
    for (std::int64_t j = 0; j < c.n; ++j)
      for (std::int64_t i = 0; i < c.m; ++i) {
        const T v = value(i, j);
        const std::size_t e = std::size_t(i + j * c.m);
        for (int k = 0; k < parts_of<T>; ++k)
          sums[e * parts_of<T> + std::size_t(k)] = units<R>::from_real(component(v, k));
      }
  }
};

template <class T>
bool same_bits(const T& a, const T& b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0 || a == b;  // == also takes -0 for +0
}

template <class T>
std::string show(const T& v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

template <class T>
void run_cm_case(int index) {
  cm_case c = make_cm_case<T>(index);
  const std::string what = c.describe(type_name<T>());
  SCOPED_TRACE(what);
  process_grid grid(world().mpi_comm(), c.pr, rank_n() / c.pr, c.order);
  if (c.opt.lld == -1) {
    const block_cyclic bc(c.m, c.n, c.mb, c.nb, c.pr, rank_n() / c.pr);
    c.opt.lld = bc.local_rows(grid.my_row()) + 3;
  }
  std::unique_ptr<convergent_matrix<T>> A;
  if constexpr (!is_complex<T>) {
    if (c.k == kind::user) {
      typename convergent_matrix<T>::merge_function f;
      if constexpr (std::is_same_v<T, float>)
        f = &plus_merge_f;
      else
        f = &plus_merge_d;
      A = std::make_unique<convergent_matrix<T>>(c.m, c.n, grid, c.mb, c.nb, f, c.opt);
    }
  }
  if (!A) A = std::make_unique<convergent_matrix<T>>(c.m, c.n, grid, c.mb, c.nb, c.opt);
  ASSERT_EQ(A->lld(), c.opt.lld ? c.opt.lld : std::max<std::int64_t>(1, A->local_rows()));
  cm_reference<T> ref(c);
  for (int r = 0; r < c.rounds; ++r) {
    if (r > 0) {
      if (c.reset_before[std::size_t(r - 1)]) {
        A->reset();
        ref.clear();
      } else {
        A->reopen();
      }
    }
    issue_all(*A, cm_updates<T>(c, rank_me(), r), c.threads);
    A->commit();
    ref.add_round(r);
    // Every element of this process's part, once, and a few of other parts.
    std::int64_t bad = 0;
    const T* a = A->local();
    for (std::int64_t lj = 0; lj < A->local_cols(); ++lj)
      for (std::int64_t li = 0; li < A->local_rows(); ++li) {
        const T want = ref.value(A->global_row(li), A->global_col(lj)), got = a[li + lj * A->lld()];
        if (!same_bits(got, want) && bad++ == 0)
          ADD_FAILURE() << "round " << r << ": A(" << A->global_row(li) << ", " << A->global_col(lj)
                        << ") = " << show(got) << ", expected " << show(want);
      }
    EXPECT_EQ(bad, 0) << "round " << r << ": wrong elements in this process's part";
    std::vector<T> snap(std::size_t(A->lld() * A->local_cols()));
    A->snapshot_local(snap);
    for (std::int64_t lj = 0; lj < A->local_cols(); ++lj)
      for (std::int64_t li = 0; li < A->local_rows(); ++li)
        ASSERT_TRUE(same_bits(snap[std::size_t(li + lj * A->lld())], a[li + lj * A->lld()])) << "snapshot_local";
    rng g(std::uint64_t(index) * 17 + std::uint64_t(rank_me()) + std::uint64_t(r) * 1000);
    for (int q = 0; q < 6; ++q) {
      const std::int64_t i = pick(g, 0, c.m - 1), j = pick(g, 0, c.n - 1);
      const T got = A->get(i, j), want = ref.value(i, j);
      EXPECT_TRUE(same_bits(got, want)) << "round " << r << ": get(" << i << ", " << j << ") = " << show(got)
                                        << ", expected " << show(want);
    }
    ref.round_off();
    barrier();  // gets done before anyone reopens
  }
}

// Cases per element type at each P; each is small, so the suite runs in
// seconds, but together they draw every option against every layout.
// COMBINATIONS_SCALE=k runs k times as many (k = 10 for a longer search by
// hand, k < 1 for a first fraction of the same cases). COMBINATIONS_FIRST=f starts at
// case f instead of 0, to search cases the suite does not draw.
int scaled(int n) {
  const char* e = std::getenv("COMBINATIONS_SCALE");
  const double k = e ? std::atof(e) : 1.0;
  return std::max(1, int(n * (k > 0 ? k : 1.0)));
}
const int first_case = [] {
  const char* e = std::getenv("COMBINATIONS_FIRST");
  return e ? std::max(0, std::atoi(e)) : 0;
}();
const int cm_cases = scaled(40);

TEST(Combinations, ConvergentMatrixFloat) {
  for (int k = first_case; k < first_case + cm_cases; ++k) run_cm_case<float>(k);
}
TEST(Combinations, ConvergentMatrixDouble) {
  for (int k = first_case; k < first_case + cm_cases; ++k) run_cm_case<double>(1000 + k);
}
TEST(Combinations, ConvergentMatrixComplexFloat) {
  for (int k = first_case; k < first_case + cm_cases; ++k) run_cm_case<std::complex<float>>(2000 + k);
}
TEST(Combinations, ConvergentMatrixComplexDouble) {
  for (int k = first_case; k < first_case + cm_cases; ++k) run_cm_case<std::complex<double>>(3000 + k);
}

// ---- dist_array -------------------------------------------------------------------

// Bounds of `parts` contiguous ranges over n, some of them empty.
std::vector<std::int64_t> random_bounds(rng& g, std::int64_t n, int parts) {
  std::vector<std::int64_t> b(std::size_t(parts) + 1, 0);
  for (int k = 1; k < parts; ++k) b[std::size_t(k)] = pick(g, 0, n);
  b[std::size_t(parts)] = n;
  std::sort(b.begin(), b.end());
  return b;
}

struct da_case {
  int index = 0;
  std::string what;
  std::unique_ptr<distribution> dist;
};

da_case make_da_case(int index) {
  rng g(0xda7a + std::uint64_t(index) * 104729);
  da_case c;
  c.index = index;
  const std::int64_t m = pick(g, 1, 45), n = pick(g, 1, 45);
  const auto ds = divisors(rank_n());
  const int pr = ds[std::size_t(pick(g, 0, std::int64_t(ds.size()) - 1))], pc = rank_n() / pr;
  std::ostringstream s;
  s << "case " << index << ": " << m << 'x' << n << " grid " << pr << 'x' << pc << ' ';
  switch (pick(g, 0, 3)) {
    case 0:
      c.dist = std::make_unique<distribution>(distribution::block(m, n, pr, pc));
      s << "block";
      break;
    case 1:
      c.dist =
          std::make_unique<distribution>(distribution::irregular(random_bounds(g, m, pr), random_bounds(g, n, pc)));
      s << "irregular";
      break;
    case 2: {
      const auto mb = pick_of<std::int64_t>(g, {1, 2, 3, 7, 64}), nb = pick_of<std::int64_t>(g, {1, 2, 5, 64});
      const int rs = int(pick(g, 0, pr - 1)), cs = int(pick(g, 0, pc - 1));
      c.dist = std::make_unique<distribution>(distribution::block_cyclic(block_cyclic(m, n, mb, nb, pr, pc, rs, cs)));
      s << "block-cyclic " << mb << 'x' << nb << " source (" << rs << ", " << cs << ')';
      break;
    }
    default:
      c.dist = std::make_unique<distribution>(distribution::element_cyclic(m, n, pr, pc));
      s << "element-cyclic";
  }
  c.what = s.str();
  return c;
}

// A random patch of an m x n array (possibly one element, possibly all).
patch random_patch(rng& g, std::int64_t m, std::int64_t n) {
  std::int64_t r0 = pick(g, 0, m - 1), r1 = pick(g, 0, m - 1), c0 = pick(g, 0, n - 1), c1 = pick(g, 0, n - 1);
  if (r0 > r1) std::swap(r0, r1);
  if (c0 > c1) std::swap(c0, c1);
  return {r0, r1 + 1, c0, c1 + 1};
}

// A buffer for patch p in layout `lay` with leading dimension ld.
struct patch_buffer {
  matrix_layout lay;
  std::int64_t ld;
  std::size_t at(std::int64_t i, std::int64_t j) const {  // i, j relative to the patch
    return lay == matrix_layout::col_major ? std::size_t(i + j * ld) : std::size_t(i * ld + j);
  }
  std::size_t size(const patch& p) const {
    return std::size_t(ld * (lay == matrix_layout::col_major ? p.cols() : p.rows()));
  }
};
patch_buffer random_buffer(rng& g, const patch& p) {
  const auto lay = pick(g, 0, 1) ? matrix_layout::col_major : matrix_layout::row_major;
  return {lay, (lay == matrix_layout::col_major ? p.rows() : p.cols()) + pick(g, 0, 3)};
}

template <class T>
T cell(std::int64_t i, std::int64_t j, int salt) {  // small integers: exact in every T
  const auto v = std::int64_t((i * 131 + j * 71 + salt * 17) % 97) - 48;
  if constexpr (is_complex<T>)
    return T(typename real_of<T>::type(v), typename real_of<T>::type(v % 5));
  else
    return T(v);
}

template <class T>
void check_array(const dist_array<T>& A, const std::vector<T>& ref, std::int64_t m, std::int64_t n, rng& g,
                 const char* phase) {
  // Every element of every process's view through gets of random patches
  // in random layouts, plus element lists.
  for (int q = 0; q < 5; ++q) {
    const patch p = random_patch(g, m, n);
    const auto pb = random_buffer(g, p);
    std::vector<T> buf(pb.size(p), T(99));
    A.get_blocking(p, buf.data(), pb.ld, pb.lay);
    std::int64_t bad = 0;
    for (std::int64_t j = 0; j < p.cols(); ++j)
      for (std::int64_t i = 0; i < p.rows(); ++i) {
        const T want = ref[std::size_t(p.row_lo + i + (p.col_lo + j) * m)], got = buf[pb.at(i, j)];
        if (got != want && bad++ == 0)
          ADD_FAILURE() << phase << ": get of rows [" << p.row_lo << ", " << p.row_hi << ") cols [" << p.col_lo << ", "
                        << p.col_hi << ") " << (pb.lay == matrix_layout::col_major ? "col" : "row") << "-major ld "
                        << pb.ld << ": A(" << p.row_lo + i << ", " << p.col_lo + j << ") = " << show(got)
                        << ", expected " << show(want);
      }
    EXPECT_EQ(bad, 0) << phase;
  }
  std::vector<std::int64_t> rows, cols;
  for (int q = 0; q < 20; ++q) {
    rows.push_back(pick(g, 0, m - 1));
    cols.push_back(pick(g, 0, n - 1));
  }
  std::vector<T> out(rows.size());
  A.gather(rows, cols, out.data());
  for (std::size_t q = 0; q < rows.size(); ++q)
    EXPECT_EQ(out[q], ref[std::size_t(rows[q] + cols[q] * m)])
        << phase << ": gather A(" << rows[q] << ", " << cols[q] << ')';
}

template <class T>
void run_da_case(int index) {
  const da_case c = make_da_case(index);
  SCOPED_TRACE(c.what + " " + type_name<T>());
  const std::int64_t m = c.dist->rows(), n = c.dist->cols();
  dist_array<T> A(*c.dist);
  std::vector<T> ref(std::size_t(m * n), T(0));
  rng shared(std::uint64_t(index) * 3 + 1);                       // the same on every process
  rng mine(std::uint64_t(index) * 5 + std::uint64_t(rank_me()));  // this process's own choices

  // Puts: the array cut into a random grid of rectangles, each written by one
  // process (chosen at random), so no two puts overlap.
  std::vector<std::int64_t> rc{0, m}, cc{0, n};
  for (int k = 0; k < 3; ++k) {
    rc.push_back(pick(shared, 0, m));
    cc.push_back(pick(shared, 0, n));
  }
  std::sort(rc.begin(), rc.end());
  std::sort(cc.begin(), cc.end());
  for (std::size_t a = 0; a + 1 < rc.size(); ++a)
    for (std::size_t b = 0; b + 1 < cc.size(); ++b) {
      const patch p{rc[a], rc[a + 1], cc[b], cc[b + 1]};
      const int writer = int(pick(shared, 0, rank_n() - 1));
      for (std::int64_t j = p.col_lo; j < p.col_hi; ++j)
        for (std::int64_t i = p.row_lo; i < p.row_hi; ++i) ref[std::size_t(i + j * m)] = cell<T>(i, j, 1);
      if (writer != rank_me() || p.empty()) continue;
      const auto pb = random_buffer(mine, p);
      std::vector<T> buf(pb.size(p), T(-7));
      for (std::int64_t j = 0; j < p.cols(); ++j)
        for (std::int64_t i = 0; i < p.rows(); ++i) buf[pb.at(i, j)] = cell<T>(p.row_lo + i, p.col_lo + j, 1);
      A.put(p, buf.data(), pb.ld, pb.lay).wait();
    }
  A.sync();
  {
    const T* part = A.access();
    std::int64_t bad = 0;
    for (std::int64_t lj = 0; lj < A.local_cols(); ++lj)
      for (std::int64_t li = 0; li < A.local_rows(); ++li)
        if (part[li + lj * A.lld()] != ref[std::size_t(A.global_row(li) + A.global_col(lj) * m)]) ++bad;
    A.release();
    EXPECT_EQ(bad, 0) << "after puts: wrong elements in this process's part";
  }
  check_array(A, ref, m, n, mine, "after puts");
  A.sync();

  // Accumulates from every process, overlapping, some in flight together,
  // and element lists with repeated indices.
  const T alphas[] = {T(1), T(2), T(-1)};
  for (int p = 0; p < rank_n(); ++p) {
    rng g(std::uint64_t(index) * 11 + std::uint64_t(p) * 1009);
    std::vector<std::vector<T>> bufs;
    std::vector<future<>> pending;
    const int accs = int(pick(g, 1, 6));
    for (int k = 0; k < accs; ++k) {
      const patch q = random_patch(g, m, n);
      const auto pb = random_buffer(g, q);
      const T alpha = alphas[pick(g, 0, 2)];
      std::vector<T> buf(pb.size(q), T(0));
      for (std::int64_t j = 0; j < q.cols(); ++j)
        for (std::int64_t i = 0; i < q.rows(); ++i) {
          const T v = cell<T>(q.row_lo + i, q.col_lo + j, 2 + k + p);
          buf[pb.at(i, j)] = v;
          ref[std::size_t(q.row_lo + i + (q.col_lo + j) * m)] += alpha * v;
        }
      if (p != rank_me()) continue;
      bufs.push_back(std::move(buf));
      pending.push_back(A.acc(q, bufs.back().data(), pb.ld, alpha, pb.lay));
    }
    std::vector<std::int64_t> rows, cols;
    std::vector<T> vals;
    for (int k = 0; k < 15; ++k) {
      rows.push_back(pick(g, 0, m - 1));
      cols.push_back(k > 0 && pick(g, 0, 3) == 0 ? cols.back() : pick(g, 0, n - 1));
      if (k > 0 && pick(g, 0, 3) == 0) rows.back() = rows[std::size_t(k - 1)];  // repeats add
      vals.push_back(cell<T>(rows.back(), cols.back(), 40 + k));
      ref[std::size_t(rows.back() + cols.back() * m)] += T(3) * vals.back();
    }
    if (p != rank_me()) continue;
    A.scatter_acc(rows, cols, vals.data(), T(3));
    for (auto& f : pending) f.wait();
    if (pick(mine, 0, 1)) {
      for (int t = 0; t < rank_n(); ++t) A.flush(t);
    } else {
      A.flush();
    }
  }
  A.sync();
  check_array(A, ref, m, n, mine, "after accumulates");
  A.sync();

  // Scatters: each element of the put rectangles written once more by their
  // writer, in a random order with some indices twice (the last wins).
  {
    std::vector<std::int64_t> rows, cols;
    std::vector<T> vals;
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i)
        if (std::int64_t((i * 7 + j * 3 + index) % rank_n()) == rank_me()) {
          if (pick(mine, 0, 4) == 0) {  // an earlier value that the later one replaces
            rows.push_back(i);
            cols.push_back(j);
            vals.push_back(T(-1000));
          }
          rows.push_back(i);
          cols.push_back(j);
          vals.push_back(cell<T>(i, j, 77));
        }
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i) ref[std::size_t(i + j * m)] = cell<T>(i, j, 77);
    A.scatter(rows, cols, vals.data());
  }
  A.sync();
  check_array(A, ref, m, n, mine, "after scatters");
  A.sync();
}

const int da_cases = scaled(30);

TEST(Combinations, DistArrayFloat) {
  for (int k = first_case; k < first_case + da_cases; ++k) run_da_case<float>(k);
}
TEST(Combinations, DistArrayDouble) {
  for (int k = first_case; k < first_case + da_cases; ++k) run_da_case<double>(100 + k);
}
TEST(Combinations, DistArrayComplexFloat) {
  for (int k = first_case; k < first_case + da_cases; ++k) run_da_case<std::complex<float>>(200 + k);
}
TEST(Combinations, DistArrayComplexDouble) {
  for (int k = first_case; k < first_case + da_cases; ++k) run_da_case<std::complex<double>>(300 + k);
}
TEST(Combinations, DistArrayInt32) {
  for (int k = first_case; k < first_case + da_cases; ++k) run_da_case<std::int32_t>(400 + k);
}
TEST(Combinations, DistArrayInt64) {
  for (int k = first_case; k < first_case + da_cases; ++k) run_da_case<std::int64_t>(500 + k);
}

// ---- sparse_matrix ----------------------------------------------------------------

struct sm_case {
  int index = 0;
  std::int64_t m = 0, n = 0;
  std::vector<std::int64_t> row_bounds, col_bounds;  // parts + 1 each, some parts empty
  sparse_matrix_options opt;
  kind k = kind::sum;
  int rounds = 1, updates = 1, threads = 1;
  bool large = false;
  std::vector<bool> reset_before;  // per round after the first
  // Later rounds of a frozen pattern: the first round's updates again (new
  // values), in reverse order, other layouts or only some of them, which
  // the slot cache must notice; a growing pattern gets new indices.
  std::vector<bool> reversed, relayout, subset;

  std::string describe(const char* type) const {
    std::ostringstream s;
    s << "sparse case " << index << ": " << type << ' ' << m << 'x' << n << " rows";
    for (auto b : row_bounds) s << ' ' << b;
    s << " strategy " << (opt.strategy == update_strategy::packets ? "packets" : "alltoall") << " buffer_cap "
      << opt.buffer_cap << " coalesce " << opt.coalesce_bytes << " merge "
      << (k == kind::sum     ? "sum"
          : k == kind::repro ? "sum (reproducible)"
          : k == kind::max   ? "max"
                             : "min")
      << (opt.growing_pattern ? " growing" : " frozen") << (opt.cache_slots ? "" : " no slot cache") << " rounds "
      << rounds << " updates " << updates << " threads " << threads << (large ? " (large)" : "");
    return s.str();
  }
};

template <class T>
sm_case make_sm_case(int index) {
  rng g(0x5a75e + std::uint64_t(index) * 15485863);
  sm_case c;
  c.index = index;
  c.large = pick(g, 0, 5) == 0;
  c.m = c.large ? pick(g, 60, 200) : pick(g, 1, 40);
  c.n = c.large ? pick(g, 60, 200) : pick(g, 1, 40);
  c.row_bounds = random_bounds(g, c.m, rank_n());
  c.col_bounds = random_bounds(g, c.n, rank_n());
  c.opt.strategy = pick(g, 0, 3) ? update_strategy::packets : update_strategy::alltoall;
  c.opt.buffer_cap = pick_of<std::size_t>(g, {1 << 10, 4 << 10, 64 << 20});
  c.opt.coalesce_bytes = pick_of<std::size_t>(g, {64, 512, 16 << 10});
  c.opt.seed = g();
  const int kinds = is_complex<T> ? 2 : 4;  // sum, reproducible sum, max, min
  c.k = kind(pick(g, 0, kinds - 1));
  c.opt.reproducible = c.k == kind::repro;
  c.opt.merge = c.k == kind::max ? merge_op::max : c.k == kind::min ? merge_op::min : merge_op::sum;
  c.opt.growing_pattern = pick(g, 0, 2) == 0;
  c.opt.cache_slots = pick(g, 0, 3) != 0;
  c.rounds = int(pick(g, 1, 4));
  c.updates = int(pick(g, 1, 24));
  c.threads = pick(g, 0, 4) == 0 ? 2 : 1;
  for (int r = 1; r < c.rounds; ++r) {
    c.reset_before.push_back(pick(g, 0, 1) == 1);
    c.reversed.push_back(pick(g, 0, 2) == 0);
    c.relayout.push_back(pick(g, 0, 3) == 0);
    c.subset.push_back(pick(g, 0, 3) == 0);
  }
  return c;
}

// Process p's updates in round r: the indices of round 0 (a frozen
// pattern, whose later rounds may not leave it) or of round r (growing),
// the values of round r, and the round's order, layouts and subset.
template <class T>
std::vector<cm_update<T>> sm_updates(const sm_case& c, int p, int r) {
  const int shape_round = c.opt.growing_pattern ? r : 0;
  rng g(std::uint64_t(c.index) * 1000033 + std::uint64_t(p) * 7907 + std::uint64_t(shape_round) * 37 + 3);
  rng vg(std::uint64_t(c.index) * 998244353 + std::uint64_t(p) * 131 + std::uint64_t(r) * 17 + 1);
  const bool later = r > 0;
  const bool reversed = later && c.reversed[std::size_t(r - 1)];
  const bool relayout = later && c.relayout[std::size_t(r - 1)];
  const bool subset = later && c.subset[std::size_t(r - 1)];
  std::vector<cm_update<T>> us;
  for (int k = 0; k < c.updates; ++k) {
    cm_update<T> u;
    const int w = int(pick(g, 0, 9));
    u.how = w < 5 ? upd_kind::block_col : w < 8 ? upd_kind::block_row : upd_kind::single;
    const std::int64_t most = c.large ? 24 : 8;
    const auto nr = u.how == upd_kind::single ? 1 : pick(g, 1, most);
    const auto nc = u.how == upd_kind::single ? 1 : pick(g, 1, most);
    // Rows: mostly a few neighbours (finite-element-like), repeats allowed.
    const std::int64_t base = pick(g, 0, c.m - 1);
    for (std::int64_t i = 0; i < nr; ++i)
      u.rows.push_back(pick(g, 0, 3) ? std::min(c.m - 1, base + pick(g, 0, 4)) : pick(g, 0, c.m - 1));
    for (std::int64_t j = 0; j < nc; ++j) u.cols.push_back(pick(g, 0, c.n - 1));
    const std::int64_t pad = pick(g, 0, 2);
    const bool drop = pick(g, 0, 2) == 0;  // drawn every round: the shape's draws stay aligned
    const bool keep = !subset || !drop;
    if (relayout && u.how != upd_kind::single)
      u.how = u.how == upd_kind::block_col ? upd_kind::block_row : upd_kind::block_col;
    fill_block(u, nr, nc, pad, vg, c.k);
    if (keep) us.push_back(std::move(u));
  }
  if (reversed) std::reverse(us.begin(), us.end());
  return us;
}

template <class T>
void issue(sparse_matrix<T>& A, const cm_update<T>& u) {
  switch (u.how) {
    case upd_kind::block_row:
      A.update(u.block.data(), u.ld, u.rows, u.cols, matrix_layout::row_major);
      break;
    case upd_kind::single:
      A.update(u.block[0], u.rows[0], u.cols[0]);
      break;
    default:
      A.update(u.block.data(), u.ld, u.rows, u.cols);
  }
}

template <class T>
void run_sm_case(int index) {
  const sm_case c = make_sm_case<T>(index);
  SCOPED_TRACE(c.describe(type_name<T>()));
  const int me = rank_me();
  const std::int64_t r0 = c.row_bounds[std::size_t(me)], r1 = c.row_bounds[std::size_t(me) + 1];
  sparse_matrix<T> A(r1 - r0, c.col_bounds[std::size_t(me) + 1] - c.col_bounds[std::size_t(me)], c.opt);
  ASSERT_EQ(A.row_begin(), r0);
  ASSERT_EQ(A.row_end(), r1);
  cm_case rc;  // the reference's shape and merge
  rc.m = c.m;
  rc.n = c.n;
  rc.k = c.k;
  cm_reference<T> ref(rc);
  std::vector<bool> stored(std::size_t(c.m * c.n), false);  // the pattern: every entry updated so far
  for (int r = 0; r < c.rounds; ++r) {
    if (r > 0) {
      if (c.reset_before[std::size_t(r - 1)]) {
        A.reset();
        ref.clear();
      } else {
        A.reopen();
      }
    }
    issue_all(A, sm_updates<T>(c, me, r), c.threads);
    A.commit();
    for (int p = 0; p < rank_n(); ++p)
      for (const auto& u : sm_updates<T>(c, p, r))
        for (std::size_t j = 0; j < u.cols.size(); ++j)
          for (std::size_t i = 0; i < u.rows.size(); ++i) {
            ref.add(u.rows[i], u.cols[j], u.at(i, j));
            stored[std::size_t(u.rows[i] + u.cols[j] * c.m)] = true;
          }
    EXPECT_EQ(A.pattern_frozen(), !c.opt.growing_pattern) << "round " << r;
    // Every entry of this process's rows through get(), and the CSR blocks:
    // exactly the updated entries, each with its value.
    std::int64_t bad = 0, nnz = 0;
    for (std::int64_t i = r0; i < r1; ++i)
      for (std::int64_t j = 0; j < c.n; ++j) {
        const T got = A.get(i, j), want = ref.value(i, j);
        if (!same_bits(got, want) && bad++ == 0)
          ADD_FAILURE() << "round " << r << ": get(" << i << ", " << j << ") = " << show(got) << ", expected "
                        << show(want);
        nnz += stored[std::size_t(i + j * c.m)];
      }
    EXPECT_EQ(bad, 0) << "round " << r << ": wrong entries in this process's rows";
    EXPECT_EQ(A.local_nnz(), nnz) << "round " << r << ": the pattern holds other entries than those updated";
    const auto d = A.diag(), o = A.offdiag();
    const auto cmap = A.col_map();
    std::int64_t seen = 0;
    for (std::int64_t li = 0; li < r1 - r0; ++li) {
      auto check = [&](std::int64_t j, const T& v) {
        ++seen;
        EXPECT_TRUE(stored[std::size_t(r0 + li + j * c.m)])
            << "round " << r << ": (" << r0 + li << ", " << j << ") stored";
        EXPECT_TRUE(same_bits(v, ref.value(r0 + li, j))) << "round " << r << ": CSR (" << r0 + li << ", " << j << ")";
      };
      std::int64_t prev = -1;
      for (auto q = d.row_ptr[std::size_t(li)]; q < d.row_ptr[std::size_t(li) + 1]; ++q) {
        const std::int64_t j = A.col_begin() + d.col[std::size_t(q)];
        EXPECT_GT(j, prev) << "diagonal block columns ascend";
        prev = j;
        check(j, d.value[std::size_t(q)]);
      }
      prev = -1;
      for (auto q = o.row_ptr[std::size_t(li)]; q < o.row_ptr[std::size_t(li) + 1]; ++q) {
        const std::int64_t j = cmap[std::size_t(o.col[std::size_t(q)])];
        EXPECT_TRUE(j < A.col_begin() || j >= A.col_end()) << "an off-diagonal column is outside the diagonal block";
        EXPECT_GT(j, prev) << "off-diagonal block columns ascend";
        prev = j;
        check(j, o.value[std::size_t(q)]);
      }
    }
    EXPECT_EQ(seen, nnz) << "round " << r;
    ref.round_off();
    barrier();  // reads done before anyone reopens
  }
}

const int sm_cases = scaled(30);

TEST(Combinations, SparseMatrixFloat) {
  for (int k = first_case; k < first_case + sm_cases; ++k) run_sm_case<float>(k);
}
TEST(Combinations, SparseMatrixDouble) {
  for (int k = first_case; k < first_case + sm_cases; ++k) run_sm_case<double>(100 + k);
}
TEST(Combinations, SparseMatrixComplexFloat) {
  for (int k = first_case; k < first_case + sm_cases; ++k) run_sm_case<std::complex<float>>(200 + k);
}
TEST(Combinations, SparseMatrixComplexDouble) {
  for (int k = first_case; k < first_case + sm_cases; ++k) run_sm_case<std::complex<double>>(300 + k);
}

}  // namespace
