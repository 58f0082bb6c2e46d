// What the first touch of fresh memory costs on this machine, in 4 KiB
// pages and in transparent huge pages (madvise(MADV_HUGEPAGE)), which
// decides ACCRETE_HUGE_PAGES (docs/cluster.md, "Huge pages"). Maps MiB
// of anonymous memory, writes one byte per 4 KiB (the kernel zeroes and
// maps each page), then writes all of it again (pages already mapped).
// `collapse` touches it in 4 KiB pages and then asks for huge pages over
// what it holds (MADV_HUGEPAGE, then MADV_COLLAPSE, Linux 6.1 and later).
// `populate` maps the 4 KiB pages with one madvise(MADV_POPULATE_WRITE)
// (Linux 5.14 and later) instead of a fault per page.
//
//   bench_first_touch MIB 4k|huge|collapse|populate
//
// Run each in a new process; on a virtual machine whose host takes back
// free guest memory, run it after a few seconds of idle as well as right
// after another run: the two differ there.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <sys/mman.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25  // Linux 6.1's value, for older headers
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14's value, for older headers
#endif

int main(int argc, char** argv) {
  const long mib = argc > 1 ? std::atol(argv[1]) : 0;
  const std::string mode = argc > 2 ? argv[2] : "";
  if (mib <= 0 || (mode != "4k" && mode != "huge" && mode != "collapse" && mode != "populate")) {
    std::fprintf(stderr, "usage: bench_first_touch MIB 4k|huge|collapse|populate (MIB > 0, got '%s' '%s')\n",
                 argc > 1 ? argv[1] : "", mode.c_str());
    return 2;
  }
  const std::size_t huge = std::size_t{2} << 20, n = std::size_t(mib) << 20;
  void* m = mmap(nullptr, n + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) {
    std::perror("mmap");
    return 1;
  }
  // Whole huge pages: the mapping's start rounded up to 2 MiB.
  auto* p = reinterpret_cast<char*>((reinterpret_cast<std::uintptr_t>(m) + huge - 1) & ~std::uintptr_t(huge - 1));
  if (mode == "huge" && madvise(p, n, MADV_HUGEPAGE) != 0) std::perror("madvise (huge pages off?)");
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  if (mode == "populate") {
    if (madvise(p, n, MADV_POPULATE_WRITE) != 0) std::perror("madvise (MADV_POPULATE_WRITE needs Linux 5.14)");
  } else {
    for (std::size_t i = 0; i < n; i += 4096) p[i] = 1;
  }
  const auto t1 = clock::now();
  if (mode == "collapse" && (madvise(p, n, MADV_HUGEPAGE) != 0 || madvise(p, n, MADV_COLLAPSE) != 0))
    std::perror("madvise (MADV_COLLAPSE needs Linux 6.1)");
  const auto t2 = clock::now();
  std::memset(p, 2, n);
  const auto t3 = clock::now();
  const double first = std::chrono::duration<double>(t1 - t0).count(),
               collapse = std::chrono::duration<double>(t2 - t1).count(),
               again = std::chrono::duration<double>(t3 - t2).count();
  std::printf("%-8s %ld MiB: first touch %.1f ms (%.2f GB/s), collapse %.1f ms, written again %.1f ms (%.2f GB/s)\n",
              mode.c_str(), mib, first * 1e3, double(n) / first / 1e9, collapse * 1e3, again * 1e3,
              double(n) / again / 1e9);
  munmap(m, n + huge);
  return 0;
}
