// Data paths at their edges: leading dimensions beyond 32 bits, complex
// accumulates in every layout, sizes near 2^63, empty parts of huge arrays.
// Each case once gave silent wrong data, wrote outside the caller's buffer,
// or never returned (docs/semantics.md, "Limits").
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <vector>

#include <sys/mman.h>

#include <gtest/gtest.h>

#include "accrete/accrete.hpp"
#include "accrete/array/dist_array.hpp"
#include "accrete/matrix/convergent_matrix.hpp"

using namespace accrete;

namespace {

// `bytes` of address space the kernel backs only where it is touched (the
// tests use a few pages of a mapping of tens of GiB).
struct sparse_buffer {
  std::byte* base = nullptr;
  std::size_t bytes = 0;
  explicit sparse_buffer(std::size_t n) : bytes(n) {
    void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    base = p == MAP_FAILED ? nullptr : static_cast<std::byte*>(p);
  }
  ~sparse_buffer() {
    if (base) munmap(base, bytes);
  }
};

// A 1 x 2 patch whose buffer has leading dimension ld: its two elements are
// buf[0] and buf[ld], ld elements apart. Each process puts to, gets from and
// accumulates into the part of the next process (remote under
// ACCRETE_NODE_SIZE=1: the MPI path), then checks every element and that
// nothing was written where a cut stride would have put it.
template <class T>
void patch_with_ld(std::int64_t ld) {
  const int p = rank_n(), me = rank_me();
  dist_array<T> A(distribution::block(1, 2 * std::int64_t(p), 1, p));
  // The buffer sits in the middle of a mapping twice its size, so that a
  // stride cut to 32 bits (negative for 2^31 + 1) lands inside the mapping
  // and is seen instead of crashing.
  const std::size_t span = std::size_t(ld + 1) * sizeof(T);
  sparse_buffer m(2 * span + 4096);
  ASSERT_NE(m.base, nullptr) << "mmap of " << 2 * span << " bytes failed";
  T* buf = reinterpret_cast<T*>(m.base + span);
  const std::int64_t cut = std::int64_t(std::int32_t(std::uint32_t(std::uint64_t(ld))));  // ld as an int
  const int t = (me + 1) % p;
  const patch pt{0, 1, 2 * t, 2 * t + 2};

  buf[0] = T(1 + me);
  buf[ld] = T(2 + me);
  A.put_blocking(pt, buf, ld);
  A.sync();
  T out[2] = {T(-1), T(-1)};
  A.get_blocking(pt, out, 1);
  EXPECT_EQ(out[0], T(1 + me));
  EXPECT_EQ(out[1], T(2 + me)) << "put with ld = " << ld << " stored the wrong element";

  buf[0] = buf[ld] = T(0);
  A.get_blocking(pt, buf, ld);
  EXPECT_EQ(buf[0], T(1 + me));
  EXPECT_EQ(buf[ld], T(2 + me)) << "get with ld = " << ld << " did not write buf[ld]";
  EXPECT_EQ(buf[cut], T(0)) << "get with ld = " << ld << " wrote buf[" << cut << "]";

  A.sync();
  buf[0] = T(10);
  buf[ld] = T(20);
  if (cut != ld) buf[cut] = T(1000);  // what a cut stride would add instead
  A.acc_blocking(pt, buf, ld);
  A.sync();
  A.get_blocking(pt, out, 1);
  EXPECT_EQ(out[0], T(11 + me));
  EXPECT_EQ(out[1], T(22 + me)) << "acc with ld = " << ld << " added the wrong element";
  A.sync();
}

}  // namespace

TEST(Edges, LeadingDimensionAbove32Bits) {
  patch_with_ld<float>((std::int64_t{1} << 32) + 1);
  patch_with_ld<std::complex<float>>((std::int64_t{1} << 32) + 1);
}

TEST(Edges, LeadingDimensionAboveIntMax) {
  // An int stride of 2^31 + 1 is negative: the get wrote before the buffer.
  patch_with_ld<float>((std::int64_t{1} << 31) + 1);
  patch_with_ld<double>((std::int64_t{1} << 31) + 1);
}

// Every process adds (3, 6) into every element of one array, the whole
// array at once, so that every part takes accumulates from every process:
// node-local, over MPI, on every window layout of the run.
template <class T>
void acc_everywhere() {
  const int p = rank_n();
  const std::int64_t m = 7, n = 3 * std::int64_t(p) + 1;
  dist_array<T> A(distribution::block(m, n, 1, p));
  std::vector<T> ones(std::size_t(m * n), T(3, 6));
  A.acc_blocking({0, m, 0, n}, ones.data(), m);
  A.scatter_acc(std::vector<std::int64_t>{0, m - 1}, std::vector<std::int64_t>{0, n - 1},
                std::vector<T>{T(1, 1), T(1, 1)}.data());
  A.sync();
  std::vector<T> all(std::size_t(m * n));
  A.get_blocking({0, m, 0, n}, all.data(), m);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) {
      const bool corner = (i == 0 && j == 0) || (i == m - 1 && j == n - 1);
      const T want = T(3 * p, 6 * p) + (corner ? T(p, p) : T(0));
      ASSERT_EQ(all[std::size_t(i + j * m)], want) << "element (" << i << ", " << j << ")";
    }
  A.sync();
}

TEST(Edges, ComplexAccumulatesInEveryLayout) {
  acc_everywhere<std::complex<float>>();
  acc_everywhere<std::complex<double>>();
}

TEST(Edges, BlockBoundsNear2To63) {
  // k * n / p computed without overflow: part k starts at floor(k n / p).
  const std::int64_t n = std::int64_t{1} << 62;
  for (int parts : {3, 7, 1000}) {
    const axis a = axis::block(n, parts);
    for (int k = 0; k <= parts; ++k) {
      const auto want = std::int64_t((__int128(k) * n) / parts);
      ASSERT_EQ(a.bounds()[std::size_t(k)], want) << "bound " << k << " of " << parts;
    }
  }
  const distribution d = distribution::block(std::int64_t{1} << 62, 2, 3, 1);
  EXPECT_EQ(d.local_rows(0) + d.local_rows(1) + d.local_rows(2), std::int64_t{1} << 62);
}

TEST(Edges, EmptyPartsOfAHugeArrayStoreNothing) {
  // 0 x 2^40: every part has no rows; an lld of max(1, 0) times 2^40 / P
  // columns once asked for terabytes of shared memory.
  const int p = rank_n();
  const std::int64_t n = std::int64_t{1} << 40;
  dist_array<double> A(distribution::block(0, n, 1, p));
  EXPECT_EQ(A.local_rows(), 0);
  const __int128 me = rank_me();
  EXPECT_EQ(A.local_cols(), std::int64_t((me + 1) * n / p - me * n / p));
  EXPECT_EQ(A.norm(), 0.0);
  A.fill(2.0);
  EXPECT_EQ(A.norm(), 0.0);
  // And a matrix whose grid row holds no rows of it.
  process_grid grid(world().mpi_comm(), p, 1);
  convergent_matrix<double> M(1, 5, grid, 1, 5);
  EXPECT_EQ(M.local_rows(), rank_me() == 0 ? 1 : 0);
  M.update(1.5, 0, 4);
  M.commit();
  EXPECT_EQ(M.get(0, 4), 1.5 * p);
  std::vector<double> snap(std::size_t(M.lld() * M.local_cols()), -1.0);
  M.snapshot_local(snap);
  if (rank_me() == 0) {
    EXPECT_EQ(snap[4], 1.5 * p);
  }
}
