#pragma once
// Bitwise-reproducible assembly (convergent_matrix_options::reproducible;
// design, cost and limits in docs/semantics.md, "Reproducible assembly").
//
// The invariant: an element always holds an *exact* partial sum of its
// contributions. A contribution whose addition would round (checked with
// the error-free TwoSum) is not added; it is logged (element, value). At
// commit, each logged element's value and its logged contributions are
// summed exactly (exact_sum below) and rounded once. So the committed value
// is round(exact sum of all contributions) whichever contributions were
// added and which logged, that is whatever the order, P, grid or threads.
// Where sums are mostly exact (integers, fixed-point data) the log stays
// small and the cost is a vectorised check next to the add
// (src/assembly/simd.hpp, add_runs_exact).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace accrete::detail {

/// dst += src if the sum is exact in T (then true), else nothing. TwoSum
/// (Knuth): with s = a + b rounded to nearest, a + b == s exactly iff the
/// computed error is zero; compared as bits without the sign, so -0 counts
/// as exact, and a non-finite operand or an overflow (error NaN or inf)
/// does not.
template <class T>
using float_bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;

/// TwoSum's error of a + x as bits without the sign: zero exactly when the
/// rounded sum is exact (also for -0).
template <class T>
inline float_bits<T> two_sum_error_bits(T a, T x) noexcept {
  const T s = a + x, bb = s - a;
  return float_bits<T>(std::bit_cast<float_bits<T>>((a - (s - bb)) + (x - bb)) << 1);
}

template <class T>
inline bool add_if_exact(T& dst, T src) noexcept {
  const T a = dst;
  if (two_sum_error_bits(a, src) != 0) return false;
  dst = a + src;
  return true;
}

/// The sum of x[0..n) rounded once to nearest-even double, as exact_sum
/// gives it, in `out`; false (out untouched) where this shortcut does not
/// apply: a non-finite term, a term more than 60 bits below the largest,
/// more than 4096 terms, an exact sum of zero (its sign has rules), or a
/// result outside the normal range. Every term is then an integer (its
/// mantissa, shifted by at most 60 bits) times one power of two, and their
/// sum fits 128 bits. A logged element's terms are typically a few values of
/// similar size: exact_sum's 67 limbs, zeroed, carried and scanned per
/// element, made a sparse matrix's reproducible later rounds with general
/// values 17x the default's time (bench/fe_assembly/README.md).
inline bool round_sum_fast(const double* x, std::size_t n, double& out) noexcept {
  if (n == 0 || n > 4096) return false;
  int top = -1;  // the largest grid position of a term's bit 0 (exact_sum's grid)
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t bits = std::bit_cast<std::uint64_t>(x[i]);
    const int bexp = int(bits >> 52) & 0x7ff;
    if (bexp == 0x7ff) return false;
    if (bits << 1) top = std::max(top, bexp ? bexp - 1 : 0);
  }
  if (top < 0) return false;
  const int base = top - 60;
  __int128 sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t bits = std::bit_cast<std::uint64_t>(x[i]);
    if (!(bits << 1)) continue;
    const int bexp = int(bits >> 52) & 0x7ff;
    const int pos = bexp ? bexp - 1 : 0;
    if (pos < base) return false;
    std::uint64_t m = bits & ((std::uint64_t{1} << 52) - 1);
    if (bexp) m |= std::uint64_t{1} << 52;
    const __int128 t = static_cast<__int128>(m) << (pos - base);
    sum += (bits >> 63) ? -t : t;
  }
  if (sum == 0) return false;
  const bool neg = sum < 0;
  const unsigned __int128 a = neg ? -static_cast<unsigned __int128>(sum) : static_cast<unsigned __int128>(sum);
  const auto hi = std::uint64_t(a >> 64), lo = std::uint64_t(a);
  const int h = hi ? 127 - std::countl_zero(hi) : 63 - std::countl_zero(lo);  // highest set bit
  std::uint64_t mant;
  int shift = 0;
  if (h <= 52) {
    mant = lo;
  } else {
    shift = h - 52;
    mant = std::uint64_t(a >> shift);
    const unsigned __int128 rest = a & ((static_cast<unsigned __int128>(1) << shift) - 1);
    const unsigned __int128 half = static_cast<unsigned __int128>(1) << (shift - 1);
    if (rest > half || (rest == half && (mant & 1))) ++mant;  // to nearest, ties to even
  }
  // mant * 2^e, mant normalised to 53 bits (2^53 after a carry loses a
  // zero bit), written as the double's fields; a result outside the normal
  // range would need a second rounding (or overflows): declined.
  int e = shift + base - 1074;
  const int nb = 64 - std::countl_zero(mant);
  if (nb > 53) {
    mant >>= 1;
    ++e;
  } else if (nb < 53) {
    mant <<= 53 - nb;
    e -= 53 - nb;
  }
  const int lead = e + 52;
  if (lead < -1022 || lead > 1023) return false;
  const std::uint64_t bits =
      (std::uint64_t(neg) << 63) | (std::uint64_t(lead + 1023) << 52) | (mant & ((std::uint64_t{1} << 52) - 1));
  out = std::bit_cast<double>(bits);
  return true;
}

