#pragma once
/// \file
// Global pointers: {rank, offset} into a process's shared segment.
// Lets this header include accrete/detail/ headers (see detail/internal.hpp).
#ifndef ACCRETE_PUBLIC_INCLUDE
#define ACCRETE_PUBLIC_INCLUDE
#define ACCRETE_PUBLIC_INCLUDE_GLOBAL_PTR
#endif

#include <algorithm>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <type_traits>

#include "accrete/detail/backend.hpp"
#include "accrete/error.hpp"

#ifdef ACCRETE_PUBLIC_INCLUDE_GLOBAL_PTR
#undef ACCRETE_PUBLIC_INCLUDE
#undef ACCRETE_PUBLIC_INCLUDE_GLOBAL_PTR
#endif

namespace accrete {

/// The kinds of memory a global pointer can name (UPC++'s memory kinds).
/// accrete's shared segments are host memory; the device kinds exist so
/// that code written for every kind builds, and no pointer of a device kind
/// is ever non-null. `any` is the kind parameter of a pointer that may name
/// memory of any kind.
enum class memory_kind { host, cuda_device, hip_device, ze_device, any };

template <class T, memory_kind Kind = memory_kind::host>
class global_ptr;

namespace detail {
/// From* converts to To* by pointer arithmetic alone: the same class up to
/// cv, void at either end, or two classes related by inheritance that is
/// not virtual (then the cast back is a static_cast too). A virtual base's
/// place is found through the object itself, which a global pointer does
/// not reach.
template <class To, class From>
concept cast_by_arithmetic = std::is_void_v<To> || std::is_void_v<From> ||
    std::is_same_v<std::remove_cv_t<To>, std::remove_cv_t<From>> ||(
        requires(std::remove_cv_t<From>* f) { static_cast<std::remove_cv_t<To>*>(f); } &&
        requires(std::remove_cv_t<To> * t) { static_cast<std::remove_cv_t<From>*>(t); });

/// What static_cast<To*> adds to the address of a From (the offset of a
/// base class within its derived class, or its negation). Computed on an
/// address that holds no object: with inheritance that is not virtual the
/// cast only adds a constant and reads nothing (so the vptr check of
/// UBSan, which would read, is off here).
template <class To, class From>
requires cast_by_arithmetic<To, From>
#if defined(__clang__) || defined(__GNUC__)
__attribute__((no_sanitize("vptr")))
#endif
inline std::ptrdiff_t
cast_delta() noexcept {
  if constexpr (std::is_void_v<To> || std::is_void_v<From> ||
                std::is_same_v<std::remove_cv_t<To>, std::remove_cv_t<From>>) {
    return 0;
  } else {
    const std::uintptr_t somewhere = std::uintptr_t{1} << 20;  // aligned for any class
    auto* f = reinterpret_cast<std::remove_cv_t<From>*>(somewhere);
    return std::ptrdiff_t(reinterpret_cast<std::uintptr_t>(static_cast<std::remove_cv_t<To>*>(f)) - somewhere);
  }
}

struct gp_access {
  template <class T, memory_kind Kind = memory_kind::host>
  static global_ptr<T, Kind> make(int rank, std::uint64_t offset) {
    global_ptr<T, Kind> g;
    g.rank_ = rank;
    g.offset_ = offset;
    return g;
  }
};
}  // namespace detail

/// A pointer to an object of type T in some process's shared segment.
/// Copyable, comparable, supports pointer arithmetic within one segment.
/// Never dereferenced implicitly: communication is explicit (rput/rget/...),
/// and `local()` gives a raw pointer when the target shares the caller's
/// node. A default-constructed global_ptr is null. T may be incomplete
/// until arithmetic needs its size.
///
/// `Kind` is the kind of memory it may name: `host` (the default, and the
/// only kind communication functions take) or `any` (what a host pointer
/// converts to implicitly; back with `static_kind_cast`/`dynamic_kind_cast`).
template <class T, memory_kind Kind>
class global_ptr {
 public:
  /// The pointee type.
  using element_type = T;
  /// The kind parameter.
  static constexpr memory_kind kind = Kind;
  /// A null pointer.
  global_ptr() = default;
  /// A null pointer.
  global_ptr(std::nullptr_t) {}
  /// Conversion to a pointer to const or to a base class (the offset moves
  /// to the base's place in the object, as static_cast moves an address; a
  /// virtual base is not reachable so), and from a pointer of one kind to
  /// `any`. A pointer to void is not made implicitly: use
  /// reinterpret_pointer_cast.
  template <class U, memory_kind K>
  requires((!std::is_same_v<U, T> || K != Kind) && std::is_convertible_v<U*, T*> && detail::cast_by_arithmetic<T, U> &&
           (K == Kind || Kind == memory_kind::any)) global_ptr(const global_ptr<U, K>& o)
      : rank_(o.where()),
        offset_(o.is_null() ? o.offset() : o.offset() + static_cast<std::uint64_t>(detail::cast_delta<T, U>())) {}

