# Features where they combine (tests/combinations_test.cpp): random
# configurations of convergent_matrix, dist_array and sparse_matrix against a serial
# reference. Every P from 1 to 5 on one node; every process its own node
# (the MPI paths); and the production layout of several processes on each
# of several nodes (2 + 1, 2 + 2, 2 + 2 + 1, 3 + 2), where node-local
# stores and remote packets reach one part in one round. Oversubscribed
# MPICH spins (.ci/run): a P = 3 registration took 35-80 s there against
# 1-2 s under Open MPI, and P = 5 140 s, so MPICH runs P = 2 and the
# production layout at P = 3, and Open MPI the rest. The sanitizer build
# runs P = 2 and 3.
accrete_add_mpi_test(combinations_test SOURCES combinations_test.cpp NP 2 LABELS sanitize TIMEOUT 600)
accrete_add_mpi_test(combinations_test NP 3 NODE_SIZES 2 LABELS sanitize TIMEOUT 600)
if(ACCRETE_MPI_FLAVOR STREQUAL "openmpi")
  accrete_add_mpi_test(combinations_test NP 1 3 4 5 TIMEOUT 600)
  accrete_add_mpi_test(combinations_test NP 2 3 5 NODE_SIZES 1 TIMEOUT 600)
  accrete_add_mpi_test(combinations_test NP 4 5 NODE_SIZES 2 TIMEOUT 600)
  accrete_add_mpi_test(combinations_test NP 5 NODE_SIZES 3 TIMEOUT 600)
  # The same with the progress thread applying packets beside the updates.
  accrete_add_mpi_test(combinations_test NP 3 NODE_SIZES 2 ENV ACCRETE_PROGRESS_THREAD=1 SUFFIX progress TIMEOUT 600)
  # Tiny rings (tests/CMakeLists.txt), with and without the progress thread.
  accrete_add_mpi_test(combinations_test NP 5 NODE_SIZES 2 ENV ${ACCRETE_TINY_RINGS} SUFFIX ring256 TIMEOUT 600)
  accrete_add_mpi_test(combinations_test NP 3 NODE_SIZES 2 ENV ACCRETE_PROGRESS_THREAD=1 ${ACCRETE_TINY_RINGS}
                       SUFFIX ring256.progress TIMEOUT 600)
endif()
