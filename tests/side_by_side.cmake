# Four data structures alive at once and fed from one loop
# (tests/side_by_side_test.cpp), in every layout.
accrete_add_mpi_test(side_by_side_test SOURCES side_by_side_test.cpp NP 1 2 3 4 5 NODE_SIZES 0 1 LABELS sanitize TIMEOUT 300)
accrete_add_mpi_test(side_by_side_test NP 3 4 5 NODE_SIZES 2 LABELS sanitize TIMEOUT 300)
# The same with the progress thread applying packets beside the updates,
# and in the par thread mode.
accrete_add_mpi_test(side_by_side_test NP 3 NODE_SIZES 2 ENV ACCRETE_PROGRESS_THREAD=1 SUFFIX progress LABELS tsan TIMEOUT 300)
accrete_add_mpi_test(side_by_side_test NP 3 NODE_SIZES 1 ENV ACCRETE_THREAD_MODE=par SUFFIX par TIMEOUT 300)
