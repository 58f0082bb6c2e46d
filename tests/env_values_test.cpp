// Run with one malformed ACCRETE_* variable set; argv[1] names it. Passes
// (exit 0) only if accrete throws accrete::error naming that variable,
// either at init or, for the commit timeout, at the first commit. With
// argv[1] = "accept", passes only if init and two commits succeed (for
// values that must be taken, such as empty ones, which mean unset).
#include <cstdio>
#include <string>

#include <mpi.h>

#include "accrete/accrete.hpp"
#include "accrete/matrix/convergent_matrix.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const std::string var = argc > 1 ? argv[1] : "?";
  int rc = 1;
  if (var == "after_finalize") {
    // Members of a matrix that outlived the runtime throw, not crash.
    accrete::convergent_matrix<double>* A = nullptr;
    {
      accrete::runtime rt;
      accrete::process_grid grid(accrete::world().mpi_comm());
      A = new accrete::convergent_matrix<double>(4, 4, grid, 2, 2);  // leaked on purpose
    }
    int thrown = 0;
    try { (void)A->local(); } catch (const accrete::not_initialized&) { ++thrown; }
    try { (void)A->get(0, 0); } catch (const accrete::not_initialized&) { ++thrown; }
    try { A->reset(); } catch (const accrete::not_initialized&) { ++thrown; }
    try { A->update(1.0, 0, 0); } catch (const accrete::not_initialized&) { ++thrown; }
    std::printf("after finalize: %d of 4 members threw not_initialized\n", thrown);
    MPI_Finalize();
    return thrown == 4 ? 0 : 1;
  }
  // "accept": the variables set (empty ones among them) must be taken.
  const bool accept = var == "accept";
  try {
    accrete::runtime rt;
    accrete::process_grid grid(accrete::world().mpi_comm());
    accrete::convergent_matrix<double> A(4, 4, grid, 2, 2);
    A.update(1.0, 0, 0);
    A.commit();
    A.commit();
    std::printf("accepted: no error for %s\n", var.c_str());
    if (accept) rc = A.get(0, 0) == double(accrete::rank_n()) ? 0 : 1;
  } catch (const accrete::error& e) {
    std::printf("error: %s\n", e.what());
    rc = !accept && std::string(e.what()).find(var) != std::string::npos ? 0 : 1;
  }
  MPI_Finalize();
  return rc;
}
