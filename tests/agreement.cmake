# Collective calls with arguments that differ between processes or are
# rejected on one of them (tests/agreement_test.cpp): every process throws.
# The agreement is one code path whatever the layout; P = 2 and 3, and the
# production layout (nodes of 2) at P = 3.
accrete_add_mpi_test(agreement_test SOURCES agreement_test.cpp NP 2 3 LABELS sanitize TIMEOUT 300)
accrete_add_mpi_test(agreement_test NP 3 NODE_SIZES 2 LABELS sanitize TIMEOUT 300)
