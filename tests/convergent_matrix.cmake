accrete_add_mpi_test(convergent_matrix_test SOURCES convergent_matrix_test.cpp NP 1 2 3 4 5 NODE_SIZES 0 1 2 LABELS sanitize
  TIMEOUT 600)
target_include_directories(convergent_matrix_test PRIVATE ${PROJECT_SOURCE_DIR}/bench/common)
# Repeated indices under Open MPI's other one-sided component (the one the
# README recommends for atomics across nodes), at the node size where the
# removed accumulate strategy lost updates.
if(ACCRETE_MPI_FLAVOR STREQUAL "openmpi")
  accrete_add_mpi_test(convergent_matrix_test NP 3 NODE_SIZES 2 ENV OMPI_MCA_osc=^rdma SUFFIX osc_no_rdma)
endif()
# Threads updating concurrently, for the ThreadSanitizer build (CI runs
# `SANITIZE=thread ./x test -L tsan`; MPI's own reports are suppressed in
# tests/tsan.supp). Cheap, so the other builds run it too.
accrete_add_mpi_test(convergent_matrix_test NP 1 ENV GTEST_FILTER=*Thread* SUFFIX threads LABELS tsan)
accrete_add_mpi_test(convergent_matrix_test NP 2 3 NODE_SIZES 0 1 ENV GTEST_FILTER=*Thread* SUFFIX threads
  LABELS tsan)
# The same 4 updating threads with the progress thread applying packets
# beside them (issue 12, part 2).
accrete_add_mpi_test(convergent_matrix_test NP 3 NODE_SIZES 1 ENV GTEST_FILTER=*Thread* ACCRETE_PROGRESS_THREAD=1
  SUFFIX threads.progress LABELS tsan)
# Tiny rings (tests/CMakeLists.txt).
accrete_add_mpi_test(convergent_matrix_test NP 3 5 NODE_SIZES 2 ENV ${ACCRETE_TINY_RINGS} SUFFIX ring256
                     LABELS sanitize TIMEOUT 600)
