# Features where they combine (tests/combinations_test.cpp): random
# configurations of convergent_matrix and dist_array against a serial
# reference. Every P from 1 to 5 on one node; every process its own node
# (the MPI paths); and the production layout of several processes on each
# of several nodes (2 + 1, 2 + 2, 2 + 2 + 1, 3 + 2), where node-local
# stores and remote packets reach one part in one round. Oversubscribed
# MPICH spins (.ci/run): there its P = 5 layouts took 140 s against 14 s
# under Open MPI, so they run under Open MPI only.
accrete_add_mpi_test(combinations_test SOURCES combinations_test.cpp NP 1 2 3 4 5 LABELS sanitize TIMEOUT 600)
accrete_add_mpi_test(combinations_test NP 2 3 NODE_SIZES 1 TIMEOUT 600)
accrete_add_mpi_test(combinations_test NP 3 4 NODE_SIZES 2 TIMEOUT 600)
if(ACCRETE_MPI_FLAVOR STREQUAL "openmpi")
  accrete_add_mpi_test(combinations_test NP 5 NODE_SIZES 1 2 3 TIMEOUT 600)
  # The same with the progress thread applying packets beside the updates.
  accrete_add_mpi_test(combinations_test NP 3 NODE_SIZES 2 ENV ACCRETE_PROGRESS_THREAD=1 SUFFIX progress TIMEOUT 600)
endif()
