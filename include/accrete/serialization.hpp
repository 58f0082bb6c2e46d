#pragma once
/// \file
// Serialization of RPC arguments and results.
//
// Rules, in order of precedence for a type T:
//  1. a specialisation of accrete::serialization<T> (the user extension
//     point, also used by accrete for std::string, std::vector, std::array,
//     std::pair, std::tuple, std::list, std::deque, the std sets and maps,
//     std::optional, std::reference_wrapper (its referent), view<T> and
//     dist_object<T>), or a class's own
//     ACCRETE_SERIALIZED_FIELDS / ACCRETE_SERIALIZED_VALUES /
//     ACCRETE_SERIALIZED_DELETE (defined below);
//  2. trivially copyable T: its object representation, byte for byte;
//  3. anything else is not serializable (is_serializable_v<T> is false and
//     rpc() rejects it at compile time).
//
// A user specialisation provides
//
//   template <> struct accrete::serialization<my_type> {
//     static void serialize(accrete::writer& w, const my_type& x);   // w.write(field)...
//     static my_type deserialize(accrete::reader& r);                // r.read<field_type>()...
//     // optional: using deserialized_type = ...;  (default: my_type)
//     // optional: static std::size_t size_hint(const my_type& x);
//     //   the bytes serialize will write, so that an RPC's message buffer
//     //   is allocated once at its size (a hint: any value is safe)
//   };
//
// Format: fixed-size fields in host byte order (all processes run the same
// executable on the same architecture); lengths are 64-bit.
//
// Bad input: reader checks every length against the bytes that remain, so a
// truncated or corrupted buffer throws accrete::serialization_error naming
// what was being read and, when known, the rank that sent it. It never reads
// out of bounds or allocates more than the buffer could describe.
//
// Thread-safety: writer and reader objects are not shared; the free
// functions are reentrant.
#include <array>
#include <bit>
#include <concepts>
#include <deque>
#include <forward_list>
#include <functional>
#include <iterator>
#include <list>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "accrete/error.hpp"

namespace accrete {

/// A buffer was malformed: truncated, a length runs past the end, trailing
/// garbage, ... The message names the problem and the sending rank if known.
class serialization_error : public error {
 public:
  using error::error;
};

/// Primary template: "no explicit rule". Specialise it for your own types
/// (see the header comment); do not rely on its members.
template <class T>
struct serialization {
  /// Marks the primary template (no rule for T); internal.
  using accrete_no_rule_ = void;
};

class writer;
class reader;

namespace detail {
template <class T>
concept has_serialization_rule = !requires {
  typename serialization<T>::accrete_no_rule_;
};

template <class T>
constexpr bool rule_enabled() {
  if constexpr (requires { serialization<T>::enabled; })
    return serialization<T>::enabled;
  else
    return true;
}

/// T is written as its bytes (no explicit rule, trivially copyable).
template <class T>
inline constexpr bool bytewise = !has_serialization_rule<T> && std::is_trivially_copyable_v<T>;

/// T travels as its object's bytes: bytewise, or a rule that says it writes
/// exactly the object's bytes (`static constexpr bool object_bytes = true`,
/// as UPC++'s declared trivially serializable types do). A received view of
/// such a T may then point into the message.
template <class T>
inline constexpr bool flat_bytes = bytewise<T> || requires {
  requires serialization<T>::object_bytes;
};

/// Bytes a value will take serialized, so that a message buffer is sized
/// once instead of growing (a 128 KiB view written into a small buffer
/// reallocates it, and the new pages fault as the copy writes them): a
/// rule's optional `size_hint(const T&)`, sizeof(T) for a value written as
/// its bytes, else 0 (small). A hint only sizes a buffer; the written
/// length is whatever serialize writes.
template <class T>
std::size_t size_hint(const T& v) noexcept {
  if constexpr (requires { serialization<T>::size_hint(v); })
    return serialization<T>::size_hint(v);
  else if constexpr (bytewise<T>)
    return sizeof(T);
  else
    return 0;
}

template <class T>
struct deserialized {
  using type = T;
};
template <class T>
requires has_serialization_rule<T> && requires { typename serialization<T>::deserialized_type; }
struct deserialized<T> {
  using type = typename serialization<T>::deserialized_type;
};
}  // namespace detail

namespace detail {
template <class T>
constexpr bool serializable() {
  if constexpr (std::is_const_v<T> || std::is_volatile_v<T>)  // a const member: pair<const K, V>
    return serializable<std::remove_cv_t<T>>();
  else if constexpr (std::is_array_v<T>)  // T[N] element by element (inside rules: write and read_into)
    return std::extent_v<T> > 0 && serializable<std::remove_extent_t<T>>();
  else if constexpr (has_serialization_rule<T>)
    return rule_enabled<T>();
  else
    return std::is_trivially_copyable_v<T>;
}
}  // namespace detail

/// True when T can be written and read back. A C array T[N] can when T can
/// (in a rule's serialize and deserialize: writer::write, reader::read_into).
template <class T>
inline constexpr bool is_serializable_v = detail::serializable<T>();

/// The type a reader produces for a value written as T (e.g. view<T, It>
/// reads back as view<T>).
template <class T>
using deserialized_type_t = typename detail::deserialized<std::remove_cvref_t<T>>::type;

/// Appends serialized values to a byte vector. Positions are absolute in
/// that vector (so alignment of view data is relative to its start).
class writer {
 public:
  /// Appends to `buf`, which must outlive the writer.
  explicit writer(std::vector<std::byte>& buf) noexcept : buf_(&buf) {}

