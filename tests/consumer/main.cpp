// Built against the installed accrete: one put and one get around a ring.
#include <cstdio>
#include <vector>

#include <accrete/accrete.hpp>

int main() {
  accrete::runtime rt;
  auto cell = accrete::new_<long>(0);
  std::vector<accrete::global_ptr<long>> all(accrete::rank_n());
  MPI_Allgather(&cell, sizeof cell, MPI_BYTE, all.data(), sizeof cell, MPI_BYTE, accrete::world().mpi_comm());
  accrete::rput(long(100 + accrete::rank_me()), all[(accrete::rank_me() + 1) % accrete::rank_n()]).wait();
  accrete::barrier();
  long want = 100 + (accrete::rank_me() + accrete::rank_n() - 1) % accrete::rank_n();
  bool ok = *cell.local() == want;
  std::printf("consumer rank %d: %s\n", accrete::rank_me(), ok ? "ok" : "WRONG");
  accrete::barrier();
  accrete::delete_(cell);
  return ok ? 0 : 1;
}
