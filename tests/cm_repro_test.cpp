// Reproducible assembly (convergent_matrix_options::reproducible, issue 13):
//  - the accumulator itself: exact sums, ties to even, subnormals, float,
//    non-finite values, every order of the same contributions;
//  - exactness: random contributions spanning 30 orders of magnitude, each
//    also issued negated (by another process, in another order), plus one
//    payload per element: the committed matrix is exactly the payload;
//  - bitwise identity of the saved file across grid shapes, block sizes,
//    strategies, issuing processes, shuffled orders and threads in this
//    run; across P and node sizes, every run writes its file into
//    $ACCRETE_REPRO_DIR and cm_repro_compare checks they are all the same.
// White-box for the accumulator: reaches into src/assembly/.
#define ACCRETE_INTERNAL_INCLUDE
#include <algorithm>
#include <bit>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "accrete/accrete.hpp"
#include "accrete/matrix/convergent_matrix.hpp"
#include "assembly/kernels.hpp"
#include "assembly/simd.hpp"

using namespace accrete;
using detail::exact_sum;

namespace {

template <class T>
T sum_repro(const std::vector<double>& xs) {
  exact_sum a;
  for (double x : xs) a.add(x);
  return a.round<T>();
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// A sign, a mantissa in [1, 2) and a power of ten in [lo, hi].
double spread(std::mt19937_64& g, int lo, int hi) {
  const double mant = 1.0 + double(g() >> 11) * 0x1p-53;
  const int e = lo + int(g() % std::uint64_t(hi - lo + 1));
  return (g() & 1 ? -1.0 : 1.0) * mant * std::pow(10.0, e);
}

TEST(Accumulator, SingleValuesRoundTrip) {
  std::mt19937_64 g(1);
  std::vector<double> xs = {1.0, -1.0, 0x1p-1074, -0x1p-1074, 0x1.fffffffffffffp+1023, 0x1p-1022, 0x1.8p-1060};
  for (int i = 0; i < 2000; ++i) xs.push_back(spread(g, -300, 300));
  for (double x : xs) {
    EXPECT_TRUE(same_bits(sum_repro<double>({x}), x)) << x;
    EXPECT_EQ(sum_repro<float>({double(float(x))}), float(x)) << x;
  }
}

TEST(Accumulator, ExactSumsAndTiesToEven) {
  // Left-to-right double sums lose these; the exact sum rounded once does not.
  EXPECT_EQ(sum_repro<double>({1.0, 0x1p-53, 0x1p-53}), 1.0 + 0x1p-52);
  EXPECT_EQ(sum_repro<double>({1.0, 0x1p-53}), 1.0);                         // tie, to even
  EXPECT_EQ(sum_repro<double>({1.0 + 0x1p-52, 0x1p-53}), 1.0 + 0x1p-51);     // tie, to even (up)
  EXPECT_EQ(sum_repro<double>({1.0, 0x1p-53, 0x1p-100}), 1.0 + 0x1p-52);     // above the tie
  EXPECT_EQ(sum_repro<double>({1.0, -0x1p-54, -0x1p-100}), 1.0 - 0x1p-53);   // negative remainder
  EXPECT_EQ(sum_repro<float>({16777216.0, 1.0, 1.0}), 16777218.0f);           // 2^24 + 2 in float
  EXPECT_EQ(sum_repro<double>({1e15, 1.0, -1e15}), 1.0);
  EXPECT_EQ(sum_repro<double>({-3.0, 1.0}), -2.0);
  EXPECT_EQ(sum_repro<double>({0x1p-1074, 0x1p-1074}), 0x1p-1073);          // subnormals add exactly
  // float's smallest subnormal is 2^-149: 1.5 of it is a tie (to even, 2),
  // half of it a tie (to even, 0).
  EXPECT_EQ(sum_repro<float>({0x1p-150, 0x1p-150, 0x1p-150}), 0x1p-148f);
  EXPECT_EQ(sum_repro<float>({0x1p-150, 0x1p-150}), 0x1p-149f);
  EXPECT_EQ(sum_repro<float>({0x1p-150}), 0.0f);
  EXPECT_EQ(sum_repro<double>({0x1.fffffffffffffp+1023, 0x1p+970}), INFINITY);  // overflow rounds to inf
  EXPECT_TRUE(std::signbit(sum_repro<double>({-0x1p-1074, -0x1p-1074})));
  EXPECT_EQ(sum_repro<double>({1e300, 1.0, -1e300}), 1.0);  // 997 bits apart: still exact
  EXPECT_EQ(sum_repro<double>({0x1.fffffffffffffp+1023, 0x1.fffffffffffffp+1023, -0x1.fffffffffffffp+1023}),
            0x1.fffffffffffffp+1023);  // the intermediate overflow does not matter
  EXPECT_TRUE(std::signbit(sum_repro<double>({-0.0, -0.0})));
  EXPECT_FALSE(std::signbit(sum_repro<double>({-0.0, 0.0})));
  EXPECT_FALSE(std::signbit(sum_repro<double>({-1.0, 1.0})));
}

TEST(Accumulator, NonFinite) {
  EXPECT_EQ(sum_repro<double>({1.0, INFINITY}), INFINITY);
  EXPECT_EQ(sum_repro<double>({-INFINITY, 5.0}), -INFINITY);
  EXPECT_TRUE(std::isnan(sum_repro<double>({INFINITY, -INFINITY})));
  EXPECT_TRUE(std::isnan(sum_repro<double>({1.0, NAN})));
}

TEST(Accumulator, EveryOrderGivesTheSameBits) {
  std::mt19937_64 g(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<double> xs;
    const int n = 2 + int(g() % 40);
    for (int i = 0; i < n; ++i) xs.push_back(spread(g, -15, 15));
    if (trial % 3 == 0) xs.push_back(-xs[0]);  // cancellation of the largest
    const double first = sum_repro<double>(xs);
    for (int s = 0; s < 10; ++s) {
      std::shuffle(xs.begin(), xs.end(), g);
      ASSERT_TRUE(same_bits(sum_repro<double>(xs), first));
    }
  }
}

TEST(Accumulator, MatchesAnIndependentIntegerReference) {
  // Doubles m * 2^e with |e| <= 20 are multiples of 2^-72 below 2^21, so
  // 40 of them sum exactly in __int128 units of 2^-72; GCC converts
  // __int128 to double with one rounding, and the scaling is exact.
  std::mt19937_64 g(11);
  for (int trial = 0; trial < 20000; ++trial) {
    std::vector<double> xs;
    __int128 units = 0;
    const int n = 1 + int(g() % 40);
    for (int i = 0; i < n; ++i) {
      const std::int64_t m = std::int64_t(g() >> 11) * (g() & 1 ? 1 : -1);
      const int e = int(g() % 41) - 20;
      xs.push_back(std::ldexp(double(m), e - 52));
      units += static_cast<__int128>(m) << (e + 20);
    }
    ASSERT_TRUE(same_bits(sum_repro<double>(xs), units == 0 ? 0.0 : std::ldexp(static_cast<double>(units), -72)));
  }
}

// The engine's rule: add a contribution where the sum is exact, log it
// otherwise; at commit the element and its log are summed exactly. Every
// order must give round(exact sum of everything).
template <class T>
T settle(T x, const std::vector<T>& xs) {
  std::vector<double> log;
  for (T v : xs) detail::add_run_exact(&x, &v, 1, [&](std::int32_t) { log.push_back(double(v)); });
  if (log.empty()) return x;
  exact_sum a;
  a.add(double(x));
  for (double v : log) a.add(v);
  return a.round<T>();
}

// The settlement's shortcut (round_sum_fast: one 128-bit integer sum)
// gives exact_sum's bits wherever it applies, and applies to the usual
// logged element: a few values of similar size. Ties to even, carries
// into a new leading bit, cancellation down to a few bits, results next
// to the subnormal range and terms 60 bits apart are in the mix; where it
// declines (an exact zero, terms too far apart, a non-finite term, a
// subnormal or infinite result) settle_sum falls back to exact_sum.
TEST(Accumulator, SettlementShortcutGivesTheSameBits) {
  std::mt19937_64 g(11);
  int taken = 0, declined = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    std::vector<double> xs;
    const int n = 1 + int(g() % 40);
    const int kind = trial % 6;
    for (int i = 0; i < n; ++i) {
      switch (kind) {
        case 0: xs.push_back(spread(g, -3, 3)); break;                                     // general values
        case 1: xs.push_back(double(std::int64_t(g() % 2001) - 1000) * 0x1p-30); break;    // fixed point
        case 2: xs.push_back((g() & 1 ? 1.0 : -1.0) * (1.0 + double(g() % 8) * 0x1p-52)); break;  // ties, cancellation
        case 3: xs.push_back(spread(g, -300, -290)); break;                                 // tiny
        case 4: xs.push_back(std::ldexp(spread(g, 0, 0), -1000 + int(g() % 40))); break;  // near subnormal
        default: xs.push_back(spread(g, 0, 0) * std::ldexp(1.0, int(g() % 70))); break;    // up to 70 bits apart
      }
    }
    if (trial % 97 == 0) xs.push_back(-xs[0]);
    exact_sum all;
    for (double x : xs) all.add(x);
    const double want = all.round<double>();
    double got = 0;
    if (detail::round_sum_fast(xs.data(), xs.size(), got)) {
      ++taken;
      ASSERT_TRUE(same_bits(got, want)) << "trial " << trial << ": " << got << " vs " << want;
    } else {
      ++declined;
    }
    const double settled =
        detail::settle_sum(xs[0], xs.size() - 1, [&](std::size_t k) { return xs[1 + k]; });
    ASSERT_TRUE(same_bits(settled, want)) << "trial " << trial;
  }
  EXPECT_GT(taken, 15000);
  EXPECT_GT(declined, 100);
  double out = 0;
  const double inf = std::numeric_limits<double>::infinity(), sub = 0x1p-1070;
  const double nonfinite[] = {1.0, inf}, tiny[] = {sub, sub}, zero[] = {1.0, -1.0};
  EXPECT_FALSE(detail::round_sum_fast(nonfinite, 2, out));
  EXPECT_FALSE(detail::round_sum_fast(tiny, 2, out));
  EXPECT_FALSE(detail::round_sum_fast(zero, 2, out));
  // A tie: 1 + 2^-53 rounds to 1 (even), 1 + 3 * 2^-53 to 1 + 2^-51.
  const double tie[] = {1.0, 0x1p-53}, tie_up[] = {1.0, 0x1p-53, 0x1p-52};
  ASSERT_TRUE(detail::round_sum_fast(tie, 2, out));
  EXPECT_EQ(out, 1.0);
  ASSERT_TRUE(detail::round_sum_fast(tie_up, 3, out));
  EXPECT_EQ(out, 1.0 + 0x1p-51);
}

// The settlement's sort of the spill log (radix sort from 4096 entries):
// every entry kept, in index order, for short and long logs, small and
// 40-bit indices.
TEST(Accumulator, SpillLogSortsByIndex) {
  std::mt19937_64 g(5);
  for (std::size_t n : {std::size_t(10), std::size_t(4095), std::size_t(4096), std::size_t(100000)})
    for (std::uint64_t range : {std::uint64_t(3000), std::uint64_t(1) << 40}) {
      std::vector<detail::assembly_engine::spill> log(n);
      for (auto& x : log) x = {std::int64_t(g() % range), double(g() % 1000)};
      auto want = log;
      detail::sort_spills(log);
      ASSERT_EQ(log.size(), n);
      for (std::size_t i = 1; i < n; ++i) ASSERT_LE(log[i - 1].index, log[i].index) << n << " " << i;
      auto key = [](const auto& a, const auto& b) { return a.index != b.index ? a.index < b.index : a.value < b.value; };
      std::sort(want.begin(), want.end(), key);
      std::sort(log.begin(), log.end(), key);
      for (std::size_t i = 0; i < n; ++i)
        ASSERT_TRUE(log[i].index == want[i].index && log[i].value == want[i].value) << n << " " << i;
    }
}

TEST(Accumulator, AddOrLogThenSettleIsOrderIndependent) {
  std::mt19937_64 g(3);
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<double> xs;
    const int n = 1 + int(g() % 12);
    for (int i = 0; i < n; ++i)
      xs.push_back(trial % 2 ? spread(g, -15, 15) : double(std::int64_t(g() % 64) - 32) * 0.25);
    std::vector<float> fs(xs.begin(), xs.end());
    exact_sum all, allf;
    for (double x : xs) all.add(x);
    for (float f : fs) allf.add(double(f));
    const double want = all.round<double>();
    const float wantf = allf.round<float>();
    for (int s = 0; s < 6; ++s) {
      std::shuffle(xs.begin(), xs.end(), g);
      std::shuffle(fs.begin(), fs.end(), g);
      ASSERT_TRUE(same_bits(settle(0.0, xs), want));
      const float got = settle(0.0f, fs);
      ASSERT_EQ(std::memcmp(&got, &wantf, sizeof got), 0) << got << " vs " << wantf;
    }
  }
}

