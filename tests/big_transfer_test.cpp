// One transfer larger than 2^31 bytes each way (MPI counts are int; the
// backend must split), and RPCs whose argument or result is that large. Only rank 0 transfers, to the last rank, so the
// memory needed stays near 3 x 2.1 GB whatever the process count.
#include <cstdint>
#include <cstdio>
#include <utility>
#include <vector>

#include <mpi.h>

#include "accrete/accrete.hpp"

int main() {
  constexpr std::size_t bytes = (std::size_t{1} << 31) + 4096 + 8;
  accrete::init_options o;
  o.segment_size = bytes + (std::size_t{1} << 20);
  accrete::runtime rt(o);
  const int me = accrete::rank_me(), last = accrete::rank_n() - 1;
  accrete::global_ptr<std::uint64_t> dst;
  if (me == last) dst = accrete::new_array<std::uint64_t>(bytes / 8);
  MPI_Bcast(&dst, sizeof dst, MPI_BYTE, last, accrete::world().mpi_comm());
  int bad = 0;
  if (me == 0) {
    std::vector<std::uint64_t> src(bytes / 8);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = i * 0x9e3779b97f4a7c15ULL;
    accrete::rput(src.data(), dst, src.size()).wait();
    std::vector<std::uint64_t> back(src.size(), 0);
    accrete::rget(dst, back.data(), back.size()).wait();
    for (std::size_t i = 0; i < src.size(); ++i)
      if (back[i] != src[i]) {
        std::fprintf(stderr, "mismatch at element %zu\n", i);
        bad = 1;
        break;
      }
    std::printf("big transfer of %zu bytes via %s: %s\n", bytes, dst.is_local() ? "shared memory" : "MPI RMA",
                bad ? "FAILED" : "ok");
  }
  accrete::barrier();
  if (me == last) {
    // The target checks what landed in its own memory.
    const std::uint64_t* p = dst.local();
    for (std::size_t i = 0; i < bytes / 8; i += 4099)
      if (p[i] != i * 0x9e3779b97f4a7c15ULL) bad = 1;
    accrete::delete_array(dst);
  }
  accrete::barrier();
  // An RPC whose argument, and then one whose result, is larger than 2^31
  // bytes: each is one active message beyond MPI's int count. The argument
  // arrives as a view (read in place: no second copy at the target); the
  // result is a vector. Each side checks every 4099th byte and the last.
  if (me == 0) {
    auto byte_at = [](std::size_t i) { return std::uint8_t((i * 0x9e3779b97f4a7c15ULL) >> 56); };
    std::uint64_t want = 0;
    for (std::size_t i = 0; i < bytes; i += 4099) want += byte_at(i);
    want += byte_at(bytes - 1);
    {
      std::vector<std::uint8_t> arg(bytes);
      for (std::size_t i = 0; i < bytes; ++i) arg[i] = byte_at(i);
      auto [n, sum] = accrete::rpc(
                          last,
                          [](accrete::view<std::uint8_t> v) {
                            std::uint64_t s = 0;
                            const std::uint8_t* p = v.begin();
                            for (std::size_t i = 0; i < v.size(); i += 4099) s += p[i];
                            return std::pair<std::size_t, std::uint64_t>(v.size(), s + p[v.size() - 1]);
                          },
                          accrete::make_view(arg))
                          .wait();
      const bool ok = n == bytes && sum == want;
      std::printf("RPC with a %zu-byte argument: %s\n", bytes, ok ? "ok" : "FAILED");
      bad |= !ok;
    }
    std::vector<std::uint8_t> back = accrete::rpc(
                                         last,
                                         [byte_at](std::size_t n) {
                                           std::vector<std::uint8_t> r(n);
                                           for (std::size_t i = 0; i < n; ++i) r[i] = byte_at(i);
                                           return r;
                                         },
                                         bytes)
                                         .wait();
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < back.size(); i += 4099) sum += back[i];
    const bool ok = back.size() == bytes && sum + back.back() == want;
    std::printf("RPC with a %zu-byte result: %s\n", bytes, ok ? "ok" : "FAILED");
    bad |= !ok;
  }
  accrete::barrier();
  int any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, accrete::world().mpi_comm());
  return any;
}
