#pragma once
// Key placement shared by every DHT here (accrete-native, UPC++-written and
// plain MPI), so that they all send the same keys to the same owners.
#include <cstdint>

namespace dht {

/// splitmix64: a cheap, well-mixed hash for integer keys.
inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// The process that owns `key` among `nprocs`.
inline int owner_of(std::uint64_t key, int nprocs) { return int(mix(key) % std::uint64_t(nprocs)); }

}  // namespace dht
