#pragma once
// The element loops of assembly (plain sums and reproducible sums), built
// twice on x86-64: for the build's instruction set (SSE2) and for AVX2,
// picked once at run time (simd_level()).
//
// Why two builds: the adds land as short runs (16 floats at bench_hessian's
// `paper`) in columns pages apart, and the loop is bound by how many of
// those misses the core keeps in flight. That is set by how many
// instructions a run costs: a column of 64 runs as one call with 8-wide
// adds kept about twice as many runs in flight as 4-wide adds, one call per
// run (bench/hessian/README.md, "Design notes": "AVX2 kernels, a column per
// call").
//
// Results are the same bits in either build: IEEE additions are element by
// element whatever the vector width, and no FMA is enabled (nothing to
// contract: the kernels only add). The reproducible check is exact in both
// (see add_runs_exact).
#include <cstddef>
#include <cstdint>
#include <complex>
#include <cstring>
#include <type_traits>

#include "assembly/repro.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace accrete::detail {

// The real type under an element type: sums of complex numbers are sums of
// their components, so reproducible assembly runs on the components
// (`width` of them per element, contiguous as std::complex guarantees).
template <class T>
struct real_of {
  using type = T;
};
template <class R>
struct real_of<std::complex<R>> {
  using type = R;
};
template <class T>
using real_t = typename real_of<T>::type;
template <class T>
constexpr int width = int(sizeof(T) / sizeof(real_t<T>));
template <class T>
constexpr bool exact_capable = std::is_same_v<real_t<T>, float> || std::is_same_v<real_t<T>, double>;

/// The vector instruction set of the assembly kernels.
enum class simd_isa { baseline, avx2 };

/// avx2 when the CPU has it and ACCRETE_SIMD is unset, empty or `auto`;
/// baseline when ACCRETE_SIMD=baseline (or on a CPU or build without it).
/// Read once; any other value throws accrete::error naming the variable and
/// the value (init calls simd_isa_from_env, so it fails there).
simd_isa simd_level();
simd_isa simd_isa_from_env();

#if defined(__x86_64__) && defined(__GNUC__)
#define ACCRETE_SIMD_AVX2 1
#endif

/// A run for callers with no index_run of their own (src/assembly/kernels.hpp):
/// `len` elements from element `loc` of the target and `pos` of the source.
struct simd_run {
  std::int32_t loc, pos, len;
};

// dst[ru.loc * w + k] += src[ru.pos * w + k], k < ru.len * w, for each run
// (w components per element: complex sums are sums of the components).
template <class R, class Run>
[[gnu::always_inline]] inline void add_runs_body(R* __restrict dst, const R* __restrict src, const Run* runs,
                                                 std::size_t n, int w) {
  for (std::size_t r = 0; r < n; ++r) {
    R* __restrict d = dst + std::int64_t(runs[r].loc) * w;
    const R* __restrict s = src + std::int64_t(runs[r].pos) * w;
    const std::int32_t len = runs[r].len * w;
    for (std::int32_t k = 0; k < len; ++k) d[k] += s[k];
  }
}

#ifdef ACCRETE_SIMD_AVX2
// Whether any lane of a comparison mask is set. One vptest (or pmovmskb)
// instead of spilling the mask to integers and or-ing them: that took more
// instructions than the check itself, and fewer instructions per run keep
// more of the runs' target misses in flight. Not always_inline: the AVX2
// one inlines once add_runs_exact_body has inlined into the AVX2 kernel.
[[gnu::target("avx2")]] inline bool any_lane(__m256i m) noexcept { return !_mm256_testz_si256(m, m); }
inline bool any_lane(__m128i m) noexcept { return _mm_movemask_epi8(m) != 0; }
#endif
template <int VB, class M>
[[gnu::always_inline]] inline bool any_lane_of(const M& m) noexcept {
#ifdef ACCRETE_SIMD_AVX2
  if constexpr (VB == 32) return any_lane(reinterpret_cast<__m256i>(m));
  if constexpr (VB == 16) return any_lane(reinterpret_cast<__m128i>(m));
#endif
  std::uint64_t words[VB / 8];
  std::memcpy(words, &m, VB);
  std::uint64_t any = 0;
  for (std::uint64_t q : words) any |= q;
  return any != 0;
}

