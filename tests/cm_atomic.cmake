# Whole-update atomicity (issue 13, item 3): the deterministic observable
# difference needs node peers (direct stores); the contention test runs on
# both paths (node size 1: every piece is a message).
accrete_add_mpi_test(cm_atomic_test SOURCES cm_atomic_test.cpp NP 1 2 3 4 LABELS sanitize TIMEOUT 300)
accrete_add_mpi_test(cm_atomic_test NP 3 5 NODE_SIZES 1 LABELS sanitize TIMEOUT 300)
# The production layout: nodes of 2 (node-local and remote peers at once).
accrete_add_mpi_test(cm_atomic_test NP 3 5 NODE_SIZES 2 TIMEOUT 300)
# Atomic pieces from 3 threads at once, for the ThreadSanitizer build (CI:
# `-L tsan`); cheap, so the other builds run it too.
accrete_add_mpi_test(cm_atomic_test NP 1 2 ENV GTEST_FILTER=*Contention* SUFFIX threads LABELS tsan)
