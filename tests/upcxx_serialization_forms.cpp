// UPC++ custom serialization in the forms the specification has had: the
// storage form of deserialize (UPC++ 2022.9: `storage.construct(args...)`),
// with a declared deserialized_type for an asymmetric rule; the earlier
// `deserialize(Reader&, void*)` form; and C arrays written and read back
// with read_into inside a rule. Each value crosses an RPC to the next
// process and is checked exactly.
#include <upcxx/upcxx.hpp>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <type_traits>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace {

int right() { return (upcxx::rank_me() + 1) % upcxx::rank_n(); }

// No default constructor: only storage.construct can make one.
class labelled {
 public:
  labelled(int id, std::string label) : id_(id), label_(std::move(label)) {}
  int id() const { return id_; }
  const std::string& label() const { return label_; }

 private:
  int id_;
  std::string label_;
};

// Travels as its digits and reads back as the std::string they make.
struct digits {
  std::vector<int> d;
};

// C arrays as members, one of them of a type that is not trivially copyable.
struct with_arrays {
  int grid[2][3];
  std::string names[2];
  struct upcxx_serialization {
    template <class Writer>
    static void serialize(Writer& w, const with_arrays& x) {
      w.write(x.grid);
      w.write(x.names);
    }
    template <class Reader>
    static with_arrays* deserialize(Reader& r, void* spot) {
      auto* x = ::new (spot) with_arrays;
      r.template read_into<int[2][3]>(x->grid);
      // read_into constructs into raw storage: the default strings go first.
      for (std::string& n : x->names) n.~basic_string();
      r.template read_into<std::string[2]>(static_cast<void*>(x->names));
      return x;
    }
  };
};

// Movable, not copyable.
struct move_only {
  int v = 0;
  move_only() = default;
  explicit move_only(int x) : v(x) {}
  move_only(const move_only&) = delete;
  move_only& operator=(const move_only&) = delete;
  move_only(move_only&&) = default;
  move_only& operator=(move_only&&) = default;
  UPCXX_SERIALIZED_FIELDS(v)
};
move_only kept_here;

// A copy constructor that is declared but cannot be instantiated (it copies
// a member that has none), as class templates often have: only moves of it
// compile. UPC++'s deserialize_into never copies the element.
template <class M>
struct declared_copy {
  M m;
  declared_copy() = default;
  explicit declared_copy(M x) : m(std::move(x)) {}
  declared_copy(const declared_copy& o) : m(o.m) {}
  declared_copy(declared_copy&& o) noexcept : m(std::move(o.m)) {}
  UPCXX_SERIALIZED_FIELDS(m)
};

}  // namespace

template <>
struct upcxx::serialization<labelled> {
  template <class Writer>
  static void serialize(Writer& w, const labelled& x) {
    w.write(x.id());
    w.write(x.label());
  }
  template <class Reader, class Storage>
  static labelled* deserialize(Reader& r, Storage storage) {
    const int id = r.template read<int>();
    std::string label = r.template read<std::string>();
    return storage.construct(id, std::move(label));
  }
};

template <>
struct upcxx::serialization<digits> {
  using deserialized_type = std::string;
  template <class Writer>
  static void serialize(Writer& w, const digits& x) {
    w.write(std::uint32_t(x.d.size()));
    w.write_sequence(x.d.begin(), x.d.end(), x.d.size());
  }
  template <class Reader, class Storage>
  static std::string* deserialize(Reader& r, Storage& storage) {
    const auto n = r.template read<std::uint32_t>();
    std::string s;
    for (std::uint32_t i = 0; i < n; ++i) s += char('0' + r.template read<int>());
    return storage.construct(std::move(s));
  }
};

static_assert(upcxx::is_serializable<labelled>::value);
static_assert(std::is_same_v<upcxx::deserialized_type_t<digits>, std::string>);
static_assert(upcxx::is_serializable<with_arrays>::value);

TEST(UpcxxSerializationForms, StorageConstruct) {
  const labelled got = upcxx::rpc(
                           right(),
                           [](const labelled& x) { return labelled(x.id() * 2, x.label() + "@" + std::to_string(upcxx::rank_me())); },
                           labelled(21, "item"))
                           .wait();
  EXPECT_EQ(got.id(), 42);
  EXPECT_EQ(got.label(), "item@" + std::to_string(right()));
  upcxx::barrier();
}

TEST(UpcxxSerializationForms, AsymmetricStorageConstruct) {
  const std::string s =
      upcxx::rpc(right(), [](std::string x) { return x + "/" + std::to_string(x.size()); }, digits{{4, 0, 7}}).wait();
  EXPECT_EQ(s, "407/3");
  upcxx::barrier();
}

TEST(UpcxxSerializationForms, CArraysInARule) {
  with_arrays a{{{1, 2, 3}, {4, 5, 6}}, {"first", std::string(100, 'z')}};
  const std::string echoed = upcxx::rpc(
                                 right(),
                                 [](const with_arrays& x) {
                                   std::string s;
                                   for (const auto& row : x.grid)
                                     for (int v : row) s += std::to_string(v);
                                   return s + "|" + x.names[0] + "|" + std::to_string(x.names[1].size()) + x.names[1].substr(98);
                                 },
                                 a)
                                 .wait();
  EXPECT_EQ(echoed, "123456|first|100zz");
  upcxx::barrier();
}