// The builds of the kernels this CPU can run (src/assembly/simd.hpp).
std::vector<detail::simd_isa> runnable_isas() {
  std::vector<detail::simd_isa> v{detail::simd_isa::baseline};
#ifdef ACCRETE_SIMD_AVX2
  if (__builtin_cpu_supports("avx2")) v.push_back(detail::simd_isa::avx2);
#endif
  return v;
}

// Runs of contributions, as the kernels add them: each element whose sum is
// exact (an independent exact check: a + b - fl(a + b) sums to 0) holds the
// sum with its bits, every other keeps its value and is logged, once and in
// order. One run (add_run_exact) and a column of several runs with gaps
// between them (add_runs_exact, w = 1 and 2 components per element), in
// every build of the kernels this CPU runs; lengths around the 16- and
// 32-byte vectors, exact and inexact elements at every lane, -0,
// infinities, NaN and overflow.
template <class T>
void run_adds_where_exact() {
  std::mt19937_64 g(11);
  const T big = std::numeric_limits<T>::max(), inf = std::numeric_limits<T>::infinity();
  auto draw = [&](bool exactish) -> T {
    switch (g() % 16) {
      case 0: return -T(0);
      case 1: return g() & 1 ? inf : -inf;
      case 2: return std::numeric_limits<T>::quiet_NaN();
      case 3: return g() & 1 ? big : -big;
      default: return exactish ? T(std::int64_t(g() % 64) - 32) * T(0.25) : T(spread(g, -8, 8));
    }
  };
  using bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  using run = detail::simd_run;
  const auto isas = runnable_isas();
  std::int64_t exact_seen = 0, logged_seen = 0;
  for (int trial = 0; trial < 6000; ++trial) {
    const int len = int(g() % 41);
    const bool exactish = trial % 3 != 0;
    std::vector<T> dst(std::size_t(len) + 1), src(std::size_t(len) + 1);  // + a sentinel
    for (int k = 0; k < len; ++k) {
      dst[std::size_t(k)] = g() % 8 ? T(std::int64_t(g() % 64) - 32) * T(0.5) : draw(exactish);
      src[std::size_t(k)] = g() % 8 ? T(std::int64_t(g() % 64) - 32) * T(0.125) : draw(exactish);
      if (trial % 2) src[std::size_t(k)] = draw(exactish);
    }
    dst[std::size_t(len)] = T(7);
    const std::vector<T> before = dst;
    std::vector<T> want(before);
    std::vector<std::int32_t> want_logged;
    for (int k = 0; k < len; ++k) {
      const T a = before[std::size_t(k)], b = src[std::size_t(k)], s = a + b;
      bool exact = std::isfinite(a) && std::isfinite(b) && std::isfinite(s);
      if (exact) {
        exact_sum rest;
        rest.add(double(a));
        rest.add(double(b));
        rest.add(-double(s));
        exact = rest.round<double>() == 0.0;
      }
      if (exact) want[std::size_t(k)] = s;
      if (!exact) want_logged.push_back(k);
      (exact ? exact_seen : logged_seen)++;
    }
    auto check = [&](const std::vector<T>& got, const std::vector<std::int32_t>& logged, const std::string& what) {
      for (int k = 0; k <= len; ++k)
        ASSERT_EQ(std::bit_cast<bits>(got[std::size_t(k)]), std::bit_cast<bits>(want[std::size_t(k)]))
            << what << ", len " << len << ", element " << k << ": " << before[std::size_t(k)] << " + "
            << (k < len ? src[std::size_t(k)] : T(0));
      ASSERT_EQ(logged, want_logged) << what << ", len " << len;
    };
    std::vector<std::int32_t> logged;
    detail::add_run_exact(dst.data(), src.data(), len, [&](std::int32_t k) { logged.push_back(k); });
    check(dst, logged, "one run");
    // The same elements as a column of runs: the element range cut at
    // random points into runs, stored with a gap of 5 after each, sources
    // in place; w = 2 reads pairs (complex elements) when len is even.
    for (int w : {1, 2}) {
      if (len % w) continue;
      std::vector<run> runs;
      std::vector<std::int32_t> gapped_at;  // the component offset of element k in the gapped column
      for (std::int32_t e = 0, loc = 0; e < len / w;) {
        const std::int32_t n = std::min<std::int32_t>(len / w - e, 1 + std::int32_t(g() % 13));
        runs.push_back({loc, e, n});
        for (std::int32_t j = 0; j < n * w; ++j) gapped_at.push_back((loc * w) + j);
        e += n;
        loc += n + 5;
      }
      for (detail::simd_isa isa : isas) {
        const std::size_t size = gapped_at.empty() ? 1 : std::size_t(gapped_at.back()) + 2;
        std::vector<T> col(size, T(-3));
        for (int k = 0; k < len; ++k) col[std::size_t(gapped_at[std::size_t(k)])] = before[std::size_t(k)];
        std::vector<std::int64_t> at;
        std::vector<T> values;
        detail::add_runs_exact(isa, col.data(), src.data(), runs.data(), runs.size(), w, [&](std::int64_t i, T v) {
          at.push_back(i);
          values.push_back(v);
        });
        const std::string what = std::string(isa == detail::simd_isa::avx2 ? "avx2" : "baseline") +
                                 " column of " + std::to_string(runs.size()) + " runs, w " + std::to_string(w);
        std::vector<T> got(std::size_t(len) + 1, T(7));
        for (int k = 0; k < len; ++k) got[std::size_t(k)] = col[std::size_t(gapped_at[std::size_t(k)])];
        std::vector<std::int32_t> logged_k;
        for (std::size_t q = 0; q < at.size(); ++q) {
          const auto k = std::int32_t(std::find(gapped_at.begin(), gapped_at.end(), std::int32_t(at[q])) - gapped_at.begin());
          ASSERT_LT(k, len) << what << ": logged offset " << at[q] << " is in a gap";
          ASSERT_EQ(std::bit_cast<bits>(values[q]), std::bit_cast<bits>(src[std::size_t(k)])) << what;
          logged_k.push_back(k);
        }
        check(got, logged_k, what);
        for (std::size_t i = 0; i < col.size(); ++i) {
          if (std::find(gapped_at.begin(), gapped_at.end(), std::int32_t(i)) == gapped_at.end()) {
            ASSERT_EQ(col[i], T(-3)) << what << ": gap " << i << " written";
          }
        }
      }
    }
  }
  EXPECT_GT(exact_seen, 1000);
  EXPECT_GT(logged_seen, 1000);
}

