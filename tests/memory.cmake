# RSS after init under a stated bound, with a 1 GiB segment, on both paths:
# node-local (every process on the real node) and every process its own
# node. Not under the sanitizers (their shadow memory is resident too).
accrete_add_mpi_test(memory_test SOURCES memory_test.cpp NP 2 3 ENV ACCRETE_SEGMENT_SIZE=1G)
if(ACCRETE_MPI_FLAVOR STREQUAL "openmpi")
  # Open MPI's osc/rdma makes an MPI_Win_allocate window resident by itself
  # (tests/memory_test.cpp); accrete's own memory is what this checks.
  accrete_add_mpi_test(memory_test NP 2 3 NODE_SIZES 1 ENV ACCRETE_SEGMENT_SIZE=1G OMPI_MCA_osc=^rdma)
else()
  accrete_add_mpi_test(memory_test NP 2 3 NODE_SIZES 1 ENV ACCRETE_SEGMENT_SIZE=1G)
endif()
# Which arrays are advised for huge pages under each ACCRETE_HUGE_PAGES
# mode (tests/huge_pages_test.cpp): the default (auto), all, targets and
# none.
accrete_add_mpi_test(huge_pages_test SOURCES huge_pages_test.cpp NP 1 2)
accrete_add_mpi_test(huge_pages_test NP 2 ENV ACCRETE_HUGE_PAGES=all SUFFIX all)
target_include_directories(huge_pages_test PRIVATE ${PROJECT_SOURCE_DIR}/src)
accrete_add_mpi_test(huge_pages_test NP 2 ENV ACCRETE_HUGE_PAGES=targets SUFFIX targets)
accrete_add_mpi_test(huge_pages_test NP 2 ENV ACCRETE_HUGE_PAGES=none SUFFIX none)
