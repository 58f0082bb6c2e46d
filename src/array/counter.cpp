#include "accrete/array/counter.hpp"

#include <atomic>
#include <string>

#include "accrete/collectives.hpp"
#include "accrete/error.hpp"

namespace accrete {

namespace {
// The agreement comes before the block is allocated (every process, or
// none, allocates).
std::size_t agreed_bytes(std::int64_t initial) {
  detail::require_initialized("accrete::counter");
  detail::agree("accrete::counter", nullptr, {{"initial", initial}});
  return 8;
}
}  // namespace

counter::counter(std::int64_t initial) : block_(agreed_bytes(initial)), generation_(detail::runtime_generation()) {
  *reinterpret_cast<std::int64_t*>(block_.local()) = initial;
  block_.sync();
  barrier(world());
}

counter::~counter() {
  alive_ = false;
  if (detail::runtime_up() && generation_ == detail::runtime_generation()) {
    try {
      barrier(world());  // nobody may still be adding
    } catch (...) {
    }
  }
}

void counter::require_usable(const char* what) const {
  if (!detail::runtime_up())
    throw not_initialized(std::string("accrete::counter::") + what +
                          ": the runtime is not initialized (or already finalized)");
  if (generation_ != detail::runtime_generation())
    throw not_initialized(std::string("accrete::counter::") + what +
                          ": it was made under a runtime that has been finalized; objects do not carry over to a "
                          "new init()");
  if (!alive_) throw error(std::string("accrete::counter::") + what + ": the counter has been destroyed");
}

namespace {
// With every process on one node the value is changed by CPU atomics on
// rank 0's slice, never by MPI: MPICH 4.0 (ch4) serves MPI_Fetch_and_op on
// a shared-memory window only when rank 0 enters MPI, so a fetch_add waited
// for rank 0 to finish its DGEMM (matmul, MPICH, paper, P = 2: 68-78% of
// the DGEMM bound). Mixed with MPI atomics the two would not be atomic with
// respect to each other, hence all processes on one node or none.
std::atomic_ref<std::int64_t> direct_value(const detail::shared_block& b) {
  return std::atomic_ref<std::int64_t>(*reinterpret_cast<std::int64_t*>(b.peer(0)));
}
}  // namespace

std::int64_t counter::fetch_add(std::int64_t n) {
  require_usable("fetch_add");
  if (detail::world_on_one_node()) return direct_value(block_).fetch_add(n, std::memory_order_acq_rel);
  return block_.fetch_op(0, 0, n, false);
}

void counter::reset(std::int64_t value) {
  std::exception_ptr bad;
  try {
    require_usable("reset");
  } catch (...) {
    bad = std::current_exception();
  }
  detail::agree("accrete::counter::reset", bad, {{"value", value}});
  barrier(world());
  if (detail::world_rank() == 0) {
    if (detail::world_on_one_node())
      direct_value(block_).store(value, std::memory_order_release);
    else
      block_.fetch_op(0, 0, value, true);
  }
  barrier(world());
}

}  // namespace accrete