TEST(Accumulator, RunsAddWhereExactAndLogTheRestDouble) { run_adds_where_exact<double>(); }
TEST(Accumulator, RunsAddWhereExactAndLogTheRestFloat) { run_adds_where_exact<float>(); }

// The plain sums of a column of runs: every build gives the bits of
// element-by-element IEEE addition (no width-dependent rounding, no FMA).
template <class T>
void runs_add_like_scalar() {
  std::mt19937_64 g(5);
  using run = detail::simd_run;
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<run> runs;
    std::int32_t loc = std::int32_t(g() % 3), pos = 0;
    for (int r = 0, nr = 1 + int(g() % 9); r < nr; ++r) {
      const auto n = 1 + std::int32_t(g() % 37);
      runs.push_back({loc, pos, n});
      loc += n + std::int32_t(g() % 4);
      pos += n + std::int32_t(g() % 3);
    }
    std::vector<T> src(static_cast<std::size_t>(pos)), start(static_cast<std::size_t>(loc) + 1);
    for (auto& x : src) x = T(spread(g, -6, 6));
    for (auto& x : start) x = T(spread(g, -6, 6));
    std::vector<T> want = start;
    for (const run& r : runs)
      for (std::int32_t k = 0; k < r.len; ++k) {
        volatile T sum = want[std::size_t(r.loc + k)] + src[std::size_t(r.pos + k)];  // one rounding, as in C
        want[std::size_t(r.loc + k)] = sum;
      }
    for (detail::simd_isa isa : runnable_isas()) {
      std::vector<T> got = start;
      detail::add_runs(isa, got.data(), src.data(), runs.data(), runs.size());
      ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(T)), 0)
          << (isa == detail::simd_isa::avx2 ? "avx2" : "baseline") << ", trial " << trial;
    }
  }
}

