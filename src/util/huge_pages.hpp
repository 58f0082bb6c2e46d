// Transparent huge pages for large buffers accrete fills itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <sys/mman.h>

namespace accrete::detail {

inline constexpr std::size_t huge_page_bytes = std::size_t{2} << 20;

// What a large buffer is for, which decides whether it is advised
// (ACCRETE_HUGE_PAGES, docs/cluster.md "Huge pages"):
// - target: storage that takes scattered updates for its whole life (a
//   sparse matrix's values, node-shared windows). Huge pages save a TLB
//   miss per scattered add; advised unless the mode is `none`.
// - buffer: memory written once in order and read in order (the piece log
//   and row references of a sparse matrix's round 0, its slot cache, its
//   pattern's columns). Huge pages save a page fault per 4 KiB there;
//   advised only in mode `all`, and advised against in `targets`, which is
//   for virtual machines whose host takes back free guest memory (free page
//   reporting): there the first touch of a huge page the host had taken
//   back ran at 0.5 GB/s against 2.3-3 GB/s in 4 KiB pages, and a sparse
//   round 0 (1.24 GB per process) took 3.8-4.5 s instead of 1.4-1.5 s
//   (bench/fe_assembly/README.md, "The first round in a new process").
enum class huge_use { target, buffer };
enum class huge_pages_mode { none, targets, all };

/// ACCRETE_HUGE_PAGES as given: `all`, `targets` or `none`, or nullopt for
/// `auto` (also when unset or empty); any other value throws accrete::error
/// naming the variable and the value (init calls it, so a bad value fails
/// there).
std::optional<huge_pages_mode> huge_pages_from_env();
/// The mode, decided once (noexcept: init has validated the variable):
/// `auto` is `targets` where host_takes_back_free_memory(), else `all`.
huge_pages_mode huge_pages_level() noexcept;
/// "all", "targets" or "none".
const char* huge_pages_name(huge_pages_mode m) noexcept;

// Whether this machine is a virtual machine whose host takes back the
// memory the guest frees: a virtio balloon device (virtio device id 5)
// bound to its driver with free page reporting negotiated
// (VIRTIO_BALLOON_F_REPORTING, feature bit 5; sysfs prints the features
// as a string of bits, bit 0 first). `sysfs` is the sysfs mount, a
// parameter so that a test can hand it a tree of its own.
bool host_takes_back_free_memory(const std::string& sysfs = "/sys");

inline bool huge_pages_for(huge_use u) noexcept {
  const huge_pages_mode m = huge_pages_level();
  return m == huge_pages_mode::all || (m == huge_pages_mode::targets && u == huge_use::target);
}

// Asks the kernel to back the whole 2 MiB pages inside [p, p + bytes) with
// huge pages, where the mode wants them for `u`. Memory written from fresh
// pages otherwise takes a page fault, with its accounting, per 4 KiB, and
// scattered updates a TLB miss per page touched. In mode `targets` a buffer
// is marked the other way (MADV_NOHUGEPAGE): where transparent huge pages
// are `always`, the kernel would otherwise give it huge pages unasked.
// Where they are off (enabled = never) madvise fails and nothing changes,
// so the result is ignored.
inline void advise_huge_pages(const void* p, std::size_t bytes, huge_use u) noexcept {
  int advice = MADV_HUGEPAGE;
  if (!huge_pages_for(u)) {
    if (huge_pages_level() != huge_pages_mode::targets) return;
    advice = MADV_NOHUGEPAGE;
  }
  const auto b = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t lo = (b + huge_page_bytes - 1) & ~std::uintptr_t(huge_page_bytes - 1);
  const std::uintptr_t hi = (b + bytes) & ~std::uintptr_t(huge_page_bytes - 1);
  if (lo < hi) (void)madvise(reinterpret_cast<void*>(lo), hi - lo, advice);
}

// v.reserve(n), the capacity advised for `u` (nothing for small ones).
template <class V>
void reserve_huge(V& v, std::size_t n, huge_use u) {
  v.reserve(n);
  if (v.capacity() * sizeof(typename V::value_type) >= 2 * huge_page_bytes)
    advise_huge_pages(v.data(), v.capacity() * sizeof(typename V::value_type), u);
}

struct huge_delete {
  void operator()(std::byte* p) const noexcept { ::operator delete[](p, std::align_val_t{huge_page_bytes}); }
};
using huge_buffer = std::unique_ptr<std::byte[], huge_delete>;

// `bytes` uninitialised, aligned to huge pages and, if `advise`, advised
// for them as a buffer.
inline huge_buffer allocate_huge(std::size_t bytes, bool advise) {
  huge_buffer b(static_cast<std::byte*>(::operator new[](bytes, std::align_val_t{huge_page_bytes})));
  if (advise) advise_huge_pages(b.get(), bytes, huge_use::buffer);
  return b;
}

// For vectors that grow in steps and are written right after each step:
// growing leaves the new elements uninitialised (a resize writes nothing;
// zero-filling the slot cache's 40-MB round-0 record cost a memset pass
// over memory written again at the first commit), and a large block is
// advised for huge pages as a buffer.
template <class T>
struct fill_later_allocator {
  static_assert(std::is_trivially_default_constructible_v<T>);
  using value_type = T;
  fill_later_allocator() = default;
  template <class U>
  fill_later_allocator(const fill_later_allocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    T* p = std::allocator<T>{}.allocate(n);
    if (n * sizeof(T) >= 2 * huge_page_bytes) advise_huge_pages(p, n * sizeof(T), huge_use::buffer);
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
