// Sizes beyond 32 bits (issue 9, item 3). Own main: needs ~7-9 GB, so CTest
// runs it alone.
//   part:  P = 2, grid 1 x 2, float. One update whose part for rank 1 is
//          2.16e9 bytes (> 2^31): split into packets on the message path,
//          applied directly on the node-local path. Every element checked.
//   local: P = 1, float, 46341 x 46341 = 2,147,488,281 local elements
//          (> 2^31). Updates at the far corners, checked exactly.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <mpi.h>

#include "accrete/accrete.hpp"
#include "accrete/matrix/convergent_matrix.hpp"

using namespace accrete;

namespace {

int part_case() {
  const std::int64_t m = 32768, nb = 64, n = 2 * 16448;  // rank 1 owns 32768 x 16448 floats
  process_grid grid(world().mpi_comm(), 1, 2);
  convergent_matrix<float> A(m, n, grid, 64, nb);
  std::vector<std::int64_t> rows(m), cols;
  for (std::int64_t i = 0; i < m; ++i) rows[std::size_t(i)] = i;
  for (std::int64_t j = 0; j < n; ++j)
    if (A.layout().owner_col(j) == 1) cols.push_back(j);
  if (rank_me() == 0) {
    const std::size_t bytes = std::size_t(m) * cols.size() * sizeof(float);
    std::printf("update part for rank 1: %zu bytes (2^31 = %zu)\n", bytes, std::size_t{1} << 31);
    std::vector<float> block(std::size_t(m) * cols.size());
    for (std::size_t c = 0; c < cols.size(); ++c)
      for (std::int64_t i = 0; i < m; ++i) block[c * std::size_t(m) + std::size_t(i)] = float((i + 3 * std::int64_t(c)) % 7);
    A.update(block.data(), m, rows, cols);
  }
  A.commit();
  std::int64_t bad = 0;
  if (rank_me() == 1) {
    for (std::size_t c = 0; c < cols.size(); ++c) {
      const std::int64_t lj = A.layout().local_col(cols[c]);
      const float* col = A.local() + lj * A.lld();
      for (std::int64_t i = 0; i < m; ++i) bad += col[i] != float((i + 3 * std::int64_t(c)) % 7);
    }
  } else {
    for (std::int64_t e = 0; e < A.local_cols() * A.lld(); ++e) bad += A.local()[e] != 0.0f;
  }
  std::int64_t all = 0;
  MPI_Allreduce(&bad, &all, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (rank_me() == 0) std::printf("part case: %lld wrong elements, %llu messages\n", (long long)all,
                                  (unsigned long long)A.stats().messages_sent);
  return all == 0 ? 0 : 1;
}

int local_case() {
  const std::int64_t n = 46341;
  process_grid grid(world().mpi_comm(), 1, 1);
  convergent_matrix<float> A(n, n, grid, 64, 64);
  const std::size_t elems = std::size_t(A.lld()) * std::size_t(A.local_cols());
  std::printf("local elements: %zu (2^31 = %zu)\n", elems, std::size_t{1} << 31);
  const std::int64_t ix[3] = {0, n / 2, n - 1};
  const float v[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  A.update(v, 3, ix, ix);
  A.update(v, 3, ix, ix);
  A.commit();
  int bad = 0;
  for (int j = 0; j < 3; ++j)
    for (int i = 0; i < 3; ++i) bad += A.local()[ix[i] + ix[j] * A.lld()] != 2 * v[i + 3 * j];
  bad += A.get(n - 1, n - 1) != 18.0f;
  double s = 0;
  for (std::size_t e = 0; e < elems; ++e) s += A.local()[e];
  bad += s != 90.0;
  std::printf("local case: %d wrong, sum %.1f\n", bad, s);
  return bad == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 2;
  {
    runtime rt;
    const std::string which = argc > 1 ? argv[1] : "";
    if (which == "part" && rank_n() == 2) rc = part_case();
    if (which == "local" && rank_n() == 1) rc = local_case();
  }
  MPI_Finalize();
  return rc;
}
