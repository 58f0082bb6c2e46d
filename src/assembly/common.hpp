#pragma once
// Small helpers shared by the assembly engine's files (src/assembly/).
#include <chrono>
#include <cstddef>
#include <cstdint>

#include "accrete/detail/backend.hpp"

namespace accrete::detail {

// One message carries at most this many bytes (MPI counts are int).
inline constexpr std::size_t max_message_bytes = std::size_t{1} << 30;
// Bytes after the active-message header of every assembly message:
// u32 engine id | u32 round.
inline constexpr std::size_t message_prefix_bytes = 8;

// The engine's phase times (assembly_stats): under SimGrid SMPI the
// simulated clock, as the benchmarks' times are; the host's clock would
// count other simulated processes' work.
#ifdef ACCRETE_SMPI
inline double now() { return sim_clock(); }
#else
inline double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
#endif

// Adds the time of a scope to a counter.
struct scope_timer {
  double& acc;
  double t0 = now();
  ~scope_timer() { acc += now() - t0; }
};

inline std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
inline std::uint64_t splitmix(std::uint64_t& s) { return mix(s += 0x9e3779b97f4a7c15ULL); }

// Spin briefly, then yield: lock holders may be preempted (oversubscribed
// nodes).
inline void spin_pause(unsigned& spins) {
  if (++spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  } else {
    os_yield();
  }
}

}  // namespace accrete::detail
