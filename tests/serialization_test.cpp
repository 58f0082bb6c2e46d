// Serialization: round trips of every supported type, views, the user
// extension point, and malformed buffers (truncated, corrupted, trailing
// bytes, lengths running past the end).
#include <array>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "accrete/serialization.hpp"
#include "accrete/view.hpp"

using namespace accrete;

namespace {
struct pod {
  int a;
  double b;
  char c[3];
  friend bool operator==(const pod&, const pod&) = default;
};

// A user type made serializable through the extension point.
struct person {
  std::string name;
  std::vector<int> scores;
  friend bool operator==(const person&, const person&) = default;
};

template <class T>
T round_trip(const T& v) {
  auto buf = serialize(v);
  return deserialize<T>(buf);
}

std::string error_of(auto&& fn) {
  try {
    fn();
  } catch (const serialization_error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

// An empty type whose rule writes nothing: a tiny message must not claim
// 2^33 of them (the receiver would allocate and spin for seconds).
struct nothing {
  nothing() = default;
  nothing(const nothing&) {}  // not trivially copyable: goes through the rule
};
template <>
struct accrete::serialization<nothing> {
  static constexpr bool enabled = true;
  static void serialize(accrete::writer&, const nothing&) {}
  static nothing deserialize(accrete::reader&) { return {}; }
};

template <>
struct accrete::serialization<person> {
  static void serialize(writer& w, const person& p) {
    w.write(p.name);
    w.write(p.scores);
  }
  static person deserialize(reader& r) {
    auto name = r.read<std::string>();
    auto scores = r.read<std::vector<int>>();
    return {std::move(name), std::move(scores)};
  }
};

static_assert(is_serializable_v<int>);
static_assert(is_serializable_v<std::vector<std::string>>);
static_assert(is_serializable_v<person>);
static_assert(!is_serializable_v<std::vector<std::unique_ptr<int>>>);
static_assert(!is_serializable_v<std::list<std::unique_ptr<int>>>);
static_assert(!is_serializable_v<std::map<int, std::unique_ptr<int>>>);
static_assert(is_serializable_v<std::list<int>>);
static_assert(std::is_same_v<deserialized_type_t<view<int, std::list<int>::const_iterator>>, view<int>>);

TEST(Serialization, TriviallyCopyable) {
  EXPECT_EQ(round_trip(42), 42);
  EXPECT_EQ(round_trip(-1.5), -1.5);
  EXPECT_EQ(round_trip(std::uint64_t(1) << 63), std::uint64_t(1) << 63);
  EXPECT_EQ(round_trip(true), true);
  EXPECT_EQ(round_trip(false), false);
  pod p{7, 2.5, {'x', 'y', 'z'}};
  EXPECT_EQ(round_trip(p), p);
  EXPECT_EQ(serialize(p).size(), sizeof(pod));
}

TEST(Serialization, StandardContainers) {
  EXPECT_EQ(round_trip(std::string()), "");
  EXPECT_EQ(round_trip(std::string("hello, world")), "hello, world");
  std::string big(100000, 'q');
  EXPECT_EQ(round_trip(big), big);
  EXPECT_EQ(round_trip(std::vector<int>{}), std::vector<int>{});
  EXPECT_EQ(round_trip(std::vector<double>{1, 2, 3}), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(round_trip(std::vector<bool>{true, false, true}), (std::vector<bool>{true, false, true}));
  std::vector<std::string> vs{"a", "", "ccc"};
  EXPECT_EQ(round_trip(vs), vs);
  std::array<int, 4> ai{1, 2, 3, 4};
  EXPECT_EQ(round_trip(ai), ai);
  std::array<std::string, 2> as{"x", "yy"};
  EXPECT_EQ(round_trip(as), as);
  std::pair<int, std::string> pr{3, "three"};
  EXPECT_EQ(round_trip(pr), pr);
  std::tuple<int, double, std::string> t{1, 2.0, "t"};
  EXPECT_EQ(round_trip(t), t);
  EXPECT_EQ(round_trip(std::tuple<>{}), std::tuple<>{});
}

TEST(Serialization, Nested) {
  std::vector<std::vector<int>> vv{{1}, {}, {2, 3, 4}};
  EXPECT_EQ(round_trip(vv), vv);
  std::tuple<std::vector<std::pair<int, std::string>>, std::array<std::vector<char>, 2>, pod> t{
      {{1, "one"}, {2, "two"}}, {std::vector<char>{'a'}, std::vector<char>{}}, pod{1, 2, {}}};
  EXPECT_EQ(round_trip(t), t);
  std::vector<person> people{{"ann", {1, 2}}, {"bob", {}}};
  EXPECT_EQ(round_trip(people), people);
}

TEST(Serialization, SeveralValues) {
  auto buf = serialize(1, std::string("two"), 3.0);
  auto [a, b, c] = deserialize<int, std::string, double>(buf);
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, "two");
  EXPECT_EQ(c, 3.0);
}

TEST(Serialization, Views) {
  std::vector<double> d{1.5, 2.5, 3.5};
  auto buf = serialize(std::string("x"), make_view(d.begin(), d.end()));
  auto [s, v] = deserialize<std::string, view<double, std::vector<double>::iterator>>(buf);
  static_assert(std::is_same_v<decltype(v), view<double>>);
  EXPECT_EQ(s, "x");
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(std::vector<double>(v.begin(), v.end()), d);
  // Zero-copy: the view points into the buffer, suitably aligned.
  EXPECT_GE(reinterpret_cast<const std::byte*>(v.data()), buf.data());
  EXPECT_LT(reinterpret_cast<const std::byte*>(v.data()), buf.data() + buf.size());
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(v.data()) % alignof(double), 0u);

  // Non-contiguous source; non-trivially-copyable elements.
  std::list<int> l{4, 5, 6};
  auto lbuf = serialize(make_view(l));  // a view is valid only while its buffer lives
  auto lv = deserialize<view<int, std::list<int>::const_iterator>>(lbuf);
  EXPECT_EQ(std::vector<int>(lv.begin(), lv.end()), (std::vector<int>{4, 5, 6}));
  std::vector<std::string> ss{"p", "qq"};
  auto sv = deserialize<view<std::string, std::vector<std::string>::const_iterator>>(serialize(make_view(ss)));
  EXPECT_EQ(std::vector<std::string>(sv.begin(), sv.end()), ss);
  auto ev = deserialize<view<int>>(serialize(view<int>()));
  EXPECT_TRUE(ev.empty());
}

// size_hint sizes a message buffer before it is written: the exact length
// for values written as their bytes, strings and vectors of such values, at
// least the length (alignment padding is not known in advance) for views of
// them, 0 for anything else.
TEST(Serialization, SizeHintsCoverWhatIsWritten) {
  auto written = [](const auto& x) { return serialize(x).size(); };
  const pod p{1, 2.0, {'a', 'b', 'c'}};
  EXPECT_EQ(detail::size_hint(p), written(p));
  const std::string s(1000, 'x');
  EXPECT_EQ(detail::size_hint(s), written(s));
  const std::vector<double> d(5000, 1.5);
  EXPECT_EQ(detail::size_hint(d), written(d));
  const auto v = make_view(d.begin(), d.end());
  EXPECT_GE(detail::size_hint(v), written(v));
  EXPECT_LE(detail::size_hint(v), written(v) + alignof(double));
  const std::vector<std::string> strings{"a", "bb"};
  EXPECT_EQ(detail::size_hint(strings), 0u);
  const std::list<int> l{1, 2, 3};
  EXPECT_EQ(detail::size_hint(make_view(l)), 3 * sizeof(int) + sizeof(std::uint64_t) + alignof(int));
}

// A member declared const (a map's element, pair<const K, V>) is written as
// its type and reads back const, so a view over a map's elements arrives as
// view<pair<const K, V>>; so do C arrays (also nested and of non-trivially
// copyable elements) inside a rule, element by element.
TEST(Serialization, ConstMembersAndArrays) {
  static_assert(is_serializable_v<const std::string>);
  static_assert(
      std::is_same_v<deserialized_type_t<std::pair<const std::string, int>>, std::pair<const std::string, int>>);
  static_assert(
      std::is_same_v<deserialized_type_t<std::tuple<const int, std::string>>, std::tuple<const int, std::string>>);
  const std::pair<const std::string, int> kv{"key", 7};
  const auto back = round_trip(kv);
  EXPECT_EQ(back.first, "key");
  EXPECT_EQ(back.second, 7);
  std::map<std::string, int> m{{"a", 1}, {"bcd", 2}};
  auto mv = deserialize<view<std::pair<const std::string, int>, std::map<std::string, int>::const_iterator>>(
      serialize(make_view(m)));
  static_assert(std::is_same_v<decltype(mv), view<std::pair<const std::string, int>>>);
  ASSERT_EQ(mv.size(), 2u);
  EXPECT_EQ(mv[1].first, "bcd");
  EXPECT_EQ(mv[1].second, 2);

  static_assert(is_serializable_v<std::string[2]> && is_serializable_v<int[2][3]>);
  const std::string names[2] = {"x", std::string(40, 'y')};
  const int grid[2][3] = {{1, 2, 3}, {4, 5, 6}};
  std::vector<std::byte> buf;
  writer w(buf);
  w.write(names);
  w.write(grid);
  reader r(buf);
  alignas(std::string) std::byte sraw[sizeof(names)];
  std::string(*s)[2] = r.read_into<std::string[2]>(sraw);
  int g[2][3] = {};
  r.read_into<int[2][3]>(g);
  EXPECT_EQ((*s)[0], "x");
  EXPECT_EQ((*s)[1], names[1]);
  EXPECT_EQ(g[1][2], 6);
  EXPECT_EQ(g[0][1], 2);
  for (std::string& x : *s) x.~basic_string();
}

TEST(Serialization, MisalignedViewIsCopied) {
  std::vector<double> d{1, 2, 3, 4};
  auto buf = serialize(make_view(d));
  // Shift the data by one byte: the reader must not hand out a misaligned pointer.
  std::vector<std::byte> shifted(buf.size() + 1);
  std::copy(buf.begin(), buf.end(), shifted.begin() + 1);
  auto v = deserialize<view<double>>(std::span<const std::byte>(shifted).subspan(1));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(v.data()) % alignof(double), 0u);
  EXPECT_EQ(std::vector<double>(v.begin(), v.end()), d);
}

TEST(SerializationErrors, EveryTruncationThrows) {
  std::tuple<std::string, std::vector<std::string>, person, std::vector<double>, int> value{
      "abc", {"d", "ef"}, person{"g", {1, 2, 3}}, {4.0, 5.0}, 6};
  auto buf = serialize(value);
  using T = decltype(value);
  EXPECT_EQ(deserialize<T>(buf), value);
  for (std::size_t n = 0; n < buf.size(); ++n) {
    auto msg = error_of([&] { (void)deserialize<T>(std::span<const std::byte>(buf.data(), n)); });
    EXPECT_FALSE(msg.empty()) << "truncation to " << n << " bytes was accepted";
  }
}

TEST(SerializationErrors, TrailingBytesThrow) {
  auto buf = serialize(1, 2);
  auto msg = error_of([&] { (void)deserialize<int>(buf); });
  EXPECT_NE(msg.find("trailing"), std::string::npos) << msg;
}

TEST(SerializationErrors, HugeLengthsThrowWithoutAllocating) {
  auto buf = serialize(std::uint64_t(1) << 62, 'x');
  auto m1 = error_of([&] { (void)deserialize<std::string>(buf); });
  EXPECT_NE(m1.find("string length"), std::string::npos) << m1;
  auto m2 = error_of([&] { (void)deserialize<std::vector<double>>(buf); });
  EXPECT_NE(m2.find("vector length"), std::string::npos) << m2;
  auto m3 = error_of([&] { (void)deserialize<view<double>>(buf); });
  EXPECT_NE(m3.find("view"), std::string::npos) << m3;
  auto m4 = error_of([&] { (void)deserialize<std::vector<std::string>>(buf); });
  EXPECT_NE(m4.find("vector length"), std::string::npos) << m4;
}

TEST(SerializationErrors, EmptyElementCountIsBoundedByTheMessage) {
  auto buf = serialize(std::uint64_t(1) << 33);
  auto m = error_of([&] { (void)deserialize<std::vector<nothing>>(buf); });
  EXPECT_NE(m.find("vector length"), std::string::npos) << m;
  auto mv = error_of([&] { (void)deserialize<view<nothing>>(buf); });
  EXPECT_NE(mv.find("view length"), std::string::npos) << mv;
  // Real vectors of them still round-trip.
  std::vector<nothing> v(5);
  EXPECT_EQ(deserialize<std::vector<nothing>>(serialize(v)).size(), 5u);
}

TEST(SerializationErrors, NamesTheSender) {
  auto buf = serialize(std::string("abc"));
  buf.pop_back();
  auto msg = error_of([&] { (void)deserialize<std::string>(buf, 3); });
  EXPECT_NE(msg.find("from rank 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("string"), std::string::npos) << msg;
}

TEST(SerializationErrors, InvalidBool) {
  std::vector<std::byte> buf{std::byte{7}};
  auto msg = error_of([&] { (void)deserialize<bool>(buf); });
  EXPECT_NE(msg.find("bool"), std::string::npos) << msg;
}

TEST(SerializationErrors, RandomCorruptionNeverCrashes) {
  std::tuple<std::vector<std::string>, std::vector<view<int>>, std::string, std::vector<bool>> value;
  std::vector<int> ints{1, 2, 3, 4, 5};
  std::get<0>(value) = {"alpha", "beta", "", "gamma"};
  std::get<1>(value) = {view<int>(ints.data(), ints.data() + ints.size(), ints.size()), view<int>()};
  std::get<2>(value) = "delta";
  std::get<3>(value) = {true, false};
  auto good = serialize(value);
  using T = decltype(value);
  std::mt19937 rng(12345);
  int accepted = 0, rejected = 0;
  for (int iter = 0; iter < 5000; ++iter) {
    auto buf = good;
    int flips = 1 + int(rng() % 4);
    for (int f = 0; f < flips; ++f) buf[rng() % buf.size()] = std::byte(rng() & 0xff);
    if (rng() % 4 == 0) buf.resize(rng() % buf.size());
    try {
      auto v = deserialize<T>(buf);
      ++accepted;
      for (auto& vw : std::get<1>(v))  // touching every element must be safe
        for (int x : vw) (void)x;
    } catch (const serialization_error&) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 0);
  EXPECT_EQ(accepted + rejected, 5000);
}

TEST(Serialization, ListsDequesSetsMapsOptionals) {
  EXPECT_EQ(round_trip(std::list<std::string>{"a", "", "ccc"}), (std::list<std::string>{"a", "", "ccc"}));
  EXPECT_EQ(round_trip(std::deque<int>{3, 1, 2}), (std::deque<int>{3, 1, 2}));
  EXPECT_EQ(round_trip(std::set<int>{5, -1, 9}), (std::set<int>{5, -1, 9}));
  EXPECT_EQ(round_trip(std::multiset<int>{2, 2, 1}), (std::multiset<int>{1, 2, 2}));
  EXPECT_EQ(round_trip(std::unordered_set<std::string>{"x", "y"}), (std::unordered_set<std::string>{"y", "x"}));
  std::map<std::string, std::vector<int>> m{{"one", {1}}, {"none", {}}, {"three", {1, 2, 3}}};
  EXPECT_EQ(round_trip(m), m);
  std::multimap<int, int> mm{{1, 2}, {1, 3}, {0, 4}};
  EXPECT_EQ(round_trip(mm), mm);
  std::unordered_map<int, std::string> um{{7, "seven"}, {-2, "minus two"}};
  EXPECT_EQ(round_trip(um), um);
  EXPECT_EQ(round_trip(std::optional<std::string>("here")), std::optional<std::string>("here"));
  EXPECT_EQ(round_trip(std::optional<int>()), std::nullopt);
  // Nested: a map of lists of optionals.
  std::map<int, std::list<std::optional<double>>> nested{{1, {0.5, std::nullopt}}, {2, {}}};
  EXPECT_EQ(round_trip(nested), nested);
  // An empty container, and a truncated one.
  EXPECT_TRUE(round_trip(std::set<int>{}).empty());
  auto buf = serialize(std::list<int>{1, 2, 3});
  buf.resize(buf.size() - 2);
  EXPECT_THROW(deserialize<std::list<int>>(buf), serialization_error);
}

namespace {
class particle {
 public:
  particle() = default;
  particle(std::string n, std::vector<double> x) : name_(std::move(n)), x_(std::move(x)) {}
  bool operator==(const particle&) const = default;

 private:
  std::string name_;
  std::vector<double> x_;
  ACCRETE_SERIALIZED_FIELDS(name_, x_)
};

// Read back through a constructor from two values, one of them computed.
class interval {
 public:
  interval(double lo, double width) : lo_(lo), hi_(lo + width) {}
  double lo() const { return lo_; }
  double hi() const { return hi_; }
  ACCRETE_SERIALIZED_VALUES(lo_, hi_ - lo_)

 private:
  double lo_, hi_;
};

struct no_wire {
  int handle;
  ACCRETE_SERIALIZED_DELETE()
};

// A class derived from one that names its fields does not silently drop
// its own members: it is not serializable until it names them.
struct tagged_particle : particle {
  std::string tag;
};
}  // namespace

// A derived class that names its base among its fields.
struct charged_particle : particle {
  charged_particle() = default;
  charged_particle(particle p, int q) : particle(std::move(p)), charge(q) {}
  int charge = 0;
  bool operator==(const charged_particle&) const = default;
  ACCRETE_SERIALIZED_FIELDS(ACCRETE_SERIALIZED_BASE(particle), charge)
};

static_assert(is_serializable_v<charged_particle>);
static_assert(is_serializable_v<particle>);
static_assert(is_serializable_v<interval>);
static_assert(!is_serializable_v<no_wire>);
static_assert(std::is_trivially_copyable_v<no_wire>);
static_assert(!is_serializable_v<tagged_particle>);

TEST(Serialization, ClassesNameTheirFieldsOrValues) {
  particle p("electron", {0.25, -1.0, 3.5});
  EXPECT_EQ(round_trip(p), p);
  EXPECT_EQ(round_trip(std::vector<particle>{p, particle{}, p}), (std::vector<particle>{p, particle{}, p}));
  charged_particle c(p, -1);
  EXPECT_EQ(round_trip(c), c);
  interval i(1.5, 0.25);
  interval j = round_trip(i);
  EXPECT_EQ(j.lo(), 1.5);
  EXPECT_EQ(j.hi(), 1.75);
}
