accrete_add_mpi_test(dist_object_test SOURCES dist_object_test.cpp NP 1 2 3 4 NODE_SIZES 0 1)
