// A collective that only some processes call: with ACCRETE_COLLECTIVE_TIMEOUT
// set, the process waiting in it ends the job with a message naming the call
// and the processes that never entered it (CTest checks the message and the
// failing exit status), instead of hanging silently. Rank 0 calls the
// collective with a 3 s timeout; the others, with 120 s, do something else:
//   argv[1] = "norm":      rank 0 calls dist_array::norm; the others wait in
//                          a plain MPI_Barrier (no accrete collective);
//             "construct": rank 0 constructs a dist_array, the others the same;
//             "other":     rank 0 calls norm, the others accrete::barrier (so
//                          rank 0 names the collective they are in);
//             "split":     rank 0 splits the world team, the others not.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <mpi.h>

#include "accrete/accrete.hpp"
#include "accrete/array/dist_array.hpp"

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "norm";
  MPI_Init(&argc, &argv);
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  setenv("ACCRETE_COLLECTIVE_TIMEOUT", me == 0 ? "3" : "120", 1);
  accrete::init();
  {
    accrete::dist_array<double> A(4, 4 * accrete::rank_n());
    if (me == 0) {
      if (mode == "construct") {
        accrete::dist_array<double> B(4, 4);
      } else if (mode == "split") {
        (void)accrete::world().split(0, 0);
      } else {
        (void)A.norm();
      }
    } else if (mode == "other") {
      accrete::barrier();
    } else {
      MPI_Barrier(MPI_COMM_WORLD);  // never completes: rank 0 is not in it
    }
  }
  std::printf("unreachable: the collective returned on rank %d\n", me);
  accrete::finalize();
  MPI_Finalize();
  return 1;
}
