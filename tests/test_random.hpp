// Deterministic randomness for the tests: every process draws the same
// plans from the same seeds.
#ifndef ACCRETE_TESTS_TEST_RANDOM_HPP
#define ACCRETE_TESTS_TEST_RANDOM_HPP

#include <cstdint>
#include <random>

namespace accrete_tests {

using rng = std::mt19937_64;

/// Uniform in [lo, hi].
inline std::int64_t pick(rng& g, std::int64_t lo, std::int64_t hi) {
  return lo + std::int64_t(g() % std::uint64_t(hi - lo + 1));
}

/// splitmix64's finaliser: a well-mixed value from a counter or a key.
inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace accrete_tests

#endif
