// A first accrete program: every process allocates an array in its shared
// segment, publishes a global pointer to it, and writes its rank into its
// right neighbour's array with rput; then each reads its left neighbour's
// array back with rget.
#include <cstdio>
#include <vector>

#include <accrete/accrete.hpp>

int main() {
  accrete::runtime rt;  // MPI_Init (if needed) + segments + windows
  const int me = accrete::rank_me(), n = accrete::rank_n();
  constexpr std::size_t len = 1024;

  auto mine = accrete::new_array<int>(len);
  // Exchange global pointers with plain MPI on the world team's communicator.
  std::vector<accrete::global_ptr<int>> all(n);
  MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, accrete::world().mpi_comm());

  std::vector<int> buf(len, me);
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  accrete::rput(buf.data(), all[right], len).wait();
  accrete::barrier();

  std::vector<int> got(len);
  accrete::rget(all[right], got.data(), len).wait();
  const bool ok = got.front() == me && got.back() == me && mine.local()[0] == left;
  std::printf("rank %d of %d: neighbour %d holds my rank: %s (%s path)\n", me, n, right, ok ? "yes" : "NO",
              all[right].is_local() ? "shared-memory" : "MPI RMA");
  accrete::barrier();
  accrete::delete_array(mine);
  return ok ? 0 : 1;
}
