#pragma once
// Scattered adds into distinct slots: the later rounds of sparse assembly
// (src/sparse/sparse_matrix.cpp) and the local-apply bound of
// bench/fe_assembly, which must use the same technique.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "assembly/repro.hpp"

namespace accrete::detail {

// dst[slot[k]] += src[k * stride] for k < n, the n slots pairwise distinct
// (a repeated slot would lose an add). Eight loads, then eight stores: in
// the plain loop each load may depend on the store before it, and a core
// that cannot rule that out early waits for the store's address (an AMD
// EPYC took 3.5x as long, with the targets in cache, and a finite-element
// round's scattered adds twice as long: bench/fe_assembly/README.md).
inline constexpr std::size_t add_batch = 8;

template <class T>
inline void add_scattered(T* __restrict dst, const std::int32_t* __restrict slot, const T* __restrict src,
                          std::ptrdiff_t stride, std::size_t n) {
  constexpr std::size_t b = add_batch;
  std::size_t k = 0;
  for (; k + b <= n; k += b) {
    T x[b];
    for (std::size_t j = 0; j < b; ++j) x[j] = dst[slot[k + j]] + src[std::ptrdiff_t(k + j) * stride];
    for (std::size_t j = 0; j < b; ++j) dst[slot[k + j]] = x[j];
  }
  for (; k < n; ++k) dst[slot[k]] += src[std::ptrdiff_t(k) * stride];
}

// An nr x nc block (entry (i, j) at src[i * rs + j * cs]) added into
// dst[slot[i * nc + j]]: the slots row by row, each row's pairwise
// distinct; a row may repeat. A contiguous row-major block goes as one run
// of nr * nc adds: its batches span rows, and a batch spanning rows i and
// i + 1 holds different column positions of each (nc >= the batch), so its
// slots differ even where row i + 1 repeats row i. Another block goes row
// by row, a call each. The slots keep the row order either way: a row's
// targets share cache lines, and the local-apply bound of bench/fe_assembly
// took 1.25-1.55x as long to add its elements in column order
// (bench/fe_assembly/README.md).
template <class T>
inline void add_scattered_rows(T* __restrict dst, const std::int32_t* __restrict slot, const T* __restrict src,
                               std::ptrdiff_t rs, std::ptrdiff_t cs, std::size_t nr, std::size_t nc) {
  if (cs == 1 && rs == std::ptrdiff_t(nc) && nc >= add_batch) {
    add_scattered(dst, slot, src, 1, nr * nc);
    return;
  }
  for (std::size_t i = 0; i < nr; ++i) add_scattered(dst, slot + i * nc, src + std::ptrdiff_t(i) * rs, cs, nc);
}

// The reproducible form of add_scattered for a real T, the n slots
// pairwise distinct: dst[slot[k]] += src[k * stride] where the sum is exact
// (TwoSum's error is zero, compared as bits without the sign, as
// add_if_exact in src/assembly/repro.hpp), else dst[slot[k]] keeps its value
// and spill(slot[k], src[k * stride]) is called. Two passes: the adds as
// add_scattered does them, each target's old value kept (in cache), then
// the checks from cache, undoing an add that rounded. A check next to its
// add waits on the target's load, and its six dependent operations per
// entry fill the core's window of instructions in flight, so fewer target
// misses overlap: reproducible later rounds of sparse assembly took 1.3x
// the default's time with the check next to the add, and the default's time
// without the check (bench/fe_assembly/README.md). The slots must be
// distinct for the undo: a repeated target's later add would build on the
// value undone.
template <class T, class Spill>
inline void add_scattered_exact(T* __restrict dst, const std::int32_t* __restrict slot, const T* __restrict src,
                                std::ptrdiff_t stride, std::size_t n, Spill&& spill) {
  static_assert(std::is_floating_point_v<T>);
  using bits = float_bits<T>;
  constexpr std::size_t b = add_batch, chunk = 64 * b;
  // GCC's vector extension (Clang has it too) for the checks, which GCC
  // otherwise leaves scalar.
  typedef T vec __attribute__((vector_size(b * sizeof(T))));
  typedef bits vbits __attribute__((vector_size(b * sizeof(bits))));
  alignas(64) T old[chunk];
  for (std::size_t c0 = 0; c0 < n; c0 += chunk) {
    const std::size_t m = std::min(chunk, n - c0);
    const std::int32_t* sl = slot + c0;
    const T* sx = src + std::ptrdiff_t(c0) * stride;
    auto x_at = [&](std::size_t k) { return sx[std::ptrdiff_t(k) * stride]; };
    std::size_t k = 0;
    for (; k + b <= m; k += b) {
      T y[b];
      for (std::size_t j = 0; j < b; ++j) y[j] = (old[k + j] = dst[sl[k + j]]) + x_at(k + j);
      for (std::size_t j = 0; j < b; ++j) dst[sl[k + j]] = y[j];
    }
    for (; k < m; ++k) dst[sl[k]] = (old[k] = dst[sl[k]]) + x_at(k);
    // The checks recompute each sum: the same operation on the same
    // operands gives the value stored.
    vbits err_any = {};
    k = 0;
    for (; k + b <= m; k += b) {
      vec a, x;
      std::memcpy(&a, old + k, sizeof a);
      for (std::size_t j = 0; j < b; ++j) x[j] = x_at(k + j);
      const vec sum = a + x, bb = sum - a;
      // two_sum_error_bits lane by lane; a cast between vector types of
      // one size keeps the bits.
      err_any |= (vbits)((a - (sum - bb)) + (x - bb));
    }
    err_any <<= 1;
    bits any = 0;
    for (std::size_t j = 0; j < b; ++j) any |= err_any[j];
    for (; k < m; ++k) any |= two_sum_error_bits(old[k], x_at(k));
    if (any == 0) continue;
    for (k = 0; k < m; ++k) {
      if (two_sum_error_bits(old[k], x_at(k)) == 0) continue;
      dst[sl[k]] = old[k];
      spill(sl[k], x_at(k));
    }
  }
}

// add_scattered_rows' block walk for add_scattered_exact; every slot of the
// block distinct when `all_distinct`, else only within each row.
template <class T, class Spill>
inline void add_scattered_exact_rows(T* __restrict dst, const std::int32_t* __restrict slot, const T* __restrict src,
                                     std::ptrdiff_t rs, std::ptrdiff_t cs, std::size_t nr, std::size_t nc,
                                     bool all_distinct, Spill&& spill) {
  if (all_distinct && cs == 1 && rs == std::ptrdiff_t(nc)) {
    add_scattered_exact(dst, slot, src, 1, nr * nc, spill);
    return;
  }
  for (std::size_t i = 0; i < nr; ++i)
    add_scattered_exact(dst, slot + i * nc, src + std::ptrdiff_t(i) * rs, cs, nc, spill);
}

}  // namespace accrete::detail