  /// Writes one value by its rule.
  template <class T>
  void write(const T& v);

  /// Raw bytes.
  void write_bytes(const void* p, std::size_t n) {
    if (n == 0) return;
    // Range insert copies straight in; resize + memcpy would first zero-fill
    // (measured: several ms per pass for large views in extend-add).
    auto b = static_cast<const std::byte*>(p);
    buf_->insert(buf_->end(), b, b + n);
  }
  /// A 64-bit length field.
  void write_size(std::uint64_t n) { write_bytes(&n, sizeof n); }
  /// Zero padding up to a multiple of `a` (a power of two).
  void align(std::size_t a) {
    std::size_t at = buf_->size();
    std::size_t pad = (a - at % a) % a;
    if (pad) buf_->resize(at + pad);
  }
  /// Bytes in the underlying vector so far.
  std::size_t size() const noexcept { return buf_->size(); }

  /// Writes each value by its rule, in order (what ACCRETE_SERIALIZED_FIELDS
  /// writes).
  template <class... T>
  void write_all(const T&... v) {
    (write(v), ...);
  }
  /// Writes the elements of [begin, end) by their rule, without a length
  /// (the reader must know how many: reader::read_sequence_into). `n`, when
  /// given, is the element count (UPC++'s Writer form).
  ///@{
  template <class It>
  void write_sequence(It begin, It end) {
    for (; begin != end; ++begin) write(*begin);
  }
  template <class It>
  void write_sequence(It begin, It end, std::size_t n) {
    (void)n;
    write_sequence(begin, end);
  }
  ///@}

 private:
  std::vector<std::byte>* buf_;
};

/// Reads values back from a byte span, checking every length.
class reader {
 public:
  /// `source`: the sending rank for error messages (-1 if unknown);
  /// `origin`: absolute position of data[0] in the sender's buffer (for
  /// alignment); `what`: what the buffer is, for error messages.
  explicit reader(std::span<const std::byte> data, int source = -1, std::size_t origin = 0,
                  const char* what = "buffer") noexcept
      : data_(data), source_(source), origin_(origin), what_(what) {}

  /// Reads one value written as T; returns deserialized_type_t<T>.
  template <class T>
  deserialized_type_t<T> read();

