// Which large buffers are advised for huge pages (src/util/huge_pages.hpp).
#include "util/huge_pages.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <system_error>

#include "accrete/detail/env.hpp"
#include "accrete/error.hpp"

namespace accrete::detail {

bool host_takes_back_free_memory(const std::string& sysfs) {
  namespace fs = std::filesystem;
  constexpr unsigned long balloon_device = 5;
  constexpr std::size_t reporting_bit = 5;
  std::error_code ec;
  fs::directory_iterator it(fs::path(sysfs) / "bus/virtio/devices", ec);
  // No virtio bus (bare metal, or a guest without virtio): nobody takes
  // memory back.
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const fs::path d = it->path();
    std::ifstream dev(d / "device");
    std::string id;
    if (!(dev >> id)) continue;
    char* end = nullptr;
    if (std::strtoul(id.c_str(), &end, 16) != balloon_device || *end != '\0') continue;
    // Unbound, nothing reports free pages to the host.
    std::error_code bound;
    if (!fs::exists(d / "driver", bound)) continue;
    std::ifstream f(d / "features");
    std::string bits;
    if ((f >> bits) && bits.size() > reporting_bit && bits[reporting_bit] == '1') return true;
  }
  return false;
}

std::optional<huge_pages_mode> huge_pages_from_env() {
  const auto e = env_word("ACCRETE_HUGE_PAGES");
  if (!e || *e == "auto") return std::nullopt;
  if (*e == "all") return huge_pages_mode::all;
  if (*e == "targets") return huge_pages_mode::targets;
  if (*e == "none") return huge_pages_mode::none;
  throw error("accrete: ACCRETE_HUGE_PAGES='" + *e + "' is not auto, all, targets or none");
}

huge_pages_mode huge_pages_level() noexcept {
  static const huge_pages_mode m = [] {
    try {
      if (const auto given = huge_pages_from_env()) return *given;
      return host_takes_back_free_memory() ? huge_pages_mode::targets : huge_pages_mode::all;
    } catch (...) {
      return huge_pages_mode::all;  // a bad value: unreachable after init, which throws for it
    }
  }();
  return m;
}

const char* huge_pages_name(huge_pages_mode m) noexcept {
  switch (m) {
    case huge_pages_mode::none:
      return "none";
    case huge_pages_mode::targets:
      return "targets";
    case huge_pages_mode::all:
      return "all";
  }
  return "?";
}

}  // namespace accrete::detail
