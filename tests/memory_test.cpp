// Resident memory right after init (issue 12, part 4; docs/scaling.md):
// accrete must not make its segment resident, and what it allocates per
// peer is small integers, so RSS after init stays far below the segment.
// The CTest registrations run with ACCRETE_SEGMENT_SIZE=1G: touching the
// segment (or anything of its order) would exceed the bound at once.
//
// Open MPI's default one-sided component (osc/rdma) makes an
// MPI_Win_allocate window resident itself (measured: 268 MiB after init
// with the default 256 MiB segment); on the path where every process is its
// own node accrete uses that call, so that cell runs with osc/rdma off
// (docs/scaling.md says why accrete keeps MPI_Win_allocate there).
#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "accrete/accrete.hpp"
#include "accrete/matrix/convergent_matrix.hpp"

using namespace accrete;

namespace {
// Kibibytes of a /proc/self/status field ("VmRSS", "VmHWM").
long status_kib(const std::string& field) {
  std::ifstream f("/proc/self/status");
  std::string key;
  while (f >> key) {
    if (key == field + ":") {
      long v = -1;
      f >> v;
      return v;
    }
    std::getline(f, key);
  }
  return -1;
}
}  // namespace

TEST(Memory, ResidentSetAfterInitStaysUnderBound) {
  // The bound: what a test process of MPI + GoogleTest + accrete holds
  // after init here is 13-25 MiB (both MPIs, both paths); 96 MiB leaves
  // room for other MPI builds and is an order below the 1 GiB segment.
  constexpr long bound_kib = 96 * 1024;
  const long rss = status_kib("VmRSS"), peak = status_kib("VmHWM");
  ASSERT_GT(rss, 0) << "no VmRSS in /proc/self/status";
  std::printf("[rank %d] RSS after init %.1f MiB (peak %.1f MiB), %d processes, %d on this node\n", rank_me(),
              double(rss) / 1024, double(peak) / 1024, rank_n(), local_team().rank_n());
  EXPECT_LE(peak, bound_kib) << "resident set after init above " << bound_kib / 1024 << " MiB";
}

namespace {
// The huge-page policy of the tmpfs at /dev/shm (its "huge=" mount option,
// "never" when absent), where the MPIs keep MPI_Win_allocate_shared memory.
std::string dev_shm_huge_policy() {
  std::ifstream f("/proc/mounts");
  std::string dev, dir, type, opts, rest;
  std::string policy = "never";
  while (f >> dev >> dir >> type >> opts) {
    std::getline(f, rest);
    if (dir != "/dev/shm") continue;
    policy = "never";  // the last mount there is the one in effect
    for (std::size_t at = 0; at < opts.size();) {
      std::size_t end = opts.find(',', at);
      if (end == std::string::npos) end = opts.size();
      if (opts.compare(at, 5, "huge=") == 0) policy = opts.substr(at + 5, end - at - 5);
      at = end + 1;
    }
  }
  return policy;
}
}  // namespace

TEST(Memory, PageTablesOfANodeMatrix) {
  // Every process maps the storage of all processes of its node (direct
  // stores), so with 4 KiB pages a process's page tables grow by about
  // (node's matrix bytes) / 512 (docs/scaling.md). accrete asks for huge
  // pages on that mapping; where the tmpfs holding it grants them
  // (mount -o remount,huge=advise /dev/shm), the growth must be a small
  // fraction of that (measured: 8-12 KiB instead of 576 KiB).
  const int on_node = local_team().rank_n();
  const std::int64_t n = 6144;  // 288 MiB of doubles over all processes
  process_grid g(world().mpi_comm());
  const long before = status_kib("VmPTE");
  ASSERT_GE(before, 0) << "no VmPTE in /proc/self/status";
  long grown = 0;
  {
    convergent_matrix<double> a(n, n, g, 64);
    a.commit();
    grown = status_kib("VmPTE") - before;
  }
  const double node_bytes = double(n) * double(n) * 8 * on_node / rank_n();
  const long full_kib = long(node_bytes / 512 / 1024);
  const std::string policy = dev_shm_huge_policy();
  const bool huge = policy == "always" || policy == "within_size" || policy == "advise";
  std::printf("[rank %d] page tables grew %ld KiB for a %.0f MiB node matrix (%d processes on this node; "
              "4 KiB pages would need %ld KiB; /dev/shm huge=%s)\n",
              rank_me(), grown, node_bytes / (1 << 20), on_node, full_kib, policy.c_str());
  // 4 KiB pages: the mapping's page tables, plus a little for the rest.
  EXPECT_LE(grown, full_kib + full_kib / 4 + 256);
  // Only Open MPI maps its windows where 2 MiB pages can be mapped whole:
  // MPICH 4.0 puts offset 0 of its /dev/shm file at an address that is not
  // 2 MiB-aligned (measured: 0x...3e1000), so the kernel maps even huge
  // pages with 4 KiB entries there.
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(lib, &len);
  const bool open_mpi = std::string(lib, std::size_t(len)).find("Open MPI") != std::string::npos;
  if (huge && open_mpi && on_node > 1) {
    EXPECT_LE(grown, full_kib / 8) << "huge pages were not used for the node's matrix";
  }
}
