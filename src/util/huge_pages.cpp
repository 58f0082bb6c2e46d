// Which large buffers are advised for huge pages (src/util/huge_pages.hpp).
#include "util/huge_pages.hpp"

#include <string>

#include "accrete/detail/env.hpp"
#include "accrete/error.hpp"

namespace accrete::detail {

huge_pages_mode huge_pages_from_env() {
  const auto e = env_word("ACCRETE_HUGE_PAGES");
  if (!e || *e == "all") return huge_pages_mode::all;
  if (*e == "targets") return huge_pages_mode::targets;
  if (*e == "none") return huge_pages_mode::none;
  throw error("accrete: ACCRETE_HUGE_PAGES='" + *e + "' is not all, targets or none");
}

huge_pages_mode huge_pages_level() noexcept {
  static const huge_pages_mode m = [] {
    try {
      return huge_pages_from_env();
    } catch (...) {
      return huge_pages_mode::all;  // unreachable after init, which throws for a bad value
    }
  }();
  return m;
}

}  // namespace accrete::detail