  /// Reads a value of each argument's type into it, in order (what
  /// ACCRETE_SERIALIZED_FIELDS reads).
  template <class... T>
  void read_all(T&... v) {
    ((v = read<T>()), ...);
  }
  /// Reads one value written as T into raw `storage` (placement new) and
  /// returns it: UPC++'s Reader::read_into. T may be a C array (T[N],
  /// also nested), read element by element into the array at `storage`.
  template <class T>
  deserialized_type_t<T>* read_into(void* storage) {
    if constexpr (std::is_array_v<T>) {
      using E = std::remove_extent_t<T>;
      auto* at = static_cast<std::byte*>(storage);
      for (std::size_t i = 0; i < std::extent_v<T>; ++i) read_into<E>(at + i * sizeof(deserialized_type_t<E>));
      return std::launder(static_cast<deserialized_type_t<T>*>(storage));
    } else {
      return ::new (storage) deserialized_type_t<T>(read<T>());
    }
  }
  /// Reads n values written as T (write_sequence) into raw `storage`, an
  /// array of n deserialized_type_t<T>; returns its first element.
  template <class T>
  deserialized_type_t<T>* read_sequence_into(void* storage, std::size_t n) {
    using D = deserialized_type_t<T>;
    D* first = static_cast<D*>(storage);
    for (std::size_t i = 0; i < n; ++i) ::new (static_cast<void*>(first + i)) D(read<T>());
    return first;
  }
  /// Reads one value written as T into an optional, replacing any value it
  /// held, and returns it: UPC++'s read_into(upcxx::optional&).
  template <class T>
  deserialized_type_t<T>& read_into(std::optional<deserialized_type_t<T>>& storage) {
    return storage.emplace(read<T>());
  }
  /// Reads one value written as T over the live object `obj` (destroyed
  /// first) and returns it: UPC++'s read_overwrite. A movable type is read
  /// before `obj` is destroyed, so a malformed buffer leaves `obj` intact;
  /// a type without a move constructor is constructed in place after the
  /// destruction, as UPC++ does. T may be a C array.
  template <class T>
  deserialized_type_t<T>& read_overwrite(deserialized_type_t<T>& obj) {
    using D = deserialized_type_t<T>;
    if constexpr (std::is_array_v<T>) {
      for (std::size_t i = 0; i < std::extent_v<T>; ++i) read_overwrite<std::remove_extent_t<T>>(obj[i]);
    } else if constexpr (std::is_move_constructible_v<D>) {
      D fresh = read<T>();
      std::destroy_at(std::addressof(obj));
      ::new (static_cast<void*>(std::addressof(obj))) D(std::move(fresh));
    } else {
      std::destroy_at(std::addressof(obj));
      ::new (static_cast<void*>(std::addressof(obj))) D(read<T>());
    }
    return obj;
  }
  /// read_overwrite for the n live objects at `objs`, in order; returns
  /// `objs`: UPC++'s read_sequence_overwrite.
  template <class T>
  deserialized_type_t<T>* read_sequence_overwrite(deserialized_type_t<T>* objs, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) read_overwrite<T>(objs[i]);
    return objs;
  }
  /// Reads and drops one value written as T, or n of them.
  ///@{
  template <class T>
  void skip() {
    (void)read<T>();
  }
  template <class T>
  void skip_sequence(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) (void)read<T>();
  }
  ///@}

  /// The next `n` bytes (a view into the buffer). `field` names what is read.
  std::span<const std::byte> read_bytes(std::size_t n, const char* field) {
    if (n > remaining())
      fail(std::string(field) + " needs " + std::to_string(n) + " bytes but only " + std::to_string(remaining()) +
           " remain");
    auto s = data_.subspan(pos_, n);
    pos_ += n;
    return s;
  }
  /// A 64-bit length field.
  std::uint64_t read_size(const char* field) {
    std::uint64_t n;
    std::memcpy(&n, read_bytes(sizeof n, field).data(), sizeof n);
    return n;
  }
  /// A count of elements of `elem_bytes` each (> 0), checked against the
  /// bytes that remain.
  std::size_t read_count(const char* field, std::size_t elem_bytes) {
    std::uint64_t n = read_size(field);
    if (elem_bytes && n > remaining() / elem_bytes)
      fail(std::string(field) + " " + std::to_string(n) + " (x " + std::to_string(elem_bytes) +
           " bytes) runs past the end: only " + std::to_string(remaining()) + " bytes remain");
    return std::size_t(n);
  }
  /// Skips the writer's padding up to a multiple of `a`.
  void align(std::size_t a, const char* field) {
    std::size_t at = origin_ + pos_;
    read_bytes((a - at % a) % a, field);
  }
  /// Bytes not read yet.
  std::size_t remaining() const noexcept { return data_.size() - pos_; }
  /// Bytes read so far.
  std::size_t position() const noexcept { return pos_; }
  /// The rank that sent the buffer (-1 if unknown); named in errors.
  int source() const noexcept { return source_; }
  /// Throws unless every byte was consumed.
  void expect_end() const {
    if (remaining()) fail(std::to_string(remaining()) + " unexpected trailing bytes after the last field");
  }
  /// Throws serialization_error describing the problem (user rules may call it).
  [[noreturn]] void fail(const std::string& problem) const {
    std::string m = std::string("accrete: malformed ") + what_;
    if (source_ >= 0) m += " from rank " + std::to_string(source_);
    m += ": " + problem + " (at byte " + std::to_string(pos_) + " of " + std::to_string(data_.size()) + ")";
    throw serialization_error(m);
  }

 private:
  std::span<const std::byte> data_;
  std::size_t pos_ = 0;
  int source_;
  std::size_t origin_;
  const char* what_;
};

