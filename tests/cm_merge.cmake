# convergent_matrix merge operations (issue 13): max, min, user functions on
# both strategies; real node (direct stores) and node size 1 (all messages).
accrete_add_mpi_test(cm_merge_test SOURCES cm_merge_test.cpp NP 1 2 3 4 LABELS sanitize TIMEOUT 300)
accrete_add_mpi_test(cm_merge_test NP 3 5 NODE_SIZES 1 LABELS sanitize TIMEOUT 300)
# The production layout: nodes of 2 (node-local and remote peers at once).
accrete_add_mpi_test(cm_merge_test NP 3 5 NODE_SIZES 2 TIMEOUT 300)
