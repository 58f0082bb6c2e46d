// Transparent huge pages for large buffers accrete fills itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

#include <sys/mman.h>

namespace accrete::detail {

inline constexpr std::size_t huge_page_bytes = std::size_t{2} << 20;

// Asks the kernel to back the whole 2 MiB pages inside [p, p + bytes) with
// huge pages. A buffer written once from fresh memory otherwise takes a
// page fault, with its accounting, per 4 KiB: for the 100-MB arrays of a
// sparse pattern's first layout that was half the layout's time. Where
// transparent huge pages are off (enabled = never) madvise fails and
// nothing changes, so the result is ignored.
inline void advise_huge_pages(const void* p, std::size_t bytes) noexcept {
  const auto b = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t lo = (b + huge_page_bytes - 1) & ~std::uintptr_t(huge_page_bytes - 1);
  const std::uintptr_t hi = (b + bytes) & ~std::uintptr_t(huge_page_bytes - 1);
  if (lo < hi) (void)madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);
}

// v.reserve(n), the capacity advised (nothing for small ones).
template <class V>
void reserve_huge(V& v, std::size_t n) {
  v.reserve(n);
  if (v.capacity() * sizeof(typename V::value_type) >= 2 * huge_page_bytes)
    advise_huge_pages(v.data(), v.capacity() * sizeof(typename V::value_type));
}

struct huge_delete {
  void operator()(std::byte* p) const noexcept { ::operator delete[](p, std::align_val_t{huge_page_bytes}); }
};
using huge_buffer = std::unique_ptr<std::byte[], huge_delete>;

// `bytes` uninitialised, aligned to huge pages and, if `advise`, advised
// for them.
inline huge_buffer allocate_huge(std::size_t bytes, bool advise = true) {
  huge_buffer b(static_cast<std::byte*>(::operator new[](bytes, std::align_val_t{huge_page_bytes})));
  if (advise) advise_huge_pages(b.get(), bytes);
  return b;
}

}  // namespace accrete::detail
