accrete_add_mpi_test(dist_object_test SOURCES dist_object_test.cpp NP 1 2 3 4 NODE_SIZES 0 1)
# Several processes on each of several nodes (nodes of 2: 2 + 1, 2 + 2 + 1),
# where node-local and MPI paths meet in one run.
accrete_add_mpi_test(dist_object_test NP 3 5 NODE_SIZES 2)
