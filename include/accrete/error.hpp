#pragma once
/// \file
// Exceptions thrown by accrete. Every public entry point validates its input
// and throws one of these with a message naming the offending value.
#include <cstddef>
#include <stdexcept>
#include <string>

namespace accrete {

/// Base of every accrete exception.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The runtime is used before `init()` or after `finalize()`.
class not_initialized : public error {
 public:
  using error::error;
};

/// A global pointer is null, names a rank that does not exist, or lies
/// outside its segment; or a transfer runs past the end of a segment.
class bad_global_ptr : public error {
 public:
  using error::error;
};

/// The shared segment cannot satisfy an allocation.
class segment_exhausted : public error {
 public:
  /// The message names the three sizes.
  segment_exhausted(std::size_t requested, std::size_t free_bytes, std::size_t largest_free)
      : error("accrete: shared segment exhausted: requested " + std::to_string(requested) + " bytes, " +
              std::to_string(free_bytes) + " bytes free (largest free block " + std::to_string(largest_free) + ")"),
        requested_(requested),
        free_(free_bytes) {}
  /// A request no segment could hold, such as an element count whose size
  /// in bytes overflows: `message` says which.
  segment_exhausted(const std::string& message, std::size_t requested, std::size_t free_bytes)
      : error(message), requested_(requested), free_(free_bytes) {}
  /// Bytes asked for.
  std::size_t requested() const noexcept { return requested_; }
  /// Bytes free in the segment at the time (in pieces).
  std::size_t free_bytes() const noexcept { return free_; }

 private:
  std::size_t requested_, free_;
};

/// A collective is misused (called on a subset, in a different order, ...).
class collective_misuse : public error {
 public:
  using error::error;
};

}  // namespace accrete
