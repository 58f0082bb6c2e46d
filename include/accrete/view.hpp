#pragma once
/// \file
// view<T>: a sequence passed to an RPC without building a container.
//
// The sender makes a view over any range with make_view(begin, end) (the
// elements are serialized when the RPC is sent; the range need not outlive
// the call). The receiver's parameter is view<T> (= view<T,
// deserializing_iterator<T>>): for a T that travels as its bytes (trivially
// copyable, or declared trivially serializable under <upcxx/upcxx.hpp>) a
// non-owning span over the incoming message buffer (the iterator is const
// T*), valid during the RPC call or, when the callable returns a future,
// until that future is ready (UPC++'s lifetime extension). Do not keep it
// longer (copy the elements out instead). No copy is made on receipt when the data is suitably aligned in
// the buffer (always, for alignof(T) <= 16); otherwise, and for any other T,
// the view owns a private copy, which the iterator walks (deserialize_into
// constructs a copy of an element where the caller says, UPC++'s
// deserializing_iterator).
//
// A view's length is checked against the message: a length running past the
// buffer throws accrete::serialization_error naming the sender.
//
// Thread-safety: a view is a value; sharing one between threads for reading
// is safe.
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <new>
#include <optional>
#include <type_traits>
#include <vector>

#include "accrete/serialization.hpp"

namespace accrete {

namespace detail {
/// n elements' room, of which the first `made` are constructed (destroyed
/// with the array): a received view's elements.
template <class D>
struct element_array {
  static constexpr auto al = std::align_val_t(alignof(D));
  std::byte* room;
  std::size_t made = 0;
  explicit element_array(std::size_t n) : room(static_cast<std::byte*>(::operator new(n ? n * sizeof(D) : 1, al))) {}
  element_array(const element_array&) = delete;
  element_array& operator=(const element_array&) = delete;
  ~element_array() {
    for (std::size_t i = 0; i < made; ++i) std::launder(reinterpret_cast<D*>(at(i)))->~D();
    ::operator delete(room, al);
  }
  void* at(std::size_t i) const noexcept { return room + i * sizeof(D); }
  const D* first() const noexcept {
    return made ? std::launder(reinterpret_cast<const D*>(room)) : reinterpret_cast<const D*>(room);
  }
};
}  // namespace detail

/// The iterator of a received view of T when T is not trivially copyable:
/// random access over the elements the receiver read back (which the view
/// keeps alive), and deserialize_into, as UPC++'s deserializing_iterator.
template <class D>
class element_iterator {
 public:
  /// Iterator member types (random access, read only).
  ///@{
  using iterator_category = std::random_access_iterator_tag;
  using value_type = std::remove_cv_t<D>;
  using difference_type = std::ptrdiff_t;
  using pointer = const D*;
  using reference = const D&;
  ///@}
  /// A singular iterator.
  element_iterator() = default;
  /// At element `p`.
  explicit element_iterator(const D* p) noexcept : p_(p) {}
  /// Constructs the element at `storage` (room and alignment for a D) and
  /// returns it; the caller destroys it. UPC++ reads the element from the
  /// message again and never copies it (D may have no usable copy
  /// constructor), so the element the view holds is moved there: each
  /// element is taken once, and reads as moved-from afterwards.
  D* deserialize_into(void* storage) const {
    if constexpr (std::is_move_constructible_v<D>)
      return ::new (storage) D(std::move(*const_cast<D*>(p_)));
    else
      return ::new (storage) D(*p_);
  }
  /// The same into an optional (replacing any value it held), returning
  /// the element there.
  D& deserialize_into(std::optional<D>& storage) const {
    if constexpr (std::is_move_constructible_v<D>)
      return storage.emplace(std::move(*const_cast<D*>(p_)));
    else
      return storage.emplace(*p_);
  }
  /// The same over the live object `obj`, which is destroyed first;
  /// returns it (UPC++'s deserialize_overwrite).
  D& deserialize_overwrite(D& obj) const {
    std::destroy_at(std::addressof(obj));
    return *deserialize_into(static_cast<void*>(std::addressof(obj)));
  }
  /// The element's address.
  const D* base() const noexcept { return p_; }
  /// Random-access iterator operations.
  ///@{
  reference operator*() const noexcept { return *p_; }
  pointer operator->() const noexcept { return p_; }
  reference operator[](difference_type i) const noexcept { return p_[i]; }
  element_iterator& operator++() noexcept {
    ++p_;
    return *this;
  }
  element_iterator operator++(int) noexcept {
    auto t = *this;
    ++p_;
    return t;
  }
  element_iterator& operator--() noexcept {
    --p_;
    return *this;
  }
  element_iterator operator--(int) noexcept {
    auto t = *this;
    --p_;
    return t;
  }
  element_iterator& operator+=(difference_type n) noexcept {
    p_ += n;
    return *this;
  }
  element_iterator& operator-=(difference_type n) noexcept {
    p_ -= n;
    return *this;
  }
  friend element_iterator operator+(element_iterator i, difference_type n) noexcept { return i += n; }
  friend element_iterator operator+(difference_type n, element_iterator i) noexcept { return i += n; }
  friend element_iterator operator-(element_iterator i, difference_type n) noexcept { return i -= n; }
  friend difference_type operator-(element_iterator a, element_iterator b) noexcept { return a.p_ - b.p_; }
  friend bool operator==(element_iterator a, element_iterator b) noexcept { return a.p_ == b.p_; }
  friend auto operator<=>(element_iterator a, element_iterator b) noexcept { return a.p_ <=> b.p_; }
  ///@}

