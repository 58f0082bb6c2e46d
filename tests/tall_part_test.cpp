// A dist_array part taller than INT_MAX rows, reached over MPI (run with
// ACCRETE_NODE_SIZE=1 at P = 2): one put of the whole part (2^31 + 8 rows,
// more than one MPI operation can count), then gets and accumulates of
// patches that straddle local row 2^31. Every element lands where it
// belongs. Needs 8 GiB of shared memory for the part; the source buffer is
// a sparse mapping that is only read.
#include <cstdint>
#include <cstdio>
#include <vector>

#include <mpi.h>
#include <sys/mman.h>

#include "accrete/accrete.hpp"
#include "accrete/array/dist_array.hpp"

int main() {
  accrete::runtime rt;
  const int me = accrete::rank_me();
  if (accrete::rank_n() != 2) {
    if (me == 0) std::fprintf(stderr, "tall_part_test: run on 2 processes\n");
    return 1;
  }
  const std::int64_t R = (std::int64_t{1} << 31) + 8;  // rows of part 1
  // Part 0: rows [0, 8); part 1: rows [8, 8 + R).
  accrete::dist_array<float> A(accrete::distribution::irregular({0, 8, 8 + R}, {0, 1}));
  // Local rows of part 1 that the checks look at (either side of 2^31).
  const std::int64_t at[] = {0, (std::int64_t{1} << 31) - 1, std::int64_t{1} << 31, R - 1};
  int bad = 0;
  if (me == 0) {
    void* m = mmap(nullptr, std::size_t(R) * sizeof(float), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
      std::perror("mmap");
      return 1;
    }
    auto* src = static_cast<float*>(m);
    for (int k = 0; k < 4; ++k) src[at[k]] = float(k + 1);
    A.put_blocking({8, 8 + R, 0, 1}, src, R);  // the whole part, one call
    A.flush();
    // A patch across local row 2^31: the last 16 rows, from local row
    // 2^31 - 8 (holding at[1], at[2] and at[3] at positions 7, 8, 15).
    const std::int64_t lo = 8 + (std::int64_t{1} << 31) - 8;
    auto put_value = [](int k) { return k == 7 ? 2.f : k == 8 ? 3.f : k == 15 ? 4.f : 0.f; };
    std::vector<float> got(16, -1.f), ones(16, 0.5f);
    A.get_blocking({lo, lo + 16, 0, 1}, got.data(), 16);
    for (int k = 0; k < 16; ++k) {
      const float want = put_value(k);
      if (got[std::size_t(k)] != want) {
        std::fprintf(stderr, "after put: row %lld holds %g, want %g\n", static_cast<long long>(lo + k),
                     double(got[std::size_t(k)]), double(want));
        bad = 1;
      }
    }
    A.acc_blocking({lo, lo + 16, 0, 1}, ones.data(), 16);
    A.flush();
    A.get_blocking({lo, lo + 16, 0, 1}, got.data(), 16);
    for (int k = 0; k < 16; ++k) {
      const float want = put_value(k) + 0.5f;
      if (got[std::size_t(k)] != want) {
        std::fprintf(stderr, "after acc: row %lld holds %g, want %g\n", static_cast<long long>(lo + k),
                     double(got[std::size_t(k)]), double(want));
        bad = 1;
      }
    }
    munmap(m, std::size_t(R) * sizeof(float));
  }
  A.sync();
  if (me == 1) {
    // The owner checks its own memory directly.
    const float* part = A.access();
    const float want[] = {1.f, 2.5f, 3.5f, 4.5f};
    for (int k = 0; k < 4; ++k)
      if (part[at[k]] != want[k]) {
        std::fprintf(stderr, "owner: local row %lld holds %g, want %g\n", static_cast<long long>(at[k]),
                     double(part[at[k]]), double(want[k]));
        bad = 1;
      }
    A.release();
  }
  int any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (me == 0) std::printf("tall_part_test: a part of %lld rows: %s\n", static_cast<long long>(R), any ? "FAILED" : "ok");
  return any;
}