// The same where each sum is exact in R; spill(i, v) is called for the
// others, i the component's offset from dst and v the contribution left
// out (dst keeps its value there). Two vectors of VB bytes are added and
// stored when all their sums are exact (one branch per 16 floats with
// AVX2: bench_hessian's `paper` run is one such pair); else their elements
// are redone one by one with TwoSum (add_if_exact). The vector check:
// x = a + b is exact iff x - a == b and x - b == a. If |a| >= |b|, x - a is
// computed exactly (Dekker), so it equals b only if x is the exact sum, and
// symmetrically for |b| >= |a|; an exact x makes both differences exact.
// NaN, an infinite operand and an overflow fail a comparison: not exact,
// as in TwoSum.
template <int VB, class R, class Run, class Spill>
[[gnu::always_inline]] inline void add_runs_exact_body(R* __restrict dst, const R* __restrict src, const Run* runs,
                                                       std::size_t n, int w, Spill& spill) {
  static_assert(std::is_same_v<R, float> || std::is_same_v<R, double>);
  constexpr int lanes = VB / int(sizeof(R));
  using vec [[gnu::vector_size(VB)]] = R;
  for (std::size_t r = 0; r < n; ++r) {
    const std::int64_t at = std::int64_t(runs[r].loc) * w;
    R* __restrict d = dst + at;
    const R* __restrict s = src + std::int64_t(runs[r].pos) * w;
    const std::int32_t len = runs[r].len * w;
    std::int32_t k = 0;
    const auto one_by_one = [&](std::int32_t from, std::int32_t to) {
      for (std::int32_t j = from; j < to; ++j)
        if (!add_if_exact(d[j], s[j])) spill(at + j, s[j]);
    };
    for (; k + 2 * lanes <= len; k += 2 * lanes) {
      vec a0, b0, a1, b1;
      std::memcpy(&a0, d + k, VB);
      std::memcpy(&b0, s + k, VB);
      std::memcpy(&a1, d + k + lanes, VB);
      std::memcpy(&b1, s + k + lanes, VB);
      const vec x0 = a0 + b0, x1 = a1 + b1;
      const auto bad = (x0 - a0 != b0) | (x0 - b0 != a0) | (x1 - a1 != b1) | (x1 - b1 != a1);
      if (any_lane_of<VB>(bad)) {
        one_by_one(k, k + 2 * lanes);
        continue;
      }
      std::memcpy(d + k, &x0, VB);
      std::memcpy(d + k + lanes, &x1, VB);
    }
    if (k + lanes <= len) {
      vec a, b;
      std::memcpy(&a, d + k, VB);
      std::memcpy(&b, s + k, VB);
      const vec x = a + b;
      if (any_lane_of<VB>((x - a != b) | (x - b != a)))
        one_by_one(k, k + lanes);
      else
        std::memcpy(d + k, &x, VB);
      k += lanes;
    }
    one_by_one(k, len);
  }
}

template <class R, class Run>
[[gnu::noinline]] void add_runs_baseline(R* dst, const R* src, const Run* runs, std::size_t n, int w) {
  add_runs_body(dst, src, runs, n, w);
}
template <class R, class Run, class Spill>
[[gnu::noinline]] void add_runs_exact_baseline(R* dst, const R* src, const Run* runs, std::size_t n, int w,
                                               Spill& spill) {
  add_runs_exact_body<16>(dst, src, runs, n, w, spill);
}
#ifdef ACCRETE_SIMD_AVX2
template <class R, class Run>
[[gnu::noinline, gnu::target("avx2")]] void add_runs_avx2(R* dst, const R* src, const Run* runs, std::size_t n,
                                                          int w) {
  add_runs_body(dst, src, runs, n, w);
}
template <class R, class Run, class Spill>
[[gnu::noinline, gnu::target("avx2")]] void add_runs_exact_avx2(R* dst, const R* src, const Run* runs,
                                                                std::size_t n, int w, Spill& spill) {
  add_runs_exact_body<32>(dst, src, runs, n, w, spill);
}
#endif

/// Adds the runs of one target column (add_runs_body) with the kernels of
/// `isa`. One call per column, not per run: a call per run of 16 floats cost
/// a third more than the adds inlined, at any width.
template <class R, class Run>
inline void add_runs(simd_isa isa, R* dst, const R* src, const Run* runs, std::size_t n, int w = 1) {
#ifdef ACCRETE_SIMD_AVX2
  if (isa == simd_isa::avx2) return add_runs_avx2(dst, src, runs, n, w);
#endif
  (void)isa;
  add_runs_baseline(dst, src, runs, n, w);
}

/// Reproducible sums of one target column (add_runs_exact_body).
template <class R, class Run, class Spill>
inline void add_runs_exact(simd_isa isa, R* dst, const R* src, const Run* runs, std::size_t n, int w,
                           Spill&& spill) {
#ifdef ACCRETE_SIMD_AVX2
  if (isa == simd_isa::avx2) return add_runs_exact_avx2(dst, src, runs, n, w, spill);
#endif
  (void)isa;
  add_runs_exact_baseline(dst, src, runs, n, w, spill);
}

/// dst[k] += src[k] for the k < len whose sum is exact in T; calls
/// spill(k) for the others (dst[k] keeps its value). Runs of one or two (one
/// real or complex entry: the sparse kernels call this per entry) are
/// checked inline; a call cost the sparse matrix's reproducible later rounds
/// more than the adds.
template <class T, class Spill>
inline void add_run_exact(T* __restrict dst, const T* __restrict src, std::int32_t len, Spill&& spill) {
  if (len <= 2) {
    for (std::int32_t k = 0; k < len; ++k)
      if (!add_if_exact(dst[k], src[k])) spill(k);
    return;
  }
  const simd_run one{0, 0, len};
  add_runs_exact(simd_level(), dst, src, &one, 1, 1, [&](std::int64_t k, T) { spill(std::int32_t(k)); });
}

}  // namespace accrete::detail
