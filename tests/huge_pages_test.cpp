// ACCRETE_HUGE_PAGES (docs/cluster.md, "Huge pages"): which of a sparse
// matrix's arrays are advised for transparent huge pages, read back from
// the VmFlags of their mappings in /proc/self/smaps ("hg" marks
// madvise(MADV_HUGEPAGE), "nh" madvise(MADV_NOHUGEPAGE)). The values take
// every later round's scattered adds (advised unless `none`); the pattern's
// columns are read in order (advised with `all`, advised against with
// `targets`). Registered with the variable
// unset (`auto`: `targets` on a guest whose host takes back free memory,
// else `all`), `all`, `targets` and `none`; it expects the mode it runs
// under. `auto`'s detection is checked on sysfs trees the test writes.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <gtest/gtest.h>

#include "accrete/accrete.hpp"
#include "accrete/sparse/sparse_matrix.hpp"
#include "util/huge_pages.hpp"

using namespace accrete;

namespace {

std::string expected_mode() {
  const char* e = std::getenv("ACCRETE_HUGE_PAGES");
  if (e && *e && std::string(e) != "auto") return e;
  return detail::host_takes_back_free_memory() ? "targets" : "all";
}

bool thp_available() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string s;
  std::getline(f, s);
  return !s.empty() && s.find("[never]") == std::string::npos;
}

// The VmFlags of the mapping holding address a.
std::string vm_flags(const void* a) {
  const auto x = reinterpret_cast<std::uintptr_t>(a);
  std::ifstream f("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(f, line)) {
    std::uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream h(line);
    if (line.find("VmFlags:") == 0) {
      if (inside) return line.substr(8) + " ";
    } else if ((h >> std::hex >> lo >> dash >> hi) && dash == '-') {
      inside = x >= lo && x < hi;
    }
  }
  ADD_FAILURE() << "no mapping in /proc/self/smaps holds " << a;
  return "";
}
// madvise(MADV_HUGEPAGE) and madvise(MADV_NOHUGEPAGE).
bool advised(const void* a) { return vm_flags(a).find(" hg ") != std::string::npos; }
bool advised_against(const void* a) { return vm_flags(a).find(" nh ") != std::string::npos; }

// Every row's k-th stored entry is (k + 1) * (round + 1): exact.
void expect_rows(const sparse_matrix<double>& A, int w, int round) {
  const auto d = A.diag();
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i + 1 < std::int64_t(d.row_ptr.size()); ++i) {
    if (d.row_ptr[std::size_t(i) + 1] - d.row_ptr[std::size_t(i)] != w) ++bad;
    for (auto k = d.row_ptr[std::size_t(i)]; k < d.row_ptr[std::size_t(i) + 1]; ++k)
      if (d.value[std::size_t(k)] != double((k - d.row_ptr[std::size_t(i)] + 1) * (round + 1))) ++bad;
  }
  EXPECT_EQ(bad, 0) << "round " << round << ": wrong rows";
}

TEST(HugePages, SparseArraysFollowTheMode) {
  if (!thp_available()) GTEST_SKIP() << "transparent huge pages are off on this kernel (enabled = never)";
  // 80,000 rows of 16 entries per process: 10 MB of values and 5 MB of
  // columns, each spanning whole 2 MiB pages; round 0's log takes four
  // 4 MiB chunks, three of them advised with `all`.
  const std::int64_t nl = 80000;
  constexpr int w = 16;
  sparse_matrix<double> A(nl, nl);
  std::vector<double> block(w);
  std::vector<std::int64_t> row(1), cols(w);
  auto assemble = [&](int round) {
    for (std::int64_t i = A.row_begin(); i < A.row_end(); ++i) {
      row[0] = i;
      for (int j = 0; j < w; ++j) {
        cols[std::size_t(j)] = A.col_begin() + (i - A.row_begin() + j * 997) % nl;
        block[std::size_t(j)] = double((j + 1) * (round + 1));
      }
      std::sort(cols.begin(), cols.end());
      A.update(block.data(), w, row, cols, matrix_layout::row_major);
    }
    A.commit();
  };
  assemble(0);
  const auto d = A.diag();
  ASSERT_EQ(d.value.size(), std::size_t(nl * w));
  // The assembly itself, so the arrays probed are the ones written.
  double sum = 0;
  for (double v : d.value) sum += v;
  EXPECT_EQ(sum, double(nl) * w * (w + 1) / 2);
  expect_rows(A, w, 0);
  const bool values_hg = advised(d.value.data() + d.value.size() / 2);
  const bool cols_hg = advised(d.col.data() + d.col.size() / 2);
  const bool cols_nh = advised_against(d.col.data() + d.col.size() / 2);
  EXPECT_FALSE(advised_against(d.value.data() + d.value.size() / 2));
  const std::string mode = expected_mode();
  if (mode == "none") {
    EXPECT_FALSE(values_hg);
    EXPECT_FALSE(cols_hg);
    EXPECT_FALSE(cols_nh);
  } else if (mode == "targets") {
    // Marked against, so that the kernel's `always` does not give them
    // huge pages either.
    EXPECT_TRUE(values_hg);
    EXPECT_FALSE(cols_hg);
    EXPECT_TRUE(cols_nh);
  } else if (mode == "all") {
    EXPECT_TRUE(values_hg);
    EXPECT_TRUE(cols_hg);
    EXPECT_FALSE(cols_nh);
  } else {
    FAIL() << "ACCRETE_HUGE_PAGES='" << mode << "' is not none, targets or all";
  }
  // Later rounds replay round 0's slot-cache records, which live in the
  // log's chunks (huge pages or not, as the mode says): the first replay
  // packs them and gives each chunk's tail back, the next reads the
  // packed places.
  for (int round = 1; round < 3; ++round) {
    A.reset();
    assemble(round);
    expect_rows(A, w, round);
  }
}

