# The PETSc and hypre handoffs of sparse_matrix (accrete/sparse/petsc.hpp,
# hypre.hpp), when the build found them for accrete's MPI
# (cmake/sparse_interop.cmake): the handed-over matrix is the library's own
# assembly of the same elements and solves to the same answer. P = 1..5
# (rank 1 owns no rows), node sizes real, 1 and 2.
if(TARGET accrete::petsc)
  accrete_add_mpi_test(sparse_petsc_test SOURCES sparse_petsc_test.cpp LIBS accrete::petsc NP 1 2 3 4 5 NODE_SIZES 0 1 2
    TIMEOUT 300)
endif()
if(TARGET accrete::hypre)
  accrete_add_mpi_test(sparse_hypre_test SOURCES sparse_hypre_test.cpp LIBS accrete::hypre NP 1 2 3 4 5 NODE_SIZES 0 1 2
    TIMEOUT 300)
endif()