  /// Whether the pointer is null.
  bool is_null() const noexcept { return rank_ < 0; }
  /// Whether the pointer is not null.
  explicit operator bool() const noexcept { return !is_null(); }
  /// The rank whose segment holds the object (-1 when null).
  int where() const noexcept { return rank_; }
  /// Byte offset from the start of that segment.
  std::uint64_t offset() const noexcept { return offset_; }
  /// The kind of memory the pointer names: always host here (null
  /// pointers included, as in UPC++).
  memory_kind dynamic_kind() const noexcept { return memory_kind::host; }
  /// True when the target's memory is directly addressable by the caller
  /// (same node, or the caller itself), and for a null pointer (as in
  /// UPC++: localizing a null pointer gives the null raw pointer).
  bool is_local() const noexcept { return rank_ < 0 || detail::is_node_local(rank_); }
  /// Checks that the pointer can be used (UPC++'s `check`): null when
  /// `allow_null`, otherwise naming an object of T that lies inside a live
  /// rank's segment at an offset aligned for T. Communicates nothing.
  /// Throws bad_global_ptr naming the rank and offset when it is not.
  void check(bool allow_null = true) const {
    if (is_null()) {
      if (allow_null) return;
      throw bad_global_ptr("accrete::global_ptr::check: the pointer is null");
    }
    detail::check_range("global_ptr::check", rank_, offset_, elem_size());
    // Segment bases are 64-byte aligned in every view, so up to that the
    // offset's alignment is the address's in every process.
    constexpr std::size_t align = [] {
      if constexpr (std::is_void_v<T>)
        return std::size_t(1);
      else
        return std::min<std::size_t>(alignof(T), 64);
    }();
    if (offset_ % align != 0)
      throw bad_global_ptr("accrete::global_ptr::check: offset " + std::to_string(offset_) + " of rank " +
                           std::to_string(rank_) + " is not aligned to " + std::to_string(align) + " bytes");
  }
  /// A raw pointer usable by the caller; nullptr for a null pointer.
  /// Throws bad_global_ptr when the target is not node-local.
  T* local() const {
    if (rank_ < 0) return nullptr;
    if (!detail::is_node_local(rank_))
      throw bad_global_ptr("accrete::global_ptr::local: rank " + std::to_string(rank_) +
                           " is not on the caller's node");
    return reinterpret_cast<T*>(detail::segment_base(rank_) + offset_);
  }

