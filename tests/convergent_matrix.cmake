accrete_add_mpi_test(convergent_matrix_test SOURCES convergent_matrix_test.cpp NP 1 2 3 4 5 NODE_SIZES 0 1 2 LABELS sanitize
  TIMEOUT 600)
target_include_directories(convergent_matrix_test PRIVATE ${PROJECT_SOURCE_DIR}/bench/common)
