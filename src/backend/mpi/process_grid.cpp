// process_grid's MPI and BLACS calls (the class is declared in the public
// interop header include/accrete/matrix/process_grid.hpp).
#include "accrete/matrix/process_grid.hpp"

#include <stdexcept>
#include <string>

namespace accrete {

int process_grid::comm_size(MPI_Comm comm) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  return size;
}

process_grid::process_grid(MPI_Comm comm, int pr, int pc, grid_order order)
    : comm_(comm), order_(order), state_(std::make_shared<blacs_state>()) {
  const int size = comm_size(comm);
  if (pr <= 0 || pc <= 0 || static_cast<long long>(pr) * pc != size) {
    throw std::invalid_argument("accrete::process_grid: pr (" + std::to_string(pr) + ") * pc (" + std::to_string(pc) +
                                ") must equal the communicator size (" + std::to_string(size) + ")");
  }
  rows_ = pr;
  cols_ = pc;
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const grid_coords me = coords_of(rank);
  my_row_ = me.row;
  my_col_ = me.col;
}

int process_grid::blacs_context() const {
#ifdef ACCRETE_NO_SCALAPACK
  // A simulation build (ACCRETE_SMPI) links no ScaLAPACK: SMPI runs only
  // programs compiled and linked by smpicxx, and Debian's ScaLAPACK is built
  // against a real MPI.
  throw std::runtime_error("accrete::process_grid::blacs_context: this build has no ScaLAPACK (ACCRETE_SMPI)");
#else
  if (!state_->created) {
    const int handle = Csys2blacs_handle(comm_);
    int ctx = handle;
    Cblacs_gridinit(&ctx, order_ == grid_order::row_major ? "Row" : "Col", rows_, cols_);
    // BLACS has built its own communicators from the handle by now, and
    // Csys2blacs_handle returns the same handle for every grid on this
    // comm, so keeping it until destruction would free it twice.
    Cfree_blacs_system_handle(handle);
    int nprow = -1, npcol = -1, myrow = -1, mycol = -1;
    Cblacs_gridinfo(ctx, &nprow, &npcol, &myrow, &mycol);
    if (nprow != rows_ || npcol != cols_ || myrow != my_row_ || mycol != my_col_) {
      Cblacs_gridexit(ctx);
      throw std::runtime_error("accrete::process_grid: BLACS placed this process at (" + std::to_string(myrow) + "," +
                               std::to_string(mycol) + ") of a " + std::to_string(nprow) + "x" +
                               std::to_string(npcol) + " grid, expected (" + std::to_string(my_row_) + "," +
                               std::to_string(my_col_) + ")");
    }
    state_->context = ctx;
    // A grid may outlive MPI (an object freed after finalize, a Python
    // object collected at exit): BLACS' communicators are gone with MPI then,
    // and freeing them would be an MPI error.
    state_->release = [](int c) {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized) Cblacs_gridexit(c);
    };
    state_->created = true;
  }
  return state_->context;
#endif
}

}  // namespace accrete