TEST(Accumulator, PlainRunsAddElementByElementDouble) { runs_add_like_scalar<double>(); }
TEST(Accumulator, PlainRunsAddElementByElementFloat) { runs_add_like_scalar<float>(); }

// ---- the matrix -------------------------------------------------------------------

constexpr std::int64_t M = 37, N = 29;

struct update_rec {
  std::vector<std::int64_t> rows, cols;
  std::vector<double> vals;  // column-major rows.size() x cols.size()
};

// The same list on every process whatever P: indices may repeat.
std::vector<update_rec> make_updates(std::uint64_t seed, int count) {
  std::mt19937_64 g(seed);
  std::vector<update_rec> us(static_cast<std::size_t>(count));
  for (auto& u : us) {
    const int nr = 1 + int(g() % 9), nc = 1 + int(g() % 7);
    for (int i = 0; i < nr; ++i) u.rows.push_back(std::int64_t(g() % M));
    for (int j = 0; j < nc; ++j) u.cols.push_back(std::int64_t(g() % N));
    for (int k = 0; k < nr * nc; ++k) u.vals.push_back(spread(g, -15, 15));
  }
  return us;
}

// Element k of u's block as a T: a complex element's imaginary part is
// another of the update's values, scaled by an exact power of two.
template <class T>
T value_of(const update_rec& u, std::size_t k) {
  if constexpr (std::is_floating_point_v<T>) {
    return T(u.vals[k]);
  } else {
    using R = typename T::value_type;
    return T(R(u.vals[k]), R(u.vals[(k + 1) % u.vals.size()] * 0x1p-7));
  }
}