/// An exact sum of doubles: every finite double is an integer mantissa m
/// times 2^(p - 1074) for a grid position p in 0..2045; the grid is cut into
/// 32-bit bins and each bin keeps the signed 64-bit sum of the 32-bit slices
/// that fall into it (no carries until rounding, so 2^31 additions fit; an
/// overflow is detected and gives NaN). Transient, for logged elements only.
class exact_sum {
 public:
  static constexpr int bins = 67;  // positions 0..2097, plus one bin for carries

  void add(double x) noexcept {
    const std::uint64_t bits = std::bit_cast<std::uint64_t>(x);
    const unsigned bexp = unsigned(bits >> 52) & 0x7ffu;
    std::uint64_t m = bits & ((std::uint64_t{1} << 52) - 1);
    const bool neg = (bits >> 63) != 0;
    if (bexp == 0x7ffu) {
      flags_ |= m ? nan_ : (neg ? neg_inf_ : pos_inf_);
      return;
    }
    if (bexp) m |= std::uint64_t{1} << 52;
    if (!m) {
      all_neg_zero_ &= neg;  // IEEE: a sum of zeros is -0 only if every term is -0
      return;
    }
    all_neg_zero_ = false;
    const int pos = bexp ? int(bexp) - 1 : 0;  // grid position of m's bit 0
    const int b0 = pos >> 5;
    const unsigned __int128 u = static_cast<unsigned __int128>(m) << (pos & 31);
    for (int j = 0; j < 3; ++j) {
      const auto s = std::int64_t(std::uint64_t(u >> (32 * j)) & 0xffffffffu);
      if (s && __builtin_add_overflow(limb_[b0 + j], neg ? -s : s, &limb_[b0 + j])) flags_ |= nan_;
    }
    lo_ = std::min(lo_, b0);
    hi_ = std::max(hi_, b0 + 2);
  }

