#include "accrete/array/counter.hpp"

#include <string>

#include "accrete/collectives.hpp"
#include "accrete/error.hpp"

namespace accrete {

counter::counter(std::int64_t initial) : block_((detail::require_initialized("accrete::counter"), 8)) {
  *reinterpret_cast<std::int64_t*>(block_.local()) = initial;
  block_.sync();
  barrier(world());
}

counter::~counter() {
  alive_ = false;
  if (detail::runtime_up()) {
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
  if (!alive_) throw error(std::string("accrete::counter::") + what + ": the counter has been destroyed");
}

std::int64_t counter::fetch_add(std::int64_t n) {
  require_usable("fetch_add");
  return block_.fetch_op(0, 0, n, false);
}

void counter::reset(std::int64_t value) {
  require_usable("reset");
  barrier(world());
  if (detail::world_rank() == 0) block_.fetch_op(0, 0, value, true);
  barrier(world());
}

}  // namespace accrete
