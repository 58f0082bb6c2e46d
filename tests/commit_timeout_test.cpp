// A commit that one process never joins: with ACCRETE_COMMIT_TIMEOUT set,
// the others abort with a message naming the missing process (CTest checks
// the message), instead of hanging silently.
#include <cstdio>

#include "accrete/accrete.hpp"
#include "accrete/matrix/convergent_matrix.hpp"

int main() {
  accrete::runtime rt;
  accrete::process_grid grid(accrete::world().mpi_comm());
  accrete::convergent_matrix<double> A(8, 8, grid, 2, 2);
  A.update(1.0, 0, 0);
  if (accrete::rank_me() == accrete::rank_n() - 1) {
    // The straggler waits for everyone else in a barrier they never reach.
    accrete::barrier();
  } else {
    A.commit();
  }
  std::printf("unreachable: commit returned\n");
  return 1;
}