struct config {
  int pr, pc;
  std::int64_t mb, nb;
  update_strategy strategy;
  std::uint64_t deal;  // which process issues which update, and in what order
  int threads;
};

std::string saved_path(const std::string& tag) {
  const char* dir = std::getenv("ACCRETE_REPRO_DIR");
  return std::string(dir && *dir ? dir : ".") + "/" + tag;
}

std::vector<char> file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// Issues `us` (and, if `negate`, every update again negated by another
// process in another order) on a reproducible matrix built per `c`.
template <class T>
void issue(convergent_matrix<T>& A, const std::vector<update_rec>& us, const config& c, bool negate) {
  const int P = rank_n(), me = rank_me();
  struct job {
    std::size_t u;
    bool neg;
  };
  std::vector<job> mine;
  for (std::size_t u = 0; u < us.size(); ++u) {
    if ((u * 2654435761u + c.deal) % std::uint64_t(P) == std::uint64_t(me)) mine.push_back({u, false});
    if (negate && (u * 40503u + c.deal + 1) % std::uint64_t(P) == std::uint64_t(me)) mine.push_back({u, true});
  }
  std::mt19937_64 g(c.deal * 1000 + std::uint64_t(me));
  std::shuffle(mine.begin(), mine.end(), g);
  auto run = [&](int t) {
    std::vector<T> v;
    for (std::size_t k = std::size_t(t); k < mine.size(); k += std::size_t(c.threads)) {
      const update_rec& u = us[mine[k].u];
      const std::size_t nr = u.rows.size(), nc = u.cols.size();
      const T sign = mine[k].neg ? T(-1) : T(1);
      if ((mine[k].u + c.deal) % 3 == 0) {  // the same block, row-major
        v.resize(nr * nc);
        for (std::size_t i = 0; i < nr; ++i)
          for (std::size_t j = 0; j < nc; ++j) v[i * nc + j] = sign * value_of<T>(u, i + j * nr);
        A.update(v.data(), std::int64_t(nc), u.rows, u.cols, matrix_layout::row_major);
      } else {
        v.resize(nr * nc);
        for (std::size_t k = 0; k < v.size(); ++k) v[k] = sign * value_of<T>(u, k);
        A.update(v.data(), std::int64_t(nr), u.rows, u.cols);
      }
    }
  };
  std::vector<std::thread> ts;
  for (int t = 1; t < c.threads; ++t) ts.emplace_back(run, t);
  run(0);
  for (auto& t : ts) t.join();
}

