#pragma once
// Order-independent exact accumulation for reproducible assembly
// (convergent_matrix_options::reproducible; design and error bound in
// docs/semantics.md, "Reproducible assembly").
//
// Every finite double is an integer m (53 bits) times a power of two, so its
// bits sit at fixed positions of one global grid: position p weighs
// 2^(p - 1074), and p runs over 0..2097. The grid is cut into 32-bit bins.
// An element keeps the index of the highest bin any of its contributions
// reached (`top`) and four signed 64-bit integer sums, one per bin top,
// top-1, top-2, top-3. A contribution adds its (at most three) 32-bit
// slices to the sums of their bins; slices below bin top-3 are dropped.
//
// Why the result depends only on the multiset of contributions: integer
// addition is associative and commutative, `top` is a maximum, and a limb
// is never carried into its neighbour before the round ends, so a limb
// always holds exactly the sum of the slices of its bin. When a larger
// contribution raises `top`, the limbs that fall out of the window are
// exactly the slices that a window placed there from the start would have
// dropped. Carries are resolved once, at commit, by round_to<T>, which
// rounds the exact integer to nearest-even once.
//
// Headroom: slices are below 2^32, so a limb holds 2^31 contributions to
// one element in one round before it could overflow; an overflow is
// detected and turns the element into NaN (never a silently wrong value).
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace accrete::detail {

struct repro_acc {
  std::int32_t top1;     // highest bin reached + 1; 0 = no contribution yet (memset-zero is empty)
  std::uint32_t flags;   // non-finite or overflow seen: repro_pos_inf | repro_neg_inf | repro_nan
  std::int64_t limb[4];  // limb[k]: sum of the slices of bin (top1 - 1 - k)
};
static_assert(sizeof(repro_acc) == 40);

inline constexpr std::uint32_t repro_pos_inf = 1, repro_neg_inf = 2, repro_nan = 4;

inline bool repro_empty(const repro_acc& a) noexcept { return a.top1 == 0 && a.flags == 0; }

inline void repro_add(repro_acc& a, double x) noexcept {
  const std::uint64_t bits = std::bit_cast<std::uint64_t>(x);
  const unsigned bexp = unsigned(bits >> 52) & 0x7ffu;
  std::uint64_t m = bits & ((std::uint64_t{1} << 52) - 1);
  const bool neg = (bits >> 63) != 0;
  if (bexp == 0x7ffu) {
    a.flags |= m ? repro_nan : (neg ? repro_neg_inf : repro_pos_inf);
    return;
  }
  if (bexp) m |= std::uint64_t{1} << 52;
  if (!m) return;                             // +-0 contributes nothing
  const int pos = bexp ? int(bexp) - 1 : 0;  // grid position of m's bit 0
  const int vtop = (pos + 63 - std::countl_zero(m)) >> 5;
  int top = a.top1 - 1;
  if (vtop > top) {
    const int d = top < 0 ? 4 : vtop - top;
    for (int k = 3; k >= 0; --k) a.limb[k] = k >= d ? a.limb[k - d] : 0;
    a.top1 = vtop + 1;
    top = vtop;
  }
  // Three slices, lowest first, in bins b0, b0 + 1, b0 + 2; none is above
  // `top` (vtop <= top), the low ones may fall below the window.
  const unsigned __int128 u = static_cast<unsigned __int128>(m) << (pos & 31);
  std::int64_t sl[3] = {std::int64_t(std::uint64_t(u) & 0xffffffffu), std::int64_t(std::uint64_t(u >> 32) & 0xffffffffu),
                        std::int64_t(std::uint64_t(u >> 64))};
  const int k0 = top - (pos >> 5);  // limb of the lowest slice
  bool over = false;
  for (int j = 0; j < 3; ++j) {
    const int k = k0 - j;
    if (k >= 0 && k <= 3) over |= __builtin_add_overflow(a.limb[k], neg ? -sl[j] : sl[j], &a.limb[k]);
  }
  if (over) a.flags |= repro_nan;
}

namespace repro_impl {
// Bits [lo, lo + 64) of a little-endian number of five 32-bit digits.
inline std::uint64_t bits64(const std::uint32_t* d, int lo) noexcept {
  const int w = lo >> 5;
  unsigned __int128 x = 0;
  for (int i = 2; i >= 0; --i) x = (x << 32) | (w + i < 5 ? d[w + i] : 0u);
  return std::uint64_t(x >> (lo & 31));
}
// Whether any of bits [0, n) is set.
inline bool any_below(const std::uint32_t* d, int n) noexcept {
  for (int i = 0; i < 5 && n > 0; ++i, n -= 32)
    if (d[i] & (n >= 32 ? 0xffffffffu : ((1u << n) - 1))) return true;
  return false;
}
}  // namespace repro_impl

/// The element's exact (windowed) sum rounded once to nearest-even T: the
/// general path (any magnitude, subnormal results). repro_round below is
/// the fast path for the common case and falls back to this.
template <class T>
T repro_round_exact(const repro_acc& a) noexcept {
  if (a.flags & repro_nan || (a.flags & (repro_pos_inf | repro_neg_inf)) == (repro_pos_inf | repro_neg_inf))
    return std::numeric_limits<T>::quiet_NaN();
  if (a.flags) return a.flags & repro_pos_inf ? std::numeric_limits<T>::infinity() : -std::numeric_limits<T>::infinity();
  if (a.top1 == 0) return T(0);
  // Resolve carries: limbs 1..3 into [0, 2^32), the signed rest into limb 0.
  std::int64_t L[4] = {a.limb[0], a.limb[1], a.limb[2], a.limb[3]};
  for (int k = 3; k >= 1; --k) {
    const std::int64_t c = L[k] >> 32;  // floor division (C++20: arithmetic shift)
    L[k] &= 0xffffffff;
    if (__builtin_add_overflow(L[k - 1], c, &L[k - 1])) return std::numeric_limits<T>::quiet_NaN();
  }
  // 160-bit two's complement, then magnitude.
  std::uint32_t d[5] = {std::uint32_t(L[3]), std::uint32_t(L[2]), std::uint32_t(L[1]), std::uint32_t(L[0]),
                        std::uint32_t(std::uint64_t(L[0]) >> 32)};
  const bool neg = L[0] < 0;
  if (neg) {
    std::uint64_t carry = 1;
    for (auto& x : d) {
      const std::uint64_t v = std::uint64_t(~x) + carry;
      x = std::uint32_t(v);
      carry = v >> 32;
    }
  }
  int h = -1;  // highest set bit
  for (int i = 4; i >= 0 && h < 0; --i)
    if (d[i]) h = 32 * i + 31 - std::countl_zero(d[i]);
  if (h < 0) return T(0);
  constexpr int digits = std::numeric_limits<T>::digits;
  constexpr int qmin = std::numeric_limits<T>::min_exponent - digits + 1074;  // position of T's smallest subnormal
  const int base = 32 * (a.top1 - 1 - 3);                                       // grid position of bit 0 of d
  const int q = std::max(base + h - (digits - 1), qmin);                        // grid position of the result's last bit
  std::uint64_t mant;
  if (q <= base) {
    mant = repro_impl::bits64(d, 0) << (base - q);  // exact: at most `digits` bits
  } else {
    const int s = q - base;
    mant = repro_impl::bits64(d, s) & ((std::uint64_t{1} << (digits + 1)) - 1);
    const bool half = (repro_impl::bits64(d, s - 1) & 1) != 0;
    if (half && ((mant & 1) || repro_impl::any_below(d, s - 1))) ++mant;
  }
  const T r = std::ldexp(T(mant), q - 1074);
  return neg ? -r : r;
}

/// repro_round_exact, faster when the sum fits in 127 bits and the result
/// is a normal number: the integer is converted in one correctly rounded
/// step (GCC's __int128 conversion rounds to nearest-even) and scaled
/// exactly by a power of two.
template <class T>
T repro_round(const repro_acc& a) noexcept {
  if (a.flags || a.top1 == 0 || a.limb[0] >= (std::int64_t{1} << 30) || a.limb[0] <= -(std::int64_t{1} << 30) ||
      a.limb[1] >= (std::int64_t{1} << 62) || a.limb[1] <= -(std::int64_t{1} << 62) ||
      a.limb[2] >= (std::int64_t{1} << 62) || a.limb[2] <= -(std::int64_t{1} << 62) ||
      a.limb[3] >= (std::int64_t{1} << 62) || a.limb[3] <= -(std::int64_t{1} << 62))
    return repro_round_exact<T>(a);
  // |v| < 2^126 + 3 * 2^126: no overflow of the signed 128-bit sum.
  const __int128 v = (static_cast<__int128>(a.limb[0]) << 96) + (static_cast<__int128>(a.limb[1]) << 64) +
                     (static_cast<__int128>(a.limb[2]) << 32) + static_cast<__int128>(a.limb[3]);
  const T r = std::ldexp(static_cast<T>(v), 32 * (a.top1 - 1 - 3) - 1074);
  if (std::fabs(r) < std::numeric_limits<T>::min() && r != 0) return repro_round_exact<T>(a);  // subnormal: one rounding only
  return r;
}

}  // namespace accrete::detail
