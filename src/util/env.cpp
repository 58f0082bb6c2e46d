// ACCRETE_* environment variables, one grammar for all (docs/semantics.md,
// "Environment variables"): unset or empty means the default; anything else
// must be exactly of the variable's form, or it is an error naming the
// variable and its value. No leading or trailing blanks, no '+', no
// exponents, hex or "inf": a typo must never select a value by accident.
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

bool digit(char c) { return c >= '0' && c <= '9'; }

const char* value_of(const char* name) {
  const char* e = std::getenv(name);
  return e && *e ? e : nullptr;
}

}  // namespace

std::size_t parse_bytes(const std::string& s, const char* name, std::size_t min, std::size_t max) {
  const std::string want = "a byte count (digits with an optional k/M/G/T suffix) in [" + std::to_string(min) +
                           ", " + std::to_string(max) + "]";
  std::size_t i = 0;
  unsigned __int128 v = 0;
  while (i < s.size() && digit(s[i])) {
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

std::int64_t parse_int(const std::string& s, const char* name, std::int64_t min, std::int64_t max) {
  const std::string want = "a whole number in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  std::size_t i = s.size() > 1 && s[0] == '-' ? 1 : 0;
  if (i == s.size()) bad(name, s, want);
  __int128 v = 0;
  for (std::size_t k = i; k < s.size(); ++k) {
    if (!digit(s[k])) bad(name, s, want);
    v = v * 10 + (s[k] - '0');
    if (v > (__int128(1) << 64)) bad(name, s, want);
  }
  if (i) v = -v;
  if (v < min || v > max) bad(name, s, want);
  return std::int64_t(v);
}

double parse_seconds(const std::string& s, const char* name) {
  const std::string want = "a number of seconds >= 0 (digits with an optional decimal fraction, e.g. 2.5)";
  // digits [. digits] or . digits: nothing else reaches strtod.
  std::size_t i = 0, int_digits = 0, frac_digits = 0;
  bool nonzero = false;
  while (i < s.size() && digit(s[i])) nonzero |= s[i++] != '0', ++int_digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && digit(s[i])) nonzero |= s[i++] != '0', ++frac_digits;
  }
  if (i != s.size() || int_digits + frac_digits == 0) bad(name, s, want);
  errno = 0;
  const double v = std::strtod(s.c_str(), nullptr);
  if (errno == ERANGE || !std::isfinite(v)) bad(name, s, want + ", representable as a double");
  // A positive value that rounded to 0 would silently mean "no timeout".
  if (nonzero && v == 0) bad(name, s, want + ", and not so small that it rounds to 0");
  return v;
}

std::optional<std::size_t> env_bytes(const char* name, std::size_t min, std::size_t max) {
  const char* e = value_of(name);
  if (!e) return std::nullopt;
  return parse_bytes(e, name, min, max);
}

std::optional<std::int64_t> env_int(const char* name, std::int64_t min, std::int64_t max) {
  const char* e = value_of(name);
  if (!e) return std::nullopt;
  return parse_int(e, name, min, max);
}

std::optional<double> env_seconds(const char* name) {
  const char* e = value_of(name);
  if (!e) return std::nullopt;
  return parse_seconds(e, name);
}

std::optional<std::string> env_word(const char* name) {
  const char* e = value_of(name);
  if (!e) return std::nullopt;
  return std::string(e);
}

}  // namespace accrete::detail
