#pragma once
// Remote atomics in the MPI backend (src/backend/mpi/atomics.cpp).
//
// All atomics go through one window over every process's segment so that
// they are atomic with respect to each other wherever they come from: the
// backend's world window (segment_window()), locked with MPI_Win_lock_all
// from init to finalize. No private window is ever created.
#include "accrete/detail/internal.hpp"
#include <cstdint>

#include "accrete/detail/backend.hpp"
#include "accrete/detail/scalar_type.hpp"

namespace accrete::detail {

using atomic_type = scalar_type;
using atomic_op = scalar_op;

/// Counts live atomic domains (atomics without one are rejected); pairs with
/// atomics_release(). Not collective.
void atomics_acquire();
void atomics_release();

// Each call issues one MPI atomic and returns: the operation completes at
// the next flush of its target (internal progress flushes every target
// with outstanding operations at once, one MPI_Win_flush each). Then `done`
// runs (at user-level progress), or one dependency of `s` is fulfilled
// (counted, as for put_remote: a flood completing one promise shares one
// queue entry). Operands are copied at the call; `result` must stay valid
// until completion. Operations in flight together are not relied on to be
// ordered (Open MPI over TCP reorders one origin's MPI_Fetch_and_op).

/// Throws accrete::error, naming the cause and the remedy, if the operation
/// (`op` on t, or a compare-and-swap) would crash this run's MPI: Open MPI
/// 4's osc/rdma on a 64-bit compare-and-swap (src/backend/mpi/init.cpp).
/// Called before an operation is issued, so nothing is left behind.
void atomic_check(atomic_type t, atomic_op op, bool compare_swap);

/// *result = old value at (rank, offset); the target becomes `op(old, *operand)`.
void atomic_fetch_op(int rank, std::uint64_t offset, atomic_type t, atomic_op op, const void* operand, void* result,
                     completion done);
/// The target becomes `op(old, *operand)`.
void atomic_accumulate(int rank, std::uint64_t offset, atomic_type t, atomic_op op, const void* operand,
                       state_base* s);
/// If the target equals *expected it becomes *desired; *result = old value.
/// Compares bit patterns.
void atomic_compare_swap(int rank, std::uint64_t offset, atomic_type t, const void* expected, const void* desired,
                         void* result, completion done);

}  // namespace accrete::detail
