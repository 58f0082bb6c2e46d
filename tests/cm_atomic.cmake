# Whole-update atomicity (issue 13, item 3): the deterministic observable
# difference needs node peers (direct stores); the contention test runs on
# both paths (node size 1: every piece is a message).
accrete_add_mpi_test(cm_atomic_test SOURCES cm_atomic_test.cpp NP 1 2 3 4 LABELS sanitize TIMEOUT 300)
accrete_add_mpi_test(cm_atomic_test NP 3 5 NODE_SIZES 1 LABELS sanitize TIMEOUT 300)