  /// Pointer arithmetic in elements of T (bytes for void), within the
  /// target's segment: nothing checks the result until it is used.
  ///@{
  global_ptr& operator+=(std::ptrdiff_t n) {
    offset_ += std::uint64_t(n * std::ptrdiff_t(elem_size()));
    return *this;
  }
  global_ptr& operator-=(std::ptrdiff_t n) { return *this += -n; }
  global_ptr& operator++() { return *this += 1; }
  global_ptr& operator--() { return *this -= 1; }
  global_ptr operator++(int) {
    auto t = *this;
    ++*this;
    return t;
  }
  global_ptr operator--(int) {
    auto t = *this;
    --*this;
    return t;
  }
  friend global_ptr operator+(global_ptr p, std::ptrdiff_t n) { return p += n; }
  friend global_ptr operator+(std::ptrdiff_t n, global_ptr p) { return p += n; }
  friend global_ptr operator-(global_ptr p, std::ptrdiff_t n) { return p -= n; }
  ///@}
  /// Element distance; both pointers must point into the same segment.
  friend std::ptrdiff_t operator-(const global_ptr& a, const global_ptr& b) {
    if (a.rank_ != b.rank_)
      throw bad_global_ptr("accrete::global_ptr: difference of pointers into ranks " + std::to_string(a.rank_) +
                           " and " + std::to_string(b.rank_));
    return (std::ptrdiff_t(a.offset_) - std::ptrdiff_t(b.offset_)) / std::ptrdiff_t(elem_size());
  }
  /// Equal when both are null or name the same rank and offset.
  friend bool operator==(const global_ptr&, const global_ptr&) = default;
  /// Ordered by rank, then offset (a total order, for containers).
  friend auto operator<=>(const global_ptr&, const global_ptr&) = default;
  /// Prints `global_ptr(rank R, offset O)`.
  friend std::ostream& operator<<(std::ostream& os, const global_ptr& p) {
    return os << "global_ptr(rank " << p.rank_ << ", offset " << p.offset_ << ")";
  }

 private:
  friend struct detail::gp_access;
  static constexpr std::size_t elem_size() {
    if constexpr (std::is_void_v<T>)
      return 1;
    else
      return sizeof(T);
  }
  int rank_ = -1;
  std::uint64_t offset_ = 0;
};

/// Reinterprets a global pointer as pointing to another type (of the same
/// kind).
template <class T, class U, memory_kind Kind>
global_ptr<T, Kind> reinterpret_pointer_cast(const global_ptr<U, Kind>& p) {
  if (p.is_null()) return {};
  return detail::gp_access::make<T, Kind>(p.where(), p.offset());
}

/// The same pointer with kind parameter `To`, unchecked: the caller knows
/// the memory is of kind `To` (UPC++'s static_kind_cast).
template <memory_kind To, class T, memory_kind From>
global_ptr<T, To> static_kind_cast(const global_ptr<T, From>& p) {
  if (p.is_null()) return {};
  return detail::gp_access::make<T, To>(p.where(), p.offset());
}

/// The same pointer with kind parameter `To` when the memory it names is
/// of that kind (or `To` is `any`); otherwise null (UPC++'s
/// dynamic_kind_cast).
template <memory_kind To, class T, memory_kind From>
global_ptr<T, To> dynamic_kind_cast(const global_ptr<T, From>& p) {
  if (To != memory_kind::any && p.dynamic_kind() != To) return {};
  return static_kind_cast<To>(p);
}

/// The global pointer for a raw pointer into a node-local segment (the
/// caller's own or a node peer's); the null global pointer for any other
/// address (UPC++'s try_global_ptr).
template <class T>
global_ptr<T> try_global_ptr(T* p) {
  detail::require_initialized("try_global_ptr()");
  if (!p) return {};
  auto a = reinterpret_cast<const std::byte*>(p);
  for (int r = 0; r < detail::world_size(); ++r) {
    const std::byte* b = detail::segment_base(r);
    if (b && a >= b && a < b + detail::segment_bytes()) return detail::gp_access::make<T>(r, std::uint64_t(a - b));
  }
  return {};
}

/// As try_global_ptr, but an address outside every node-local segment
/// throws bad_global_ptr (a null p gives the null global pointer).
template <class T>
global_ptr<T> to_global_ptr(T* p) {
  detail::require_initialized("to_global_ptr()");
  global_ptr<T> g = try_global_ptr(p);
  if (p && g.is_null()) throw bad_global_ptr("accrete::to_global_ptr: address is not inside a node-local segment");
  return g;
}

}  // namespace accrete

// Doxygen 1.9 cannot place this specialization of std::hash: hidden from it.
/// \cond
/// Hash of a global pointer (rank and offset), for unordered containers.
template <class T, accrete::memory_kind Kind>
struct std::hash<accrete::global_ptr<T, Kind>> {
  /// The hash value.
  std::size_t operator()(const accrete::global_ptr<T, Kind>& p) const noexcept {
    return std::hash<std::uint64_t>{}(p.offset() * 1000003u + std::uint64_t(p.where()));
  }
};
/// \endcond
