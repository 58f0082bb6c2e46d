// Transparent huge pages for large buffers accrete fills itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

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

// For vectors that grow in steps and are written right after each step:
// growing leaves the new elements uninitialised (a resize writes nothing;
// zero-filling the slot cache's 40-MB round-0 record cost a memset pass
// over memory written again at the first commit), and a large block is
// advised for huge pages (a page fault per 4 KiB of it otherwise).
template <class T>
struct fill_later_allocator {
  static_assert(std::is_trivially_default_constructible_v<T>);
  using value_type = T;
  fill_later_allocator() = default;
  template <class U>
  fill_later_allocator(const fill_later_allocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    T* p = std::allocator<T>{}.allocate(n);
    if (n * sizeof(T) >= 2 * huge_page_bytes) advise_huge_pages(p, n * sizeof(T));
    return p;
  }
  void deallocate(T* p, std::size_t n) noexcept { std::allocator<T>{}.deallocate(p, n); }
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... A>
  void construct(U* p, A&&... a) {
    ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
  }
  friend bool operator==(const fill_later_allocator&, const fill_later_allocator&) noexcept { return true; }
};
template <class T>
using fill_later_vector = std::vector<T, fill_later_allocator<T>>;

}  // namespace accrete::detail
