# Matrix layout layer: process_grid, block_cyclic, ScaLAPACK descriptors and
# MPI-IO. Needs ScaLAPACK, both to check descriptors against the real library
# and because process_grid::blacs_context() calls BLACS.
if(ACCRETE_HAVE_SCALAPACK)
  accrete_add_mpi_test(matrix_layout_test SOURCES matrix_layout_test.cpp NP 1 2 3 4 LIBS accrete_scalapack)
endif()
