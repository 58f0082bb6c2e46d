#pragma once
// Scattered adds into distinct slots: the later rounds of sparse assembly
// (src/sparse/sparse_matrix.cpp) and the local-apply bound of
// bench/fe_assembly, which must use the same technique.
#include <cstddef>
#include <cstdint>

namespace accrete::detail {

// dst[slot[k]] += src[k * stride] for k < n, the n slots pairwise distinct
// (a repeated slot would lose an add). Eight loads, then eight stores: in
// the plain loop each load may depend on the store before it, and a core
// that cannot rule that out early waits for the store's address (an AMD
// EPYC took 3.5x as long, with the targets in cache, and a finite-element
// round's scattered adds twice as long: bench/fe_assembly/README.md).
template <class T>
inline void add_scattered(T* __restrict dst, const std::int32_t* __restrict slot, const T* __restrict src,
                          std::ptrdiff_t stride, std::size_t n) {
  constexpr std::size_t b = 8;
  std::size_t k = 0;
  for (; k + b <= n; k += b) {
    T x[b];
    for (std::size_t j = 0; j < b; ++j) x[j] = dst[slot[k + j]] + src[std::ptrdiff_t(k + j) * stride];
    for (std::size_t j = 0; j < b; ++j) dst[slot[k + j]] = x[j];
  }
  for (; k < n; ++k) dst[slot[k]] += src[std::ptrdiff_t(k) * stride];
}

}  // namespace accrete::detail
