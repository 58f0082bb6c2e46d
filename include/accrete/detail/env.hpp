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

/// A byte count: decimal digits with an optional binary suffix k/K, m/M,
/// g/G, t/T (KiB .. TiB). Throws accrete::error unless the whole value is
/// of that form and lies in [min, max]. Unset: nullopt.
std::optional<std::size_t> env_bytes(const char* name, std::size_t min = 0, std::size_t max = SIZE_MAX);
/// Parses `text` as env_bytes does (for tests and options given as text).
std::size_t parse_bytes(const std::string& text, const char* name, std::size_t min = 0,
                        std::size_t max = SIZE_MAX);
/// A whole number in [min, max].
std::optional<std::int64_t> env_int(const char* name, std::int64_t min, std::int64_t max);
/// A finite number of seconds >= 0 (decimal, e.g. "2.5").
std::optional<double> env_seconds(const char* name);

}  // namespace accrete::detail