namespace detail {
/// Elements of an empty type with a serialization rule may write nothing;
/// in sequences each is followed by one zero byte, so that the element
/// count of a sequence is bounded by its message's length.
template <class T>
void write_empty_marker(writer& w) {
  if constexpr (std::is_empty_v<T>) {
    const std::uint8_t z = 0;
    w.write_bytes(&z, 1);
  }
}
template <class T>
void read_empty_marker(reader& r) {
  if constexpr (std::is_empty_v<T>) {
    if (r.read_bytes(1, "empty element marker").front() != std::byte{0}) r.fail("invalid empty element marker");
  }
}

template <class T>
T read_bytewise(reader& r) {
  if constexpr (std::is_empty_v<T>) {
    return std::bit_cast<T>(std::array<std::byte, sizeof(T)>{});
  } else if constexpr (std::is_same_v<T, bool>) {  // only 0 and 1 are valid bools
    std::byte b = r.read_bytes(1, "bool").front();
    if (b != std::byte{0} && b != std::byte{1}) r.fail("invalid bool byte " + std::to_string(int(b)));
    return b == std::byte{1};
  } else {
    std::array<std::byte, sizeof(T)> a;
    std::memcpy(a.data(), r.read_bytes(sizeof(T), "value").data(), sizeof(T));
    return std::bit_cast<T>(a);
  }
}

/// A T that travels as its object's bytes (flat_bytes), read back: the
/// bytes land in aligned storage, and the value is a copy of the object
/// they hold (as UPC++ copies a trivially serializable object).
template <class T>
T read_object_bytes(reader& r, const char* what) {
  alignas(T) std::byte storage[sizeof(T)];
  std::memcpy(storage, r.read_bytes(sizeof(T), what).data(), sizeof(T));
  return T(*std::launder(reinterpret_cast<const T*>(storage)));
}
}  // namespace detail

template <class T>
void writer::write(const T& v) {
  static_assert(is_serializable_v<T>,
                "accrete: type is not serializable: it is not trivially copyable and has no "
                "accrete::serialization<T> specialisation");
  if constexpr (detail::has_serialization_rule<T>) {
    serialization<T>::serialize(*this, v);
  } else if constexpr (std::is_array_v<T> && !std::is_trivially_copyable_v<T>) {
    for (const auto& e : v) write(e);
  } else if constexpr (!std::is_empty_v<T>) {
    write_bytes(std::addressof(v), sizeof(T));
  }
}

template <class T>
deserialized_type_t<T> reader::read() {
  using U = std::remove_cvref_t<T>;
  static_assert(is_serializable_v<U>,
                "accrete: type is not serializable: it is not trivially copyable and has no "
                "accrete::serialization<T> specialisation");
  if constexpr (detail::has_serialization_rule<U>)
    return serialization<U>::deserialize(*this);
  else
    return detail::read_bytewise<U>(*this);
}

// ---- rules for standard types -------------------------------------------------

/// Rule for strings: the length, then the characters (trivially copyable
/// character types only).
template <class C, class Tr, class A>
struct serialization<std::basic_string<C, Tr, A>> {
  /// The rule's protocol (see serialization<T> in the header comment):
  /// `enabled`, `serialize(writer&, const X&)`, `deserialize(reader&)`
  /// and, where it differs from X, `deserialized_type`.
  ///@{
  static constexpr bool enabled = std::is_trivially_copyable_v<C>;
  static std::size_t size_hint(const std::basic_string<C, Tr, A>& s) noexcept {
    return sizeof(std::uint64_t) + s.size() * sizeof(C);
  }
  static void serialize(writer& w, const std::basic_string<C, Tr, A>& s) {
    w.write_size(s.size());
    w.write_bytes(s.data(), s.size() * sizeof(C));
  }
  static std::basic_string<C, Tr, A> deserialize(reader& r) {
    std::size_t n = r.read_count("string length", sizeof(C));
    auto b = r.read_bytes(n * sizeof(C), "string characters");
    std::basic_string<C, Tr, A> s(n, C{});
    if (n) std::memcpy(s.data(), b.data(), b.size());
    return s;
  }
  ///@}
};

