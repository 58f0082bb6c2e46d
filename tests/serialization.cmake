accrete_add_mpi_test(serialization_test SOURCES serialization_test.cpp NP 1 LABELS sanitize)
