# sparse_matrix<T> (issue 40): uneven row ranges with an empty process,
# rectangular column split, frozen and growing patterns, rounds, threads,
# complex, reproducible sums, bad input. Every P from 1 to 5, node layout
# real, 1 (every piece through MPI) and 2 (node-local and remote owners at
# once, as on a cluster).
accrete_add_mpi_test(sparse_matrix_test SOURCES sparse_matrix_test.cpp NP 1 2 3 4 5 NODE_SIZES 0 1 2 LABELS sanitize
  TIMEOUT 300)
target_include_directories(sparse_matrix_test PRIVATE ${PROJECT_SOURCE_DIR}/src)
# Its threaded configuration (3 updating threads) in CI's ThreadSanitizer pass.
accrete_add_mpi_test(sparse_matrix_test NP 2 NODE_SIZES 1 ENV GTEST_FILTER=SparseMatrix.SmallBuffersAndThreads
                     SUFFIX threads LABELS tsan TIMEOUT 300)
# Tiny rings (tests/CMakeLists.txt).
accrete_add_mpi_test(sparse_matrix_test NP 3 5 NODE_SIZES 2 ENV ${ACCRETE_TINY_RINGS} SUFFIX ring256
                     LABELS sanitize TIMEOUT 300)
