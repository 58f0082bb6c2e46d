accrete_add_mpi_test(remote_completion_test SOURCES remote_completion_test.cpp NP 1 2 3 4 NODE_SIZES 0 1 TIMEOUT 300)
