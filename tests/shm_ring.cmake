accrete_add_mpi_test(shm_ring_test SOURCES shm_ring_test.cpp NP 1 LABELS sanitize)
target_include_directories(shm_ring_test PRIVATE ${PROJECT_SOURCE_DIR}/src)
