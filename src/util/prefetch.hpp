// Software prefetch of a byte range, for the kernels that know their next
// targets before the hardware prefetchers can (scattered columns, replayed
// records).
#pragma once

#include <cstddef>
#include <cstdint>

namespace accrete::detail {

// Every line of [p, p + bytes); `write` as __builtin_prefetch's rw (a
// constant there, so two calls). Always inlined, and so must be a caller
// that does nothing else: GCC 12 (-O2, IPA mod-ref) finds a function of
// prefetches alone free of side effects and deletes the call.
[[gnu::always_inline]] inline void prefetch_lines(const void* p, std::size_t bytes, bool write) {
  const auto e = reinterpret_cast<std::uintptr_t>(p) + bytes;
  for (auto a = reinterpret_cast<std::uintptr_t>(p) & ~std::uintptr_t(63); a < e; a += 64) {
    if (write)
      __builtin_prefetch(reinterpret_cast<const void*>(a), 1, 3);
    else
      __builtin_prefetch(reinterpret_cast<const void*>(a), 0, 3);
  }
}

}  // namespace accrete::detail
