# Puts, gets, copies, RPC writes and atomics of every shape and completion
# in flight together (tests/rma_mix_test.cpp), in every layout.
accrete_add_mpi_test(rma_mix_test SOURCES rma_mix_test.cpp NP 1 2 3 4 5 NODE_SIZES 0 1 LABELS sanitize TIMEOUT 300)
accrete_add_mpi_test(rma_mix_test NP 3 4 5 NODE_SIZES 2 LABELS sanitize TIMEOUT 300)
# The same with the progress thread beside the issuing thread, and in the
# par thread mode.
accrete_add_mpi_test(rma_mix_test NP 3 NODE_SIZES 2 ENV ACCRETE_PROGRESS_THREAD=1 SUFFIX progress LABELS tsan TIMEOUT 300)
accrete_add_mpi_test(rma_mix_test NP 3 NODE_SIZES 1 ENV ACCRETE_THREAD_MODE=par SUFFIX par TIMEOUT 300)