/// Rule for vectors: the length, then the elements (one block of bytes
/// when T is bytewise, else element by element).
template <class T, class A>
struct serialization<std::vector<T, A>> {
  /// The rule's protocol (see serialization<T> in the header comment):
  /// `enabled`, `serialize(writer&, const X&)`, `deserialize(reader&)`
  /// and, where it differs from X, `deserialized_type`.
  ///@{
  static constexpr bool enabled = is_serializable_v<T>;
  using deserialized_type = std::vector<deserialized_type_t<T>>;
  static constexpr bool bulk = detail::bytewise<T> && !std::is_same_v<T, bool> && std::is_default_constructible_v<T>;
  static std::size_t size_hint(const std::vector<T, A>& v) noexcept {
    return bulk ? sizeof(std::uint64_t) + v.size() * sizeof(T) : 0;
  }
  static void serialize(writer& w, const std::vector<T, A>& v) {
    w.write_size(v.size());
    if constexpr (bulk)
      w.write_bytes(v.data(), v.size() * sizeof(T));
    else
      for (const auto& x : v) {
        w.write(static_cast<const T&>(x));
        detail::write_empty_marker<T>(w);
      }
  }
  static deserialized_type deserialize(reader& r) {
    deserialized_type v;
    if constexpr (bulk) {
      std::size_t n = r.read_count("vector length", sizeof(T));
      auto b = r.read_bytes(n * sizeof(T), "vector elements");
      v.resize(n);
      if (n) std::memcpy(v.data(), b.data(), b.size());
    } else {
      // Every element takes at least one byte (empty ones a marker byte), so
      // a short message cannot claim a huge count.
      std::size_t n = r.read_count("vector length", 1);
      v.reserve(n);
      for (std::size_t i = 0; i < n; ++i) {
        v.push_back(r.read<T>());
        detail::read_empty_marker<T>(r);
      }
    }
    return v;
  }
  ///@}
};

/// Rule for fixed-size arrays: the N elements.
template <class T, std::size_t N>
struct serialization<std::array<T, N>> {
  /// The rule's protocol (see serialization<T> in the header comment):
  /// `enabled`, `serialize(writer&, const X&)`, `deserialize(reader&)`
  /// and, where it differs from X, `deserialized_type`.
  ///@{
  static constexpr bool enabled = is_serializable_v<T>;
  using D = deserialized_type_t<T>;
  using deserialized_type = std::array<D, N>;
  /// An array of elements that travel as their bytes travels as its
  /// bytes (UPC++: trivially serializable when T is).
  static constexpr bool object_bytes = detail::flat_bytes<T> && std::is_same_v<D, T>;
  static void serialize(writer& w, const std::array<T, N>& a) {
    if constexpr (object_bytes)
      w.write_bytes(std::addressof(a), sizeof a);
    else
      for (const auto& x : a) w.write(x);
  }
  static deserialized_type deserialize(reader& r) {
    if constexpr (object_bytes) {
      return detail::read_object_bytes<deserialized_type>(r, "array elements");
    } else if constexpr (std::is_default_constructible_v<D> && std::is_move_assignable_v<D>) {
      deserialized_type a;
      for (auto& x : a) x = r.read<T>();
      return a;
    } else {
      return [&]<std::size_t... I>(std::index_sequence<I...>) { return deserialized_type{((void)I, r.read<T>())...}; }
      (std::make_index_sequence<N>{});
    }
  }
  ///@}
};

namespace detail {
/// What a member of type X reads back as: its deserialized type, const
/// when X is (so pair<const K, V>, a map's element, reads back as itself).
template <class X>
using member_deserialized_t =
    std::conditional_t<std::is_const_v<X>, const deserialized_type_t<X>, deserialized_type_t<X>>;
}  // namespace detail

