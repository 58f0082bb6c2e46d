// Remote atomics: MPI_Fetch_and_op, MPI_Compare_and_swap and MPI_Accumulate
// on the window over all segments, completed by the backend's shared flush
// (internal progress flushes every target with outstanding operations once),
// not one flush per operation: a flood of atomics costs one MPI call each
// plus one flush per target per progress call.
#include <cstring>
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

namespace {
// A copy of an operand that lives until the operation's flush.
const void* keep(const void* operand, atomic_type t) {
  auto& slot = st.atomic_operands.emplace_back();
  std::memcpy(slot.data(), operand, scalar_bytes(t));
  return slot.data();
}
}  // namespace

void atomic_fetch_op(int rank, std::uint64_t offset, atomic_type t, atomic_op op, const void* operand, void* result,
                     completion done) {
  backend_guard g;
  MPI_Win w = win();
  ACCRETE_MPI(MPI_Fetch_and_op(keep(operand, t), result, mpi_type(t), rank, MPI_Aint(offset), mpi_op(op), w));
  await_flush_then(rank, std::move(done));
}

void atomic_accumulate(int rank, std::uint64_t offset, atomic_type t, atomic_op op, const void* operand,
                       state_base* s) {
  backend_guard g;
  MPI_Win w = win();
  ACCRETE_MPI(
      MPI_Accumulate(keep(operand, t), 1, mpi_type(t), rank, MPI_Aint(offset), 1, mpi_type(t), mpi_op(op), w));
  await_flush_counted(rank, s);
}

void atomic_compare_swap(int rank, std::uint64_t offset, atomic_type t, const void* expected, const void* desired,
                         void* result, completion done) {
  backend_guard g;
  MPI_Win w = win();
  // const_cast: SimGrid's SMPI (ACCRETE_SMPI builds) declares the buffers
  // non-const; MPI reads them only.
  const void* d = keep(desired, t);
  const void* e = keep(expected, t);
  ACCRETE_MPI(MPI_Compare_and_swap(const_cast<void*>(d), const_cast<void*>(e), result, cas_type(t), rank,
                                   MPI_Aint(offset), w));
  await_flush_then(rank, std::move(done));
}

}  // namespace accrete::detail
