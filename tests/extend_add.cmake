# Motif 2 of issue 3: multifrontal extend-add, three implementations against
# a serial reference (the motif code lives in bench/extend_add/).
accrete_add_mpi_test(extend_add_test SOURCES extend_add_test.cpp NP 1 2 3 4 NODE_SIZES 0 1)
target_include_directories(extend_add_test PRIVATE ${PROJECT_SOURCE_DIR}/bench/extend_add)
# Several processes on each of several nodes (nodes of 2: 2 + 1, 2 + 2 + 1),
# where node-local and MPI paths meet in one run.
accrete_add_mpi_test(extend_add_test NP 3 5 NODE_SIZES 2)
# Tiny rings (tests/CMakeLists.txt).
accrete_add_mpi_test(extend_add_test NP 3 5 NODE_SIZES 2 ENV ${ACCRETE_TINY_RINGS} SUFFIX ring256)
