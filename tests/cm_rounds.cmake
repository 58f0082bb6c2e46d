# convergent_matrix rounds, re-entrant commit, argument agreement, packet
# splitting (issue 9). Node sizes: real (direct stores), 1 (all messages)
# and 2 (mixed).
# (One process is on one node whatever the node size: P = 1 runs once.)
accrete_add_mpi_test(cm_rounds_test SOURCES cm_rounds_test.cpp NP 1 LABELS sanitize TIMEOUT 300)
accrete_add_mpi_test(cm_rounds_test NP 2 3 4 5 NODE_SIZES 0 1 LABELS sanitize TIMEOUT 300)
accrete_add_mpi_test(cm_rounds_test NP 3 5 NODE_SIZES 2 LABELS sanitize TIMEOUT 300)