/// Rule for pairs: first, then second.
template <class A, class B>
struct serialization<std::pair<A, B>> {
  /// The rule's protocol (see serialization<T> in the header comment):
  /// `enabled`, `serialize(writer&, const X&)`, `deserialize(reader&)`
  /// and, where it differs from X, `deserialized_type`.
  ///@{
  static constexpr bool enabled = is_serializable_v<A> && is_serializable_v<B>;
  using deserialized_type = std::pair<detail::member_deserialized_t<A>, detail::member_deserialized_t<B>>;
  /// A pair of members that travel as their bytes travels as its bytes
  /// (UPC++: trivially serializable when A and B are).
  static constexpr bool object_bytes = detail::flat_bytes<std::remove_cv_t<A>> &&
                                       detail::flat_bytes<std::remove_cv_t<B>> &&
                                       std::is_same_v<deserialized_type, std::pair<A, B>>;
  static void serialize(writer& w, const std::pair<A, B>& p) {
    if constexpr (object_bytes) {
      w.write_bytes(std::addressof(p), sizeof p);
    } else {
      w.write(p.first);
      w.write(p.second);
    }
  }
  static deserialized_type deserialize(reader& r) {
    if constexpr (object_bytes)
      return detail::read_object_bytes<deserialized_type>(r, "pair");
    else
      return deserialized_type{r.read<A>(), r.read<B>()};  // braces: left to right
  }
  ///@}
};

/// Rule for tuples: the elements in order.
template <class... T>
struct serialization<std::tuple<T...>> {
  /// The rule's protocol (see serialization<T> in the header comment):
  /// `enabled`, `serialize(writer&, const X&)`, `deserialize(reader&)`
  /// and, where it differs from X, `deserialized_type`.
  ///@{
  static constexpr bool enabled = (is_serializable_v<T> && ...);
  using deserialized_type = std::tuple<detail::member_deserialized_t<T>...>;
  /// A tuple of elements that travel as their bytes travels as its bytes
  /// (UPC++: trivially serializable when every T is).
  static constexpr bool object_bytes =
      (detail::flat_bytes<std::remove_cv_t<T>> && ...) && std::is_same_v<deserialized_type, std::tuple<T...>>;
  static void serialize(writer& w, const std::tuple<T...>& t) {
    if constexpr (object_bytes)
      w.write_bytes(std::addressof(t), sizeof t);
    else
      std::apply([&](const auto&... x) { (w.write(x), ...); }, t);
  }
  static deserialized_type deserialize(reader& r) {
    if constexpr (object_bytes)
      return detail::read_object_bytes<deserialized_type>(r, "tuple");
    else
      return deserialized_type{r.read<T>()...};  // braces: left to right
  }
  ///@}
};

namespace detail {
/// Containers written as a length and their elements in iteration order,
/// read back by inserting at the end: lists, deques, sets and maps of any
/// kind (a map's elements are key-value pairs).
template <class C, class E>
struct container_rule {
  static constexpr bool enabled = is_serializable_v<E>;
  static void serialize(writer& w, const C& c) {
    w.write_size(std::uint64_t(std::distance(c.begin(), c.end())));
    for (const auto& x : c) {
      w.write(static_cast<const E&>(x));
      write_empty_marker<E>(w);
    }
  }
  static C deserialize(reader& r) {
    // Every element takes at least one byte (empty ones a marker byte), so
    // a short message cannot claim a huge count.
    std::size_t n = r.read_count("container length", 1);
    C c;
    if constexpr (requires { c.before_begin(); }) {  // forward_list: each after the one before
      auto at = c.before_begin();
      for (std::size_t i = 0; i < n; ++i) {
        at = c.insert_after(at, r.read<E>());
        read_empty_marker<E>(r);
      }
    } else {
      for (std::size_t i = 0; i < n; ++i) {
        c.insert(c.end(), r.read<E>());
        read_empty_marker<E>(r);
      }
    }
    return c;
  }
};
}  // namespace detail

