#pragma once
// Remote atomics in the MPI backend (src/backend/mpi/atomics.cpp).
//
// All atomics go through one window over every process's segment so that
// they are atomic with respect to each other wherever they come from: the
// backend's world window (segment_window()), locked with MPI_Win_lock_all
// from init to finalize. No private window is ever created.
#include "accrete/detail/internal.hpp"
#include <cstdint>

#include "accrete/detail/scalar_type.hpp"

namespace accrete::detail {

using atomic_type = scalar_type;
using atomic_op = scalar_op;

/// Counts live atomic domains (atomics without one are rejected); pairs with
/// atomics_release(). Not collective.
void atomics_acquire();
void atomics_release();

/// *result = old value at (rank, offset); the target becomes `op(old, *operand)`.
/// Complete (at the target too) on return.
void atomic_fetch_op(int rank, std::uint64_t offset, atomic_type t, atomic_op op, const void* operand, void* result);
/// The target becomes `op(old, *operand)`. Complete on return.
void atomic_accumulate(int rank, std::uint64_t offset, atomic_type t, atomic_op op, const void* operand);
/// If the target equals *expected it becomes *desired; *result = old value.
/// Compares bit patterns. Complete on return.
void atomic_compare_swap(int rank, std::uint64_t offset, atomic_type t, const void* expected, const void* desired,
                         void* result);

}  // namespace accrete::detail
