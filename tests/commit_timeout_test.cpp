// A commit that one process never joins: with ACCRETE_COMMIT_TIMEOUT set,
// the others abort with a message naming the missing process (CTest checks
// the message and the failing exit status), instead of hanging silently.
// argv[1] = "barrier": the straggler waits in a barrier (making progress);
//           "compute": it computes without any MPI call, so a remote read of
//           its state cannot complete (the diagnostic must not block on it).
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "accrete/accrete.hpp"
#include "accrete/matrix/convergent_matrix.hpp"

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "barrier";
  accrete::runtime rt;
  accrete::process_grid grid(accrete::world().mpi_comm());
  accrete::convergent_matrix<double> A(8, 8, grid, 2, 2);
  A.update(1.0, 0, 0);
  if (accrete::rank_me() == accrete::rank_n() - 1) {
    if (mode == "compute")
      std::this_thread::sleep_for(std::chrono::seconds(100));
    else
      accrete::barrier();  // waits for everyone else in a barrier they never reach
  } else {
    A.commit();
  }
  std::printf("unreachable: commit returned\n");
  return 1;
}
