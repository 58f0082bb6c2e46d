// libFuzzer target for accrete's deserializer (RPC arguments and replies are
// decoded by it). Input: one byte choosing a message shape, then the bytes
// to decode (shapes 0-7), or an assembly packet message (shape 8). Every input must either decode or throw
// accrete::serialization_error; anything else (another exception, a read
// past the buffer, UB) is a crash the fuzzer reports. Built with clang only
// (tests/fuzz.cmake); a short run is part of the test suite.
// White-box test: reaches into accrete/detail/.
#define ACCRETE_INTERNAL_INCLUDE
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "accrete/detail/packet_format.hpp"
#include "accrete/serialization.hpp"
#include "accrete/view.hpp"

namespace {

// Reads every byte of a decoded value so the sanitizers see each access.
volatile std::uint64_t sink;
void touch(const void* p, std::size_t n) {
  auto b = static_cast<const unsigned char*>(p);
  std::uint64_t s = 0;
  for (std::size_t i = 0; i < n; ++i) s += b[i];
  sink = sink + s;
}
template <class T>
void touch_value(const T& v);
template <class T>
void touch_range(const T& c) {
  for (const auto& x : c) touch_value(x);
}
template <class T>
void touch_value(const T& v) {
  if constexpr (std::is_trivially_copyable_v<T>)
    touch(&v, sizeof v);
  else if constexpr (requires {
                       v.size();
                       v.begin();
                     })
    touch_range(v);
  else if constexpr (requires { std::get<0>(v); })
    std::apply([](const auto&... x) { (touch_value(x), ...); }, v);
}

template <class... T>
void decode(std::span<const std::byte> data) {
  accrete::reader r(data, 7, 0, "fuzz input");
  try {
    (touch_value(r.read<T>()), ...);
    r.expect_end();
  } catch (const accrete::serialization_error&) {
    // the expected outcome for malformed input
  }
}

// An assembly message for a 5 x 7 local part of doubles. Copied to an
// 8-byte aligned buffer first, as the transport delivers messages.
void parse_packets(std::span<const std::byte> data) {
  std::vector<std::uint64_t> aligned((data.size() + 7) / 8);
  if (!data.empty()) std::memcpy(aligned.data(), data.data(), data.size());
  std::span<const std::byte> msg(reinterpret_cast<const std::byte*>(aligned.data()), data.size());
  try {
    accrete::detail::for_each_packet(msg, sizeof(double), 5, 7, [](const accrete::detail::packet_view& v) {
      touch(v.lrow, 4 * std::size_t(v.nr));
      touch(v.lcol, 4 * std::size_t(v.nc));
      touch(v.values, std::size_t(v.nr) * std::size_t(v.nc) * sizeof(double));
      for (std::int32_t k = 0; k < v.nr; ++k)
        if (v.lrow[k] < 0 || v.lrow[k] >= 5) __builtin_trap();  // validation let a bad index through
      for (std::int32_t k = 0; k < v.nc; ++k)
        if (v.lcol[k] < 0 || v.lcol[k] >= 7) __builtin_trap();
    });
  } catch (const accrete::error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  if (size == 0) return 0;
  std::span<const std::byte> data(reinterpret_cast<const std::byte*>(bytes) + 1, size - 1);
  switch (bytes[0] % 9) {
    case 0:
      decode<std::string>(data);
      break;
    case 1:
      decode<std::vector<std::int32_t>, double>(data);
      break;
    case 2:
      decode<std::vector<std::string>>(data);
      break;
    case 3:
      decode<std::tuple<int, std::string, std::vector<double>>>(data);
      break;
    case 4:
      decode<std::pair<std::array<std::int16_t, 3>, std::vector<std::vector<char>>>>(data);
      break;
    case 5:
      decode<accrete::view<double>, accrete::view<char>>(data);
      break;
    case 6:
      decode<accrete::view<std::string>, std::uint64_t>(data);
      break;
    case 7:
      decode<std::array<std::string, 2>, accrete::view<std::vector<int>>>(data);
      break;
    default:
      parse_packets(data);
      break;
  }
  return 0;
}
