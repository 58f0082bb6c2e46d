// libFuzzer target for accrete's deserializer (RPC arguments and replies are
// decoded by it). Input: one byte choosing a message shape, then the bytes
// to decode. Every input must either decode or throw
// accrete::serialization_error; anything else (another exception, a read
// past the buffer, UB) is a crash the fuzzer reports. Built with clang only
// (tests/fuzz.cmake); a short run is part of the test suite.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  if (size == 0) return 0;
  std::span<const std::byte> data(reinterpret_cast<const std::byte*>(bytes) + 1, size - 1);
  switch (bytes[0] % 8) {
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
    default:
      decode<std::array<std::string, 2>, accrete::view<std::vector<int>>>(data);
      break;
  }
  return 0;
}
