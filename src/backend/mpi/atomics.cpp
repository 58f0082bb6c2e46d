// Remote atomics: MPI_Fetch_and_op, MPI_Compare_and_swap and MPI_Accumulate
// on the window over all segments, completed by the backend's shared flush
// (internal progress flushes every target with outstanding operations once),
// not one flush per operation: a flood of atomics costs one MPI call each
// plus one flush per target per progress call.
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <tuple>

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

// The type an atomic travels as: floats as the unsigned integer of their
// width (see float_rmw: every float operation works on the bits).
MPI_Datatype bits_type(atomic_type t) {
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

namespace {
// Floating-point read-modify-writes (add, mul, min, max) are compare-and-swap
// loops on the value's bits, and every other float operation uses the
// unsigned integer type of the same width too. Two reasons. Open MPI
// 4.1's osc/ucx, which serves the world window of the mixed layout
// (several processes on each of several nodes: MPI_Win_create) where UCX
// is present, applies MPI_Fetch_and_op's MPI_SUM to a double as an integer
// addition of its bits: the value at the target became garbage
// (atomic_test under ACCRETE_NODE_SIZE=2, P = 3, and a plain-MPI
// reproducer). And MPI makes concurrent accumulates atomic only when they
// use the same predefined datatype: a float compare_exchange (on the bits,
// MPI has no floating-point compare-and-swap) and a float add are atomic
// with each other only if the add is on the bits as well. The price: a
// float add takes at least two round trips (a first swap on a guess, then
// one on the value it returned), more under contention. Operations of one
// caller (thread queue) on one cell go one at a time, each starting from
// the value the one before it left: a flood of adds to one cell would
// otherwise retry quadratically (every swap in flight but one misses).
template <class F, class U>
U combine_bits(atomic_op op, U old_bits, U operand_bits) {
  F a, b;
  std::memcpy(&a, &old_bits, sizeof a);
  std::memcpy(&b, &operand_bits, sizeof b);
  F r = a;
  if (op == atomic_op::add)
    r = a + b;
  else if (op == atomic_op::mul)
    r = a * b;
  else if (op == atomic_op::min)
    r = b < a ? b : a;
  else if (op == atomic_op::max)
    r = b > a ? b : a;
  U out;
  std::memcpy(&out, &r, sizeof out);
  return out;
}

// One float read-modify-write in flight: the bits it expects at the
// target and the bits it swaps in (the low 32 for f32).
struct float_rmw {
  int rank = 0;
  std::uint64_t offset = 0;
  atomic_type t = atomic_type::f64;
  atomic_op op = atomic_op::add;
  std::uint64_t operand = 0, expected = 0;  // a guess at first: a miss returns the value
  std::uint64_t desired = 0;
  const lpc_queue* caller = nullptr;  // the issuing queue: its operations on the cell go in order
  std::uint64_t got64 = 0;
  std::uint32_t got32 = 0;
  void* result = nullptr;     // the previous value, for a fetching operation
  completion done;            // a fetching operation's completion
  state_base* s = nullptr;    // or a counted one's (referenced until then)
};

// The float operations of one caller on one cell, in issue order: the
// first is in flight, the others wait for it.
using cell_key = std::tuple<int, std::uint64_t, const lpc_queue*>;
std::map<cell_key, std::deque<std::shared_ptr<float_rmw>>> cells;
cell_key key_of(const float_rmw& r) { return {r.rank, r.offset, r.caller}; }

void swap_step(const std::shared_ptr<float_rmw>& r);

// Starts r now, or after the caller's earlier operations on its cell.
void float_start(const std::shared_ptr<float_rmw>& r) {
  {
    backend_guard g;
    r->caller = current_queue().get();
    auto& line = cells[key_of(*r)];
    line.push_back(r);
    if (line.size() > 1) return;
  }
  swap_step(r);
}

// r succeeded: the next operation of its caller on its cell starts from
// the value r left.
void float_next(const float_rmw& r) {
  std::shared_ptr<float_rmw> next;
  {
    backend_guard g;
    auto it = cells.find(key_of(r));
    if (it == cells.end()) return;
    it->second.pop_front();
    if (it->second.empty()) {
      cells.erase(it);
      return;
    }
    next = it->second.front();
  }
  next->expected = r.desired;
  swap_step(next);
}

void swap_step(const std::shared_ptr<float_rmw>& r) {
  const bool f32 = r->t == atomic_type::f32;
  r->desired = f32 ? combine_bits<float, std::uint32_t>(r->op, std::uint32_t(r->expected), std::uint32_t(r->operand))
                   : combine_bits<double, std::uint64_t>(r->op, r->expected, r->operand);
  {
    backend_guard g;
    MPI_Win w = win();
    const std::uint32_t d32 = std::uint32_t(r->desired), e32 = std::uint32_t(r->expected);
    const void* d = f32 ? keep(&d32, atomic_type::u32) : keep(&r->desired, atomic_type::u64);
    const void* e = f32 ? keep(&e32, atomic_type::u32) : keep(&r->expected, atomic_type::u64);
    void* got = f32 ? static_cast<void*>(&r->got32) : static_cast<void*>(&r->got64);
    ACCRETE_MPI(MPI_Compare_and_swap(const_cast<void*>(d), const_cast<void*>(e), got, bits_type(r->t), r->rank,
                                     MPI_Aint(r->offset), w));
  }
  await_flush_then(r->rank, [r] {
    const bool f32 = r->t == atomic_type::f32;
    const std::uint64_t got = f32 ? std::uint64_t(r->got32) : r->got64;
    if (got != r->expected) {  // another value was there: try again on it
      r->expected = got;
      swap_step(r);
      return;
    }
    if (r->result) {
      if (f32)
        std::memcpy(r->result, &r->got32, sizeof r->got32);
      else
        std::memcpy(r->result, &r->got64, sizeof r->got64);
    }
    float_next(*r);
    if (r->s) {
      await_flush_counted(r->rank, r->s);
      release(r->s);
    } else {
      r->done();
    }
  });
}

std::shared_ptr<float_rmw> float_op(int rank, std::uint64_t offset, atomic_type t, atomic_op op, const void* operand) {
  auto r = std::make_shared<float_rmw>();
  r->rank = rank;
  r->offset = offset;
  r->t = t;
  r->op = op;
  if (t == atomic_type::f32) {
    std::uint32_t b;
    std::memcpy(&b, operand, sizeof b);
    r->operand = b;
  } else {
    std::memcpy(&r->operand, operand, sizeof r->operand);
  }
  return r;
}

bool float_loop(atomic_type t, atomic_op op) {
  return (t == atomic_type::f32 || t == atomic_type::f64) &&
         (op == atomic_op::add || op == atomic_op::mul || op == atomic_op::min || op == atomic_op::max);
}
}  // namespace

void atomic_check(atomic_type t, atomic_op op, bool compare_swap) {
  if (!st.cas64_crashes || scalar_bytes(t) != 8 || !(compare_swap || float_loop(t, op))) return;
  throw error(
      "accrete::atomic_domain: this operation is a 64-bit compare-and-swap (compare_exchange of a 64-bit value; "
      "add, sub, mul, min or max of a double), which crashes Open MPI 4's one-sided component osc/rdma "
      "(open-mpi/ompi#7967), and osc/rdma serves this run's window across nodes. Leave it out: "
      "OMPI_MCA_osc=^rdma in the environment (mpiexec --mca osc ^rdma); accrete does so itself when it is the "
      "one that initializes MPI");
}

void atomic_fetch_op(int rank, std::uint64_t offset, atomic_type t, atomic_op op, const void* operand, void* result,
                     completion done) {
  if (float_loop(t, op)) {
    auto r = float_op(rank, offset, t, op, operand);
    r->result = result;
    r->done = std::move(done);
    float_start(r);
    return;
  }
  backend_guard g;
  MPI_Win w = win();
  ACCRETE_MPI(MPI_Fetch_and_op(keep(operand, t), result, bits_type(t), rank, MPI_Aint(offset), mpi_op(op), w));
  await_flush_then(rank, std::move(done));
}

void atomic_accumulate(int rank, std::uint64_t offset, atomic_type t, atomic_op op, const void* operand,
                       state_base* s) {
  if (float_loop(t, op)) {
    auto r = float_op(rank, offset, t, op, operand);
    add_ref(s);  // released when the loop hands it to the flush count
    r->s = s;
    float_start(r);
    return;
  }
  backend_guard g;
  MPI_Win w = win();
  ACCRETE_MPI(
      MPI_Accumulate(keep(operand, t), 1, bits_type(t), rank, MPI_Aint(offset), 1, bits_type(t), mpi_op(op), w));
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
  ACCRETE_MPI(MPI_Compare_and_swap(const_cast<void*>(d), const_cast<void*>(e), result, bits_type(t), rank,
                                   MPI_Aint(offset), w));
  await_flush_then(rank, std::move(done));
}

}  // namespace accrete::detail
