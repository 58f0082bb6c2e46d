accrete_add_mpi_test(strided_test SOURCES strided_test.cpp NP 1 2 3 4 NODE_SIZES 0 1 2 LABELS sanitize)