/// Rules for the standard lists, deques, sets and maps: the length, then
/// the elements in iteration order (a map's as key, value). Read back as
/// the same container type (with its comparator, hash and allocator
/// default-constructed).
///@{
template <class T, class A>
struct serialization<std::list<T, A>> : detail::container_rule<std::list<T, A>, T> {};
template <class T, class A>
struct serialization<std::forward_list<T, A>> : detail::container_rule<std::forward_list<T, A>, T> {};
template <class T, class A>
struct serialization<std::deque<T, A>> : detail::container_rule<std::deque<T, A>, T> {};
template <class T, class C, class A>
struct serialization<std::set<T, C, A>> : detail::container_rule<std::set<T, C, A>, T> {};
template <class T, class C, class A>
struct serialization<std::multiset<T, C, A>> : detail::container_rule<std::multiset<T, C, A>, T> {};
template <class T, class H, class E, class A>
struct serialization<std::unordered_set<T, H, E, A>> : detail::container_rule<std::unordered_set<T, H, E, A>, T> {};
template <class T, class H, class E, class A>
struct serialization<std::unordered_multiset<T, H, E, A>>
    : detail::container_rule<std::unordered_multiset<T, H, E, A>, T> {};
template <class K, class V, class C, class A>
struct serialization<std::map<K, V, C, A>> : detail::container_rule<std::map<K, V, C, A>, std::pair<K, V>> {};
template <class K, class V, class C, class A>
struct serialization<std::multimap<K, V, C, A>> : detail::container_rule<std::multimap<K, V, C, A>, std::pair<K, V>> {};
template <class K, class V, class H, class E, class A>
struct serialization<std::unordered_map<K, V, H, E, A>>
    : detail::container_rule<std::unordered_map<K, V, H, E, A>, std::pair<K, V>> {};
template <class K, class V, class H, class E, class A>
struct serialization<std::unordered_multimap<K, V, H, E, A>>
    : detail::container_rule<std::unordered_multimap<K, V, H, E, A>, std::pair<K, V>> {};
///@}

/// Rule for optionals: a presence byte, then the value if there is one.
template <class T>
struct serialization<std::optional<T>> {
  /// The rule's protocol (see serialization<T> in the header comment).
  ///@{
  static constexpr bool enabled = is_serializable_v<T>;
  using deserialized_type = std::optional<deserialized_type_t<T>>;
  static void serialize(writer& w, const std::optional<T>& o) {
    w.write(o.has_value());
    if (o) w.write(*o);
  }
  static deserialized_type deserialize(reader& r) {
    if (!r.read<bool>()) return std::nullopt;
    return deserialized_type(r.read<T>());
  }
  ///@}
};

/// Rule for std::reference_wrapper<T>: the object it refers to, read back
/// as a value (deserialized_type_t<T>), as UPC++ serializes references.
/// Without it the wrapper, being trivially copyable, would travel as an
/// address that means nothing to the receiver.
template <class T>
struct serialization<std::reference_wrapper<T>> {
  /// The rule's protocol (see serialization<T> in the header comment).
  ///@{
  static constexpr bool enabled = is_serializable_v<std::remove_cv_t<T>>;
  using deserialized_type = deserialized_type_t<T>;
  static void serialize(writer& w, const std::reference_wrapper<T>& r) { w.write(r.get()); }
  static deserialized_type deserialize(reader& r) { return r.read<std::remove_cv_t<T>>(); }
  ///@}
};

// ---- classes that name their fields or values -----------------------------------

namespace detail {
/// The one place that touches the members the macros below declare (they
/// may sit in a private section: the macros befriend this).
struct serialized_members {
  template <class T>
  static auto fields_owner(const T& x) -> decltype(x.accrete_fields_owner_());
  template <class T>
  static auto values_owner(const T& x) -> decltype(x.accrete_values_owner_());
  template <class T>
  static void write_fields(writer& w, const T& x) {
    x.accrete_write_fields_(w);
  }
  template <class T>
  static T read_fields(reader& r) {
    T x;
    x.accrete_read_fields_(r);
    return x;
  }
  template <class T>
  static auto values(const T& x) {
    return x.accrete_serialized_values_();
  }
};
template <class T>
concept names_fields = requires(const T& x) {
  { serialized_members::fields_owner(x) } -> std::same_as<T*>;
};
template <class T>
concept names_values = requires(const T& x) {
  { serialized_members::values_owner(x) } -> std::same_as<T*>;
};
}  // namespace detail