// A view over a map's elements (pair<const K, V>, as a histogram is sent to
// its owner), and a view of views.
TEST(UpcxxSerializationForms, ViewsOfMapElementsAndOfViews) {
  std::unordered_map<std::string, int> counts{{"a", 1}, {"bb", 2}, {"ccc", 3}};
  const int weighted = upcxx::rpc(
                           right(),
                           [](upcxx::view<std::pair<const std::string, int>> entries) {
                             int t = 0;
                             for (const auto& [word, n] : entries) t += int(word.size()) * n;
                             return t * 10 + int(entries.size());
                           },
                           upcxx::make_view(counts.begin(), counts.end()))
                           .wait();
  EXPECT_EQ(weighted, 143);
  const std::vector<int> a{1, 2, 3}, b{40};
  std::vector<decltype(upcxx::make_view(a))> parts{upcxx::make_view(a), upcxx::make_view(b)};
  const int total = upcxx::rpc(
                        right(),
                        [](upcxx::view<upcxx::view<int>> outer) {
                          int t = 0;
                          for (const auto& inner : outer)
                            for (int x : inner) t += x;
                          return t * 10 + int(outer.size());
                        },
                        upcxx::make_view(parts))
                        .wait();
  EXPECT_EQ(total, 462);
  upcxx::barrier();
}

// deserializing_iterator<T>: const T* for a trivially serializable T; else
// an iterator whose deserialize_into constructs the element at a given
// place (spec 2020.10).
static_assert(std::is_same_v<upcxx::deserializing_iterator<double>, const double*>);
static_assert(std::is_same_v<upcxx::view<std::string>, upcxx::view<std::string, upcxx::deserializing_iterator<std::string>>>);

TEST(UpcxxSerializationForms, DeserializeIntoStorage) {
  const std::vector<std::string> words{"alpha", std::string(50, 'b'), ""};
  const std::string joined = upcxx::rpc(
                                 right(),
                                 [](upcxx::view<std::string, upcxx::deserializing_iterator<std::string>> v) {
                                   // Read before the loop: deserialize_into takes each element.
                                   const std::string first = v[0];
                                   std::string out;
                                   for (auto it = v.begin(); it != v.end(); ++it) {
                                     alignas(std::string) unsigned char room[sizeof(std::string)];
                                     std::string* s = it.deserialize_into(room);
                                     out += std::to_string(s->size()) + ":" + s->substr(0, 2) + ";";
                                     s->~basic_string();
                                   }
                                   return out + first;
                                 },
                                 upcxx::make_view(words))
                                 .wait();
  EXPECT_EQ(joined, "5:al;50:bb;0:;alpha");
  upcxx::barrier();
}

// A movable, non-copyable value travels without a copy (UPC++ 2020.10): as
// an lvalue argument, as the reference an RPC returns, and by fetch.
TEST(UpcxxSerializationForms, MoveOnlyValues) {
  kept_here.v = 100 + upcxx::rank_me();
  upcxx::barrier();
  move_only arg(7);
  EXPECT_EQ(upcxx::rpc(right(), [](move_only&& m) { return m.v * 2; }, arg).wait(), 14);
  upcxx::future<move_only> ref = upcxx::rpc(right(), []() -> move_only& { return kept_here; });
  EXPECT_EQ(ref.wait_reference().v, 100 + right());  // a move-only result is read in place
  upcxx::dist_object<move_only> d(move_only(upcxx::rank_me() * 3));
  EXPECT_EQ(d.fetch(right()).wait().v, right() * 3);
  upcxx::barrier();
}

// A received view of elements that cannot be copied: deserialize_into
// constructs each one in the caller's storage (moved from the view).
TEST(UpcxxSerializationForms, DeserializeIntoMoveOnlyElements) {
  std::vector<move_only> items;
  for (int i = 0; i < 5; ++i) items.emplace_back(upcxx::rank_me() * 10 + i);
  std::vector<declared_copy<move_only>> wrapped;
  for (int i = 0; i < 3; ++i) wrapped.emplace_back(move_only(i + 1));
  const int sum = upcxx::rpc(
                      right(),
                      [](upcxx::view<move_only> v, upcxx::view<declared_copy<move_only>> w) {
                        int s = 0;
                        for (auto it = v.begin(); it != v.end(); ++it) {
                          alignas(move_only) unsigned char room[sizeof(move_only)];
                          move_only* m = it.deserialize_into(room);
                          s += m->v;
                          m->~move_only();
                        }
                        for (auto it = w.begin(); it != w.end(); ++it) {
                          alignas(declared_copy<move_only>) unsigned char room[sizeof(declared_copy<move_only>)];
                          auto* m = it.deserialize_into(room);
                          s += 100 * m->m.v;
                          m->~declared_copy<move_only>();
                        }
                        return s;
                      },
                      upcxx::make_view(items), upcxx::make_view(wrapped))
                      .wait();
  EXPECT_EQ(sum, 5 * 10 * upcxx::rank_me() + 10 + 600);
  upcxx::barrier();
}
