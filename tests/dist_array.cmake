# Every distribution and element type, at odd and even P, real node and
# every process its own node (the MPI RMA path), both MPIs.
accrete_add_mpi_test(dist_array_test SOURCES dist_array_test.cpp NP 1 2 3 4 5 NODE_SIZES 0 1 LABELS sanitize
  TIMEOUT 600)
