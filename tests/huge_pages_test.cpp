// ACCRETE_HUGE_PAGES (docs/cluster.md, "Huge pages"): which of a sparse
// matrix's arrays are advised for transparent huge pages, read back from
// the VmFlags of their mappings in /proc/self/smaps ("hg" marks
// madvise(MADV_HUGEPAGE)). The values take every later round's scattered
// adds (advised unless `none`); the pattern's columns are read in order
// (advised with `all`, the default, not with `targets`). Registered with
// the variable unset, `targets` and `none`; it expects the mode it runs
// under.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "accrete/accrete.hpp"
#include "accrete/sparse/sparse_matrix.hpp"

using namespace accrete;

namespace {

std::string expected_mode() {
  const char* e = std::getenv("ACCRETE_HUGE_PAGES");
  return e && *e ? e : "all";
}

bool thp_available() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string s;
  std::getline(f, s);
  return !s.empty() && s.find("[never]") == std::string::npos;
}

// Whether the mapping holding address a carries VmFlags "hg".
bool advised(const void* a) {
  const auto x = reinterpret_cast<std::uintptr_t>(a);
  std::ifstream f("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(f, line)) {
    std::uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream h(line);
    if (line.find("VmFlags:") == 0) {
      if (inside) return (line + " ").find(" hg ") != std::string::npos;
    } else if ((h >> std::hex >> lo >> dash >> hi) && dash == '-') {
      inside = x >= lo && x < hi;
    }
  }
  ADD_FAILURE() << "no mapping in /proc/self/smaps holds " << a;
  return false;
}

TEST(HugePages, SparseArraysFollowTheMode) {
  if (!thp_available()) GTEST_SKIP() << "transparent huge pages are off on this kernel (enabled = never)";
  // 80,000 rows of 16 entries per process: 10 MB of values and 5 MB of
  // columns, each spanning whole 2 MiB pages.
  const std::int64_t nl = 80000;
  constexpr int w = 16;
  sparse_matrix<double> A(nl, nl);
  std::vector<double> block(w);
  std::vector<std::int64_t> row(1), cols(w);
  for (std::int64_t i = A.row_begin(); i < A.row_end(); ++i) {
    row[0] = i;
    for (int j = 0; j < w; ++j) {
      cols[std::size_t(j)] = A.col_begin() + (i - A.row_begin() + j * 997) % nl;
      block[std::size_t(j)] = double(j + 1);
    }
    std::sort(cols.begin(), cols.end());
    A.update(block.data(), w, row, cols, matrix_layout::row_major);
  }
  A.commit();
  const auto d = A.diag();
  ASSERT_EQ(d.value.size(), std::size_t(nl * w));
  // The assembly itself, so the arrays probed are the ones written.
  double sum = 0;
  for (double v : d.value) sum += v;
  EXPECT_EQ(sum, double(nl) * w * (w + 1) / 2);
  const bool values_hg = advised(d.value.data() + d.value.size() / 2);
  const bool cols_hg = advised(d.col.data() + d.col.size() / 2);
  const std::string mode = expected_mode();
  if (mode == "none") {
    EXPECT_FALSE(values_hg);
    EXPECT_FALSE(cols_hg);
  } else if (mode == "targets") {
    EXPECT_TRUE(values_hg);
    EXPECT_FALSE(cols_hg);
  } else if (mode == "all") {
    EXPECT_TRUE(values_hg);
    EXPECT_TRUE(cols_hg);
  } else {
    FAIL() << "ACCRETE_HUGE_PAGES='" << mode << "' is not none, targets or all";
  }
}

}  // namespace
