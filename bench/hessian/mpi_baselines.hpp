// Plain-MPI baselines for the "hessian" workload (see README.md here and
// /work/shared/bench/hessian-workload.md). They use MPI and
// bench/common/hessian_workload.hpp only -- never an accrete header -- so they
// measure what a careful MPI programmer would write without the library.
//
// Every function is collective over `comm`, whose size P and rank order define
// the Pr x Pc grid (row-major, as in the spec). `local` is this rank's share of
// the block-cyclic matrix (MB = NB = 64), column-major with leading dimension
// ld >= local_rows; its dimensions must be the numroc ones (make_layout). The
// updates of this rank are ADDED to whatever `local` holds (zero it first for
// the spec's H).
#pragma once

// The MPI-2 C++ bindings are unused and their headers warn under -Wextra.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <cstdint>

#include "hessian_workload.hpp"

namespace bench::hessian {

struct baseline_timing {
  // The timed region starts after a barrier and ends when this rank's
  // collective completion returns; every time below is the maximum over the
  // ranks of that rank's value (total is the spec's T).
  double total = 0;
  double gen = 0;    // make_update
  double bin = 0;    // per-owner packing, datatype construction, sizing pass
  double comm = 0;   // MPI calls that move or complete data
  double apply = 0;  // adding received / own data into the local matrix
  double setup = 0;  // untimed: window allocation, copies in/out of the window
  // Payload bytes sent to other ranks (self excluded, headers included),
  // summed over ranks.
  uint64_t bytes = 0;
  // Sum of every element of the resulting matrix (double, reduced over
  // ranks), computed after the clock stops.
  double checksum = 0;
};

// How baseline_accumulate makes its origin buffers reusable.
enum class accumulate_sync {
  // Two packed origin buffers; MPI_Win_flush_local_all before reusing one, so
  // packing update u overlaps the transfer of update u-1. Remote completion
  // only at MPI_Win_unlock_all. Default: the fastest in our measurements.
  flush_local_double_buffer,
  // MPI_Win_flush_all after every update (remote completion each time).
  flush_all_per_update,
};

// (a) "The paper's MPI variant, improved": one passive-target epoch
// (MPI_Win_lock_all) on a window over the local matrix; per update and owner
// ONE MPI_Accumulate(MPI_SUM, MPI_FLOAT) from a packed origin buffer into a
// derived datatype describing exactly the target's local positions.
// The window is created with MPI_Win_allocate (Open MPI 4.1 cannot
// MPI_Win_create at P = 1 with its default components); `local` is copied in
// and out around the timed region, and that copy and the window allocation are
// reported as setup.
baseline_timing baseline_accumulate(const params& prm, MPI_Comm comm, float* local, int64_t ld, int64_t local_rows,
                                    int64_t local_cols,
                                    accumulate_sync sync = accumulate_sync::flush_local_double_buffer);

// (b) Bulk-synchronous binning: every update is generated and its elements are
// packed per owner (compact run-length format, own elements applied at once);
// one MPI_Alltoall of counts and one MPI_Alltoallv at the end, after which
// each rank applies what it received.
baseline_timing baseline_alltoallv(const params& prm, MPI_Comm comm, float* local, int64_t ld, int64_t local_rows,
                                   int64_t local_cols);

// (c) Local-apply reference (not a lower bound): each rank generates its own
// updates and adds every element (a, b) into a private array with the
// maximal local dimensions, at (local_row(a), local_col(b)) -- the position
// the element has in its owner's storage, which always fits. It is the same
// arithmetic as applying the updates with free communication, but into one
// private array that stays warmer in cache than the owners' parts do, so a
// real assembly can beat it slightly (ratios of 0.96-0.98 were measured).
// checksum is the reduced sum of the private arrays, i.e. the expected
// checksum.
baseline_timing local_apply_reference(const params& prm, MPI_Comm comm);

// (d) MPI-3 shared memory on one node, as DART does it: every process's part
// in one MPI_Win_allocate_shared window; each process adds its updates
// straight into the owners' parts (MPI_Win_shared_query), under per
// column-block spin locks (64 per part, C++ atomics in the window), then
// MPI_Win_sync + MPI_Barrier + MPI_Win_sync. Throws std::runtime_error
// unless every rank of comm shares one node.
baseline_timing baseline_shared_memory(const params& prm, MPI_Comm comm, float* local, int64_t ld, int64_t local_rows,
                                       int64_t local_cols);

// The memory bandwidth the assembly can use: every rank of comm at once runs
// d[i] += s[i] over two private arrays of `elements` floats (far larger than
// the caches), best of `reps`, timed from the first start to the last end
// (barriers around the loop); returns the aggregate bytes per second,
// counting 12 bytes per element (read s, read d, write d) -- the traffic of
// one assembly element. A STREAM "add"-like kernel.
double stream_add_bandwidth(MPI_Comm comm, int64_t elements = int64_t(1) << 25, int reps = 3);

}  // namespace bench::hessian