  /// The sum rounded once to nearest-even T (subnormal results included).
  template <class T>
  T round() noexcept {
    if (flags_ & nan_ || (flags_ & (pos_inf_ | neg_inf_)) == (pos_inf_ | neg_inf_))
      return std::numeric_limits<T>::quiet_NaN();
    if (flags_) return flags_ & pos_inf_ ? std::numeric_limits<T>::infinity() : -std::numeric_limits<T>::infinity();
    if (hi_ < lo_) return all_neg_zero_ ? -T(0) : T(0);
    // Resolve carries upwards: bins lo_..bins-2 into [0, 2^32), the signed
    // rest into the last bin (2098 + 32 bits: no double's sum overflows it).
    for (int b = lo_; b < bins - 1; ++b) {
      const std::int64_t c = limb_[b] >> 32;  // floor (C++20: arithmetic shift)
      limb_[b] &= 0xffffffff;
      if (__builtin_add_overflow(limb_[b + 1], c, &limb_[b + 1])) return std::numeric_limits<T>::quiet_NaN();
      if (b >= hi_ && c == 0) break;  // nothing more to carry
    }
    // Every bin below the last is now in [0, 2^32) (and the loop stops
    // early only once everything above is zero): the last bin's sign is
    // the sum's.
    const bool neg = limb_[bins - 1] < 0;
    // Two's complement of the whole number when negative (digits are the
    // low 32 bits of each bin, the last bin is sign-extended).
    std::uint32_t d[bins];
    for (int b = 0; b < bins; ++b) d[b] = b < lo_ ? 0u : std::uint32_t(limb_[b]);
    if (neg) {
      std::uint64_t carry = 1;
      for (auto& x : d) {
        const std::uint64_t v = std::uint64_t(~x) + carry;
        x = std::uint32_t(v);
        carry = v >> 32;
      }
    }
    int h = -1;  // highest set bit of the magnitude
    for (int b = bins - 1; b >= 0 && h < 0; --b)
      if (d[b]) h = 32 * b + 31 - std::countl_zero(d[b]);
    if (h < 0) return T(0);  // exact cancellation: +0 (IEEE, round to nearest)
    constexpr int digits = std::numeric_limits<T>::digits;
    constexpr int qmin = std::numeric_limits<T>::min_exponent - digits + 1074;  // T's smallest subnormal
    const int q = std::max(h - (digits - 1), qmin);                             // position of the result's last bit
    std::uint64_t mant = 0;
    if (q <= 0) {
      mant = bits64(d, 0) << -q;
    } else {
      mant = bits64(d, q) & ((std::uint64_t{1} << (digits + 1)) - 1);
      const bool half = (bits64(d, q - 1) & 1) != 0;
      if (half && ((mant & 1) || any_below(d, q - 1))) ++mant;
    }
    const T r = std::ldexp(T(mant), q - 1074);
    return neg ? -r : r;
  }

 private:
  static constexpr std::uint32_t pos_inf_ = 1, neg_inf_ = 2, nan_ = 4;
  static std::uint64_t bits64(const std::uint32_t* d, int lo) noexcept {  // bits [lo, lo + 64)
    const int w = lo >> 5;
    unsigned __int128 x = 0;
    for (int i = 2; i >= 0; --i) x = (x << 32) | (w + i < bins ? d[w + i] : 0u);
    return std::uint64_t(x >> (lo & 31));
  }
  static bool any_below(const std::uint32_t* d, int n) noexcept {  // any of bits [0, n)
    for (int i = 0; i < bins && n > 0; ++i, n -= 32)
      if (d[i] & (n >= 32 ? 0xffffffffu : ((1u << n) - 1))) return true;
    return false;
  }
  std::int64_t limb_[bins] = {};
  int lo_ = bins, hi_ = -1;  // bins touched
  std::uint32_t flags_ = 0;
  bool all_neg_zero_ = true;
};

/// x and the n values value(0..n) summed exactly and rounded once to R
/// (a logged element's settlement): round_sum_fast where it applies, else
/// exact_sum; both give the same bits.
template <class R, class Value>
R settle_sum(R x, std::size_t n, Value&& value) {
  if constexpr (std::is_same_v<R, double>) {
    constexpr std::size_t few = 64;
    if (n < few) {
      double terms[few];
      terms[0] = x;
      for (std::size_t k = 0; k < n; ++k) terms[1 + k] = value(k);
      double out;
      if (round_sum_fast(terms, n + 1, out)) return out;
    }
  }
  exact_sum acc;
  acc.add(double(x));
  for (std::size_t k = 0; k < n; ++k) acc.add(value(k));
  return acc.round<R>();
}

}  // namespace accrete::detail
