accrete_add_mpi_test(runtime_test SOURCES runtime_test.cpp NP 1 2 3 4 NODE_SIZES 0 1 2 LABELS sanitize)
