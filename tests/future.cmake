accrete_add_mpi_test(future_test SOURCES future_test.cpp NP 1 LABELS sanitize)