std::vector<config> configs() {
  const int P = rank_n();
  std::vector<config> cs;
  std::vector<std::pair<int, int>> grids;
  for (int pr = 1; pr <= P; ++pr)
    if (P % pr == 0) grids.push_back({pr, P / pr});
  std::uint64_t deal = 1;
  for (auto [pr, pc] : grids) {
    cs.push_back({pr, pc, 4, 3, update_strategy::packets, deal++, 1});
    cs.push_back({pr, pc, 64, 64, update_strategy::alltoall, deal++, 1});
  }
  cs.push_back({grids.back().first, grids.back().second, 5, 7, update_strategy::packets, deal++, 3});
  cs.push_back({grids.front().first, grids.front().second, 1, 2, update_strategy::packets, deal++, 2});
  return cs;
}

template <class T>
convergent_matrix<T> make_matrix(const config& c) {
  convergent_matrix_options o;
  o.reproducible = true;
  o.strategy = c.strategy;
  o.buffer_cap = 4 << 10;  // small: packets travel while updating
  o.coalesce_bytes = 512;
  return convergent_matrix<T>(M, N, process_grid(world().mpi_comm(), c.pr, c.pc), c.mb, c.nb, o);
}

// Every random contribution cancels exactly against its negation, so the
// exact sum of each element is its payload.
template <class T>
void paired_contributions_cancel() {
  const auto us = make_updates(42, 120);
  std::mt19937_64 g(99);
  auto big = [&] { return (g() & 1 ? -1.0 : 1.0) * std::ldexp(1.0 + double(g() >> 11) * 0x1p-53, 20 + int(g() % 21)); };
  std::vector<T> payload(std::size_t(M * N));
  for (auto& x : payload) {
    if constexpr (std::is_floating_point_v<T>)
      x = big();
    else
      x = T(big(), big());
  }
  std::vector<std::int64_t> all_r(M), all_c(N);
  for (std::int64_t i = 0; i < M; ++i) all_r[std::size_t(i)] = i;
  for (std::int64_t j = 0; j < N; ++j) all_c[std::size_t(j)] = j;
  for (const config& c : configs()) {
    auto A = make_matrix<T>(c);
    issue(A, us, c, true);
    if (rank_me() == int(c.deal % std::uint64_t(rank_n()))) A.update(payload.data(), M, all_r, all_c);
    A.commit();
    std::int64_t wrong = 0;
    for (std::int64_t j = 0; j < N; ++j)
      for (std::int64_t i = rank_me(); i < M; i += rank_n()) {
        const T a = A.get(i, j), b = payload[std::size_t(i + j * M)];
        wrong += std::memcmp(&a, &b, sizeof a) != 0;
      }
    EXPECT_EQ(wrong, 0) << "grid " << c.pr << "x" << c.pc << " blocks " << c.mb << "x" << c.nb;
  }
}