/// Inside a class definition: serialize the object as these members, by
/// name, in order. Reading default-constructs the object (the default
/// constructor may be private) and reads each member into it. Members may
/// be private; each one's type must be serializable. A class derived from
/// one that uses this macro is not serializable through it (its own
/// members would be lost): it needs its own.
#define ACCRETE_SERIALIZED_FIELDS(...)                                         \
  template <class AccreteWriter_>                                              \
  void accrete_write_fields_(AccreteWriter_& accrete_writer_) const {          \
    accrete_writer_.write_all(__VA_ARGS__);                                    \
  }                                                                            \
  template <class AccreteReader_>                                              \
  void accrete_read_fields_(AccreteReader_& accrete_reader_) {                 \
    accrete_reader_.read_all(__VA_ARGS__);                                     \
  }                                                                            \
  auto accrete_fields_owner_() const->::std::remove_cvref_t<decltype(*this)>*; \
  friend struct ::accrete::detail::serialized_members;

/// Inside ACCRETE_SERIALIZED_FIELDS(...): the base class B's part of the
/// object, serialized by B's own rule, as one of the fields.
#define ACCRETE_SERIALIZED_BASE(B) ::accrete::detail::base_part<B>(*this)

namespace detail {
/// The base-class part of a derived object (ACCRETE_SERIALIZED_BASE).
///@{
template <class B, class D>
const B& base_part(const D& d) {
  return static_cast<const B&>(d);
}
template <class B, class D>
B& base_part(D& d) {
  return static_cast<B&>(d);
}
///@}
}  // namespace detail

/// Inside a class definition: serialize the object as the values of these
/// expressions (evaluated on the const object; they may use private
/// members), and read it back by calling the public constructor that takes
/// those values in that order.
#define ACCRETE_SERIALIZED_VALUES(...)                                               \
  auto accrete_serialized_values_() const { return ::std::make_tuple(__VA_ARGS__); } \
  auto accrete_values_owner_() const->::std::remove_cvref_t<decltype(*this)>*;       \
  friend struct ::accrete::detail::serialized_members;

/// Inside a class definition: the class is not serializable, even if it is
/// trivially copyable (RPC arguments of its type do not compile).
#define ACCRETE_SERIALIZED_DELETE() using accrete_serialization_deleted_ = void;

/// Rule for classes with ACCRETE_SERIALIZED_DELETE: none.
template <class T>
requires requires { typename T::accrete_serialization_deleted_; }
struct serialization<T> {
  /// Never serializable.
  static constexpr bool enabled = false;
};

/// Rule for classes with ACCRETE_SERIALIZED_FIELDS.
template <class T>
requires detail::names_fields<T>
struct serialization<T> {
  /// The rule's protocol (see serialization<T> in the header comment).
  ///@{
  static void serialize(writer& w, const T& x) { detail::serialized_members::write_fields(w, x); }
  static T deserialize(reader& r) { return detail::serialized_members::read_fields<T>(r); }
  ///@}
};

/// Rule for classes with ACCRETE_SERIALIZED_VALUES.
template <class T>
requires detail::names_values<T>
struct serialization<T> {
  /// The values' tuple type.
  using values_type = decltype(detail::serialized_members::values(std::declval<const T&>()));
  /// The rule's protocol (see serialization<T> in the header comment).
  ///@{
  static void serialize(writer& w, const T& x) { w.write(detail::serialized_members::values(x)); }
  static T deserialize(reader& r) { return std::make_from_tuple<T>(r.read<values_type>()); }
  ///@}
};

// ---- whole buffers ------------------------------------------------------------

/// Serializes `values...` in order into a new byte vector.
template <class... T>
std::vector<std::byte> serialize(const T&... values) {
  std::vector<std::byte> buf;
  writer w(buf);
  (w.write(values), ...);
  return buf;
}

/// Reads back one value (for one T) or a tuple (for several) written as T...
/// by serialize(). Throws serialization_error if the buffer is malformed or
/// has trailing bytes; `source` is named in the message when >= 0.
template <class... T>
auto deserialize(std::span<const std::byte> buf, int source = -1) {
  static_assert(sizeof...(T) >= 1, "deserialize<T...>: name at least one type");
  reader r(buf, source, 0, "buffer");
  if constexpr (sizeof...(T) == 1) {
    auto v = r.read<T...>();
    r.expect_end();
    return v;
  } else {
    std::tuple<deserialized_type_t<T>...> v{r.read<T>()...};
    r.expect_end();
    return v;
  }
}

}  // namespace accrete
