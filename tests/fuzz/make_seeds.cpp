// Writes one valid message per shape of deserialize_fuzz.cpp (first byte =
// shape) into the directory given, so the fuzzer starts from real encodings.
// White-box test: reaches into accrete/detail/.
#define ACCRETE_INTERNAL_INCLUDE
#include <array>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "accrete/detail/packet_format.hpp"
#include "accrete/serialization.hpp"
#include "accrete/view.hpp"

namespace {
template <class... T>
void seed(const std::string& dir, int shape, const T&... v) {
  std::vector<std::byte> buf;
  accrete::writer w(buf);
  (w.write(v), ...);
  std::ofstream f(dir + "/seed" + std::to_string(shape), std::ios::binary);
  char c = char(shape);
  f.write(&c, 1);
  f.write(reinterpret_cast<const char*>(buf.data()), std::streamsize(buf.size()));
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  std::string d = argv[1];
  std::vector<double> dv{1.5, -2.25, 3};
  std::string chars = "views";
  std::vector<std::string> strs{"a", "", "longer string"};
  std::vector<std::vector<int>> vv{{1, 2}, {}, {3}};
  seed(d, 0, std::string("hello"));
  seed(d, 1, std::vector<std::int32_t>{1, 2, 3}, 4.0);
  seed(d, 2, strs);
  seed(d, 3, std::tuple<int, std::string, std::vector<double>>{7, "x", dv});
  seed(d, 4, std::pair<std::array<std::int16_t, 3>, std::vector<std::vector<char>>>{{1, 2, 3}, {{'a'}, {}}});
  seed(d, 5, accrete::make_view(dv), accrete::make_view(chars));
  seed(d, 6, accrete::make_view(strs), std::uint64_t{9});
  seed(d, 7, std::array<std::string, 2>{"p", "q"}, accrete::make_view(vv));
  // Shape 8: two packets (2 x 1 and 1 x 2) for a 5 x 7 part of doubles.
  {
    std::vector<std::byte> msg;
    auto packet = [&](std::vector<std::int32_t> rows, std::vector<std::int32_t> cols) {
      const std::size_t at = msg.size(), bytes = *accrete::detail::packet_bytes(rows.size(), cols.size(), 8);
      msg.resize(at + bytes);
      const std::int32_t dims[2] = {std::int32_t(rows.size()), std::int32_t(cols.size())};
      std::memcpy(msg.data() + at, dims, 8);
      std::memcpy(msg.data() + at + 8, rows.data(), 4 * rows.size());
      std::memcpy(msg.data() + at + 8 + 4 * rows.size(), cols.data(), 4 * cols.size());
      std::vector<double> v(rows.size() * cols.size(), 0.5);
      std::memcpy(msg.data() + at + bytes - 8 * v.size(), v.data(), 8 * v.size());
    };
    packet({0, 4}, {6});
    packet({2}, {1, 3});
    std::ofstream f(d + "/seed8", std::ios::binary);
    const char c = 8;
    f.write(&c, 1);
    f.write(reinterpret_cast<const char*>(msg.data()), std::streamsize(msg.size()));
  }
  return 0;
}
