#pragma once
/// \file
// Allocation in the caller's shared segment. Local and non-collective.
#include <cstddef>
#include <new>
#include <string>
#include <utility>

#include "accrete/global_ptr.hpp"

namespace accrete {

/// Allocates `bytes` (aligned to `alignment`, a power of two) in the
/// caller's segment. Throws segment_exhausted (requested vs free bytes) when
/// it does not fit. Not thread-safe. Requests of up to 1 KiB aligned to at
/// most 16 bytes are served from 64 KiB slabs of one size class (constant
/// time); the rest, first fit.
global_ptr<std::byte> allocate(std::size_t bytes, std::size_t alignment = alignof(std::max_align_t));
/// Releases memory from allocate(). The pointer must be the caller's own,
/// as returned by allocate (throws bad_global_ptr otherwise). Null is a no-op,
/// and so is any pointer after finalize(): the segment ended with the
/// runtime, so objects that free shared memory in their destructors may
/// outlive finalize() (deallocate, delete_ and delete_array alike).
///@{
void deallocate(global_ptr<std::byte> p);
template <class T>
void deallocate(global_ptr<T> p) {
  deallocate(reinterpret_pointer_cast<std::byte>(p));
}
///@}

/// Bytes in the caller's segment, and bytes currently allocated (each
/// allocation rounded up to 16 bytes, with its alignment padding, or to its
/// size class when it came from a slab). A slab's unused objects count as
/// free, though only requests of their class can take them while one of its
/// objects is live.
///@{
std::size_t segment_size();
std::size_t segment_used();
///@}

namespace detail {
/// The heap's dead state of UPC++'s experimental destroy_heap and
/// restore_heap (upcxx.hpp): while closed, allocate() throws
/// accrete::error naming `closer`; deallocate() still works, and
/// allocations made before stay where they are. Per process.
///@{
void close_heap(const char* closer);
void reopen_heap();
bool heap_closed() noexcept;
/// Live allocations of the caller (objects, not bytes).
std::size_t heap_live_objects() noexcept;
///@}
}  // namespace detail

/// Constructs one T in the caller's segment.
template <class T, class... Args>
global_ptr<T> new_(Args&&... args) {
  auto g = reinterpret_pointer_cast<T>(allocate(sizeof(T), alignof(T)));
  try {
    ::new (static_cast<void*>(g.local())) T(std::forward<Args>(args)...);
  } catch (...) {
    deallocate(g);
    throw;
  }
  return g;
}

/// Destroys and frees an object made by new_.
template <class T>
void delete_(global_ptr<T> p) {
  if (p.is_null() || detail::runtime_ended()) return;  // no destructor: the object went with its segment
  p.local()->~T();
  deallocate(p);
}

namespace detail {
// new_array keeps the element count just before the array so delete_array
// can run destructors; the header is a full alignment unit.
template <class T>
constexpr std::size_t array_header() {
  return alignof(T) > sizeof(std::size_t) ? alignof(T) : alignof(std::max_align_t);
}
}  // namespace detail

/// Default-constructs `n` T's in the caller's segment.
template <class T>
global_ptr<T> new_array(std::size_t n) {
  constexpr std::size_t h = detail::array_header<T>();
  if (n > (std::size_t(-1) - h) / sizeof(T))
    throw segment_exhausted("accrete::new_array: " + std::to_string(n) + " elements of " + std::to_string(sizeof(T)) +
                                " bytes overflow the address space",
                            std::size_t(-1), segment_size() - segment_used());
  auto raw = allocate(h + n * sizeof(T), h);
  std::byte* base = raw.local();
  *reinterpret_cast<std::size_t*>(base) = n;
  T* arr = reinterpret_cast<T*>(base + h);
  std::size_t i = 0;
  try {
    for (; i < n; ++i) ::new (static_cast<void*>(arr + i)) T();
  } catch (...) {
    while (i-- > 0) arr[i].~T();
    deallocate(raw);
    throw;
  }
  return reinterpret_pointer_cast<T>(raw + std::ptrdiff_t(h));
}

/// Destroys and frees an array made by new_array.
template <class T>
void delete_array(global_ptr<T> p) {
  if (p.is_null() || detail::runtime_ended()) return;  // as delete_
  constexpr std::size_t h = detail::array_header<T>();
  auto raw = reinterpret_pointer_cast<std::byte>(p) - std::ptrdiff_t(h);
  std::size_t n = *reinterpret_cast<std::size_t*>(raw.local());
  T* arr = p.local();
  for (std::size_t i = n; i-- > 0;) arr[i].~T();
  deallocate(raw);
}

}  // namespace accrete
