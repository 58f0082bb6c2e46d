// Remote atomics: MPI_Fetch_and_op, MPI_Compare_and_swap and MPI_Accumulate
// on the window over all segments, each followed by a flush to its target so
// that the operation is complete (and visible to every later atomic) when
// the call returns.
#include <string>

#include "accrete/detail/backend.hpp"
#include "accrete/detail/backend_atomics.hpp"
#include "accrete/error.hpp"
#include "backend/mpi/mpi_types.hpp"
#include "backend/mpi/state.hpp"

namespace accrete::detail {
namespace {
int users = 0;

MPI_Win win() {
  MPI_Win w = segment_window();
  if (w == MPI_WIN_NULL || users == 0) throw error("accrete: atomic operation without a live atomic_domain");
  return w;
}

// MPI_Compare_and_swap takes integer types only: floats compare as bits.
MPI_Datatype cas_type(atomic_type t) {
  switch (t) {
    case atomic_type::f32:
      return MPI_UINT32_T;
    case atomic_type::f64:
      return MPI_UINT64_T;
    default:
      return mpi_type(t);
  }
}

}  // namespace

void atomics_acquire() {
  require_initialized("atomic_domain");
  ++users;
}

void atomics_release() {
  if (users > 0) --users;
}

void atomic_fetch_op(int rank, std::uint64_t offset, atomic_type t, atomic_op op, const void* operand, void* result) {
  MPI_Win w = win();
  ACCRETE_MPI(MPI_Fetch_and_op(operand, result, mpi_type(t), rank, MPI_Aint(offset), mpi_op(op), w));
  ACCRETE_MPI(MPI_Win_flush(rank, w));
}

void atomic_accumulate(int rank, std::uint64_t offset, atomic_type t, atomic_op op, const void* operand) {
  MPI_Win w = win();
  ACCRETE_MPI(MPI_Accumulate(operand, 1, mpi_type(t), rank, MPI_Aint(offset), 1, mpi_type(t), mpi_op(op), w));
  ACCRETE_MPI(MPI_Win_flush(rank, w));
}

void atomic_compare_swap(int rank, std::uint64_t offset, atomic_type t, const void* expected, const void* desired,
                         void* result) {
  MPI_Win w = win();
  // const_cast: SimGrid's SMPI (ACCRETE_SMPI builds) declares the buffers
  // non-const; MPI reads them only.
  ACCRETE_MPI(MPI_Compare_and_swap(const_cast<void*>(desired), const_cast<void*>(expected), result, cas_type(t), rank,
                                   MPI_Aint(offset), w));
  ACCRETE_MPI(MPI_Win_flush(rank, w));
}

}  // namespace accrete::detail
