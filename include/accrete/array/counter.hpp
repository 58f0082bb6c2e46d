#pragma once
/// \file
// accrete::counter: one global 64-bit integer for dynamic load balancing
// (Global Arrays' NGA_Read_inc): fetch_add hands out task numbers.
// Lets this header include accrete/detail/ headers (see detail/internal.hpp).
#ifndef ACCRETE_PUBLIC_INCLUDE
#define ACCRETE_PUBLIC_INCLUDE
#define ACCRETE_PUBLIC_INCLUDE_ARRAY_COUNTER
#endif

#include <cstdint>

#include "accrete/detail/backend.hpp"

#ifdef ACCRETE_PUBLIC_INCLUDE_ARRAY_COUNTER
#undef ACCRETE_PUBLIC_INCLUDE
#undef ACCRETE_PUBLIC_INCLUDE_ARRAY_COUNTER
#endif

namespace accrete {

/// The value lives on world rank 0 and is changed only by atomics of one
/// kind: CPU atomics on its node-shared memory when every process is on one
/// node, MPI atomics (MPI_Fetch_and_op) otherwise. So fetch_add is atomic
/// with respect to every other fetch_add and reset from any process, and
/// needs no action from rank 0 (on one node, not even with MPIs whose RMA
/// waits for the target's progress).
/// Construction, reset() and destruction are collective over the world;
/// every process passes the same `initial` and `value` (checked: a
/// difference throws accrete::collective_misuse on every process).
/// Every member throws accrete::not_initialized after finalize(), also
/// under a later init(): a counter belongs to the runtime it was made in.
/// Call from the thread that drives the runtime.
class counter {
 public:
  /// Collective over the world: a counter holding `initial`.
  explicit counter(std::int64_t initial = 0);
  ~counter();
  counter(const counter&) = delete;
  counter& operator=(const counter&) = delete;

  /// Adds n and returns the value before (complete on return).
  std::int64_t fetch_add(std::int64_t n = 1);
  /// Collective: every process's earlier fetch_add is done, then the value
  /// is `value`, before any process returns.
  void reset(std::int64_t value = 0);

 private:
  detail::shared_block block_;
  std::uint64_t generation_ = 0;
  bool alive_ = true;
  void require_usable(const char* what) const;
};

}  // namespace accrete
