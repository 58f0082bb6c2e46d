# The single-threaded cases. The threaded stress case (most of this test's
# time: 25-100 s) runs once, in the registration below, also under ASan.
accrete_add_mpi_test(shm_ring_test SOURCES shm_ring_test.cpp NP 1 LABELS sanitize ENV GTEST_FILTER=-ring_threads.*)
target_include_directories(shm_ring_test PRIVATE ${PROJECT_SOURCE_DIR}/src)
# The multi-producer protocol, also under ThreadSanitizer and ASan (threads
# stand in for the node's processes; CI's TSan pass builds this test).
accrete_add_mpi_test(shm_ring_test NP 1 ENV GTEST_FILTER=ring_threads.* SUFFIX threads LABELS tsan sanitize)