TEST(Reproducible, PairedContributionsCancelExactly) { paired_contributions_cancel<double>(); }
TEST(Reproducible, PairedContributionsCancelExactlyComplex) { paired_contributions_cancel<std::complex<double>>(); }

template <class T>
void identical_files(const char* type) {
  const auto us = make_updates(7, 150);
  std::vector<char> first;
  for (const config& c : configs()) {
    auto A = make_matrix<T>(c);
    issue(A, us, c, false);
    A.commit();
    // A second round on top of the first: the committed values are one
    // more contribution.
    issue(A, us, {c.pr, c.pc, c.mb, c.nb, c.strategy, c.deal + 17, c.threads}, false);
    A.commit();
    const std::string path = saved_path(std::string("cm_repro_") + type + "_tmp.bin");
    A.save(path);
    barrier();
    if (rank_me() == 0) {
      auto bytes = file_bytes(path);
      ASSERT_EQ(bytes.size(), std::size_t(M * N) * sizeof(T));
      if (first.empty())
        first = bytes;
      else
        EXPECT_TRUE(bytes == first) << type << ": grid " << c.pr << "x" << c.pc << " blocks " << c.mb << "x"
                                    << c.nb << " threads " << c.threads << " differs from the first configuration";
    }
    barrier();
  }
  // For cm_repro_compare: the same bytes from every P and node size.
  if (rank_me() == 0) {
    const char* ns = std::getenv("ACCRETE_NODE_SIZE");
    const char* simd = std::getenv("ACCRETE_SIMD");  // the kernels' build (src/assembly/simd.hpp)
    const std::string path = saved_path(std::string("cm_repro_") + type + "_np" + std::to_string(rank_n()) +
                                        "_node" + (ns ? ns : "0") + (simd ? std::string("_simd_") + simd : "") +
                                        ".bin");
    std::ofstream(path, std::ios::binary).write(first.data(), std::streamsize(first.size()));
  }
}

