#pragma once
// Strict parsing of ACCRETE_* environment variables. A variable that is set
// but malformed is an error naming the variable and its value: a typo must
// never silently select a default (a 64-byte segment, no timeout, ...).
#include "accrete/detail/internal.hpp"
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace accrete::detail {

// The grammar (docs/semantics.md, "Environment variables"): a variable that
// is unset or set to the empty string takes its default; any other value
// must match its form exactly.

/// A byte count: decimal digits with an optional binary suffix k/K, m/M,
/// g/G, t/T (KiB .. TiB). Throws accrete::error unless the whole value is
/// of that form and lies in [min, max]. Unset or empty: nullopt.
std::optional<std::size_t> env_bytes(const char* name, std::size_t min = 0, std::size_t max = SIZE_MAX);
/// Parses `text` as env_bytes does (for tests and options given as text).
std::size_t parse_bytes(const std::string& text, const char* name, std::size_t min = 0,
                        std::size_t max = SIZE_MAX);
/// A whole number in [min, max]: decimal digits, with a leading '-' for a
/// negative one (no blanks, no '+').
std::optional<std::int64_t> env_int(const char* name, std::int64_t min, std::int64_t max);
std::int64_t parse_int(const std::string& text, const char* name, std::int64_t min, std::int64_t max);
/// Seconds >= 0: digits with an optional decimal fraction ("2", "2.5",
/// ".5"); no sign, exponent, hex, inf or nan, and no positive value so small
/// that it rounds to 0.
std::optional<double> env_seconds(const char* name);
double parse_seconds(const std::string& text, const char* name);
/// The value as a word (the caller checks it against its choices).
std::optional<std::string> env_word(const char* name);

}  // namespace accrete::detail