// A sysfs tree of virtio devices, each (device id, features, bound).
struct virtio_device {
  std::string id, features;
  bool bound;
};

class FakeSysfs : public ::testing::Test {
 protected:
  std::filesystem::path root = std::filesystem::temp_directory_path() /
                               ("accrete_sysfs_" + std::to_string(rank_me()) + "_" + std::to_string(::getpid()));
  void TearDown() override { std::filesystem::remove_all(root); }
  std::string with(const std::vector<virtio_device>& devs) {
    namespace fs = std::filesystem;
    fs::remove_all(root);
    fs::create_directories(root / "bus/virtio/drivers/some_driver");
    for (std::size_t i = 0; i < devs.size(); ++i) {
      const fs::path d = root / "bus/virtio/devices" / ("virtio" + std::to_string(i));
      fs::create_directories(d);
      std::ofstream(d / "device") << devs[i].id << "\n";
      std::ofstream(d / "features") << devs[i].features << "\n";
      if (devs[i].bound) fs::create_directory_symlink(root / "bus/virtio/drivers/some_driver", d / "driver");
    }
    return root.string();
  }
};

// Bits 1, 2 and 5 (stats, deflate on OOM, free page reporting), as this
// project's Firecracker guests negotiate them; and the same without bit 5.
const std::string reporting = "0110010100000000000000000000000010000000000000000000000000000000";
const std::string no_reporting = "0110000100000000000000000000000010000000000000000000000000000000";

TEST_F(FakeSysfs, ABoundBalloonReportingFreePagesIsDetected) {
  EXPECT_TRUE(detail::host_takes_back_free_memory(with({{"0x0005", reporting, true}})));
  // Among other devices, in any place.
  EXPECT_TRUE(detail::host_takes_back_free_memory(
      with({{"0x0002", no_reporting, true}, {"0x0001", reporting, true}, {"0x0005", reporting, true}})));
}

TEST_F(FakeSysfs, AnythingElseIsNot) {
  EXPECT_FALSE(detail::host_takes_back_free_memory((root / "missing").string()));
  EXPECT_FALSE(detail::host_takes_back_free_memory(with({})));
  EXPECT_FALSE(detail::host_takes_back_free_memory(with({{"0x0005", no_reporting, true}})));
  EXPECT_FALSE(detail::host_takes_back_free_memory(with({{"0x0005", reporting, false}})));
  // Bit 5 of a block device or a network card is some other feature.
  EXPECT_FALSE(detail::host_takes_back_free_memory(with({{"0x0002", reporting, true}, {"0x0001", reporting, true}})));
  EXPECT_FALSE(detail::host_takes_back_free_memory(with({{"0x0005", "01100", true}})));
  EXPECT_FALSE(detail::host_takes_back_free_memory(with({{"0x0005x", reporting, true}})));
  EXPECT_FALSE(detail::host_takes_back_free_memory(with({{"0x0015", reporting, true}})));
}

TEST(HugePages, ModeNames) {
  EXPECT_STREQ(detail::huge_pages_name(detail::huge_pages_mode::all), "all");
  EXPECT_STREQ(detail::huge_pages_name(detail::huge_pages_mode::targets), "targets");
  EXPECT_STREQ(detail::huge_pages_name(detail::huge_pages_mode::none), "none");
  EXPECT_STREQ(detail::huge_pages_name(detail::huge_pages_level()), expected_mode().c_str());
}

}  // namespace