TEST(Reproducible, SameBytesEveryConfigurationDouble) { identical_files<double>("f64"); }
TEST(Reproducible, SameBytesEveryConfigurationFloat) { identical_files<float>("f32"); }
// Complex: real and imaginary parts are separate exact sums.
TEST(Reproducible, SameBytesEveryConfigurationComplexDouble) { identical_files<std::complex<double>>("c64"); }
TEST(Reproducible, SameBytesEveryConfigurationComplexFloat) { identical_files<std::complex<float>>("c32"); }

TEST(Reproducible, LocalValuesAndResetAndLoad) {
  const config c{1, rank_n(), 4, 4, update_strategy::packets, 3, 1};
  auto A = make_matrix<double>(c);
  // A value written through local() before the round is one contribution.
  for (std::int64_t k = 0; k < A.local_cols() * A.lld(); ++k) A.local()[k] = 1.0;
  barrier();  // before any process's updates reach this part
  if (rank_me() == 0) {
    A.update(0x1p-53, 0, 0);
    A.update(0x1p-53, 0, 0);
  }
  A.commit();
  EXPECT_EQ(A.get(0, 0), 1.0 + 0x1p-52);
  EXPECT_EQ(A.get(M - 1, N - 1), 1.0);  // untouched elements keep their value
  A.reset();
  EXPECT_EQ(A.get(0, 0), 0.0);
  if (rank_me() == 0) A.update(2.5, 3, 4);
  A.commit();
  EXPECT_EQ(A.get(3, 4), 2.5);
  EXPECT_EQ(A.get(0, 0), 0.0);
}

}  // namespace