 private:
  const D* p_ = nullptr;
};

/// How a received view of T is walked: const T* when T travels as its bytes
/// (the view may point into the message), else element_iterator over the
/// elements read back. UPC++'s deserializing_iterator<T>.
template <class T>
using deserializing_iterator =
    std::conditional_t<detail::flat_bytes<std::remove_cv_t<T>>, const deserialized_type_t<T>*,
                       element_iterator<detail::member_deserialized_t<T>>>;

/// A sequence of `size()` elements of T between two iterators of type Iter.
/// view<T> is what a received view arrives as.
template <class T, class Iter = deserializing_iterator<T>>
class view {
 public:
  /// Container-like member types (the elements are read only).
  ///@{
  using value_type = T;
  using iterator = Iter;
  using const_iterator = Iter;
  using size_type = std::size_t;
  ///@}

  /// An empty view.
  view() = default;
  /// The n elements [b, e) (make_view computes n).
  view(Iter b, Iter e, std::size_t n) : b_(b), e_(e), n_(n) {}

  /// The elements, in order.
  ///@{
  Iter begin() const { return b_; }
  Iter end() const { return e_; }
  ///@}
  /// Number of elements.
  std::size_t size() const noexcept { return n_; }
  /// Whether the view has no element.
  bool empty() const noexcept { return n_ == 0; }

  /// Contiguous views (Iter = const T*) only: the elements as an array.
  const T* data() const requires std::is_same_v<Iter, const T*> { return b_; }
  /// Element i (random-access iterators: every received view).
  decltype(auto) operator[](std::size_t i) const requires std::random_access_iterator<Iter> {
    return b_[std::iter_difference_t<Iter>(i)];
  }

  /// Internal: a view that keeps storage alive (receiver-side copies).
  view(Iter b, Iter e, std::size_t n, std::shared_ptr<const void> keep) : b_(b), e_(e), n_(n), keep_(std::move(keep)) {}

 private:
  Iter b_{};
  Iter e_{};
  std::size_t n_ = 0;
  std::shared_ptr<const void> keep_;
};

/// A view of [begin, end) for serialization.
template <class It>
view<std::iter_value_t<It>, It> make_view(It begin, It end) {
  auto n = std::distance(begin, end);
  return view<std::iter_value_t<It>, It>(begin, end, std::size_t(n));
}

/// A view of a whole container or array.
template <class C>
auto make_view(const C& c) -> decltype(make_view(std::begin(c), std::end(c))) {
  return make_view(std::begin(c), std::end(c));
}

/// Wire format: 64-bit count; for T that travels as its bytes, padding to
/// alignof(T) and the elements' bytes; otherwise each element by its rule.
template <class T, class Iter>
struct serialization<view<T, Iter>> {
  /// The rule's protocol (see serialization<T>); a received view of a T
  /// that travels as its bytes points into the message buffer, without a
  /// copy.
  ///@{
  static constexpr bool enabled = is_serializable_v<T>;
  using deserialized_type = view<deserialized_type_t<T>>;
  static constexpr bool flat = detail::flat_bytes<T> && !std::is_same_v<T, bool>;
  static std::size_t size_hint(const view<T, Iter>& v) noexcept {
    return flat ? sizeof(std::uint64_t) + alignof(T) + v.size() * sizeof(T) : 0;
  }

  static void serialize(writer& w, const view<T, Iter>& v) {
    w.write_size(v.size());
    if constexpr (flat) {
      w.align(alignof(T));
      if constexpr (std::contiguous_iterator<Iter>) {
        if (v.size()) w.write_bytes(std::to_address(v.begin()), v.size() * sizeof(T));
      } else {
        for (auto it = v.begin(); it != v.end(); ++it) {
          const T& x = *it;
          w.write_bytes(std::addressof(x), sizeof(T));
        }
      }
    } else {
      for (auto it = v.begin(); it != v.end(); ++it) {
        w.write(static_cast<const T&>(*it));
        detail::write_empty_marker<T>(w);
      }
    }
  }

  static deserialized_type deserialize(reader& r) {
    using D = deserialized_type_t<T>;
    if constexpr (flat) {
      std::size_t n = r.read_size("view length");
      r.align(alignof(T), "view padding");
      if (n > r.remaining() / sizeof(T))
        r.fail("view of " + std::to_string(n) + " elements of " + std::to_string(sizeof(T)) +
               " bytes runs past the end of the message (" + std::to_string(r.remaining()) + " bytes remain)");
      auto b = r.read_bytes(n * sizeof(T), "view elements");
      auto addr = reinterpret_cast<std::uintptr_t>(b.data());
      if (addr % alignof(T) == 0) {
        const T* p = reinterpret_cast<const T*>(b.data());
        return deserialized_type(p, p + n, n);
      }
      // Misaligned in this buffer: copy into owned, aligned storage.
      constexpr auto al = std::align_val_t(alignof(T));
      std::shared_ptr<std::byte> mem(static_cast<std::byte*>(::operator new(b.size() ? b.size() : 1, al)),
                                     [](std::byte* q) { ::operator delete(q, al); });
      if (n) std::memcpy(mem.get(), b.data(), b.size());
      const T* p = reinterpret_cast<const T*>(mem.get());
      return deserialized_type(p, p + n, n, std::move(mem));
    } else {
      std::size_t n = r.read_count("view length", 1);
      // Each element constructed in place and never relocated: a D with a
      // copy constructor that cannot be instantiated (or no move) arrives.
      auto copy = std::make_shared<detail::element_array<D>>(n);
      for (std::size_t i = 0; i < n; ++i) {
        r.read_into<T>(copy->at(i));
        ++copy->made;
        detail::read_empty_marker<T>(r);
      }
      using It = typename deserialized_type::iterator;
      const D* p = copy->first();
      return deserialized_type(It(p), It(p + n), n, std::move(copy));
    }
  }
  ///@}
};

}  // namespace accrete
