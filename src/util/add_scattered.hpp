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

}  // namespace accrete::detail
