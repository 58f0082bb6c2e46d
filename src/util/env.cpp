#include "accrete/detail/env.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "accrete/error.hpp"

namespace accrete::detail {
namespace {

[[noreturn]] void bad(const char* name, const std::string& value, const std::string& want) {
  throw error(std::string("accrete: ") + name + "='" + value + "' is not " + want);
}

}  // namespace

std::size_t parse_bytes(const std::string& s, const char* name, std::size_t min, std::size_t max) {
  const std::string want = "a byte count (digits with an optional k/M/G/T suffix) in [" + std::to_string(min) +
                           ", " + std::to_string(max) + "]";
  std::size_t i = 0;
  unsigned __int128 v = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    v = v * 10 + unsigned(s[i] - '0');
    if (v > SIZE_MAX) bad(name, s, want);
    ++i;
  }
  if (i == 0) bad(name, s, want);
  if (i < s.size()) {
    int shift = 0;
    switch (s[i]) {
      case 'k': case 'K': shift = 10; break;
      case 'm': case 'M': shift = 20; break;
      case 'g': case 'G': shift = 30; break;
      case 't': case 'T': shift = 40; break;
      default: bad(name, s, want);
    }
    if (i + 1 != s.size()) bad(name, s, want);
    v <<= shift;
  }
  if (v > max || v < min) bad(name, s, want);
  return std::size_t(v);
}

std::optional<std::size_t> env_bytes(const char* name, std::size_t min, std::size_t max) {
  const char* e = std::getenv(name);
  if (!e) return std::nullopt;
  return parse_bytes(e, name, min, max);
}

std::optional<std::int64_t> env_int(const char* name, std::int64_t min, std::int64_t max) {
  const char* e = std::getenv(name);
  if (!e) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(e, &end, 10);
  if (end == e || *end != '\0' || errno == ERANGE || v < min || v > max)
    bad(name, e, "a whole number in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  return std::int64_t(v);
}

std::optional<double> env_seconds(const char* name) {
  const char* e = std::getenv(name);
  if (!e) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(e, &end);
  if (end == e || *end != '\0' || !std::isfinite(v) || v < 0) bad(name, e, "a finite number of seconds >= 0");
  return v;
}

}  // namespace accrete::detail
