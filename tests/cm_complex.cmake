# convergent_matrix over std::complex<float> and <double> (issue 13, item 4):
# assembly, Hermitian fill_lower / symmetrize, save/load and the p?posv path;
# real node (direct stores) and node size 1 (all messages).
if(ACCRETE_HAVE_SCALAPACK)
  accrete_add_mpi_test(cm_complex_test SOURCES cm_complex_test.cpp NP 1 2 3 4 LIBS accrete_scalapack LABELS sanitize
    TIMEOUT 300)
  accrete_add_mpi_test(cm_complex_test NP 3 5 NODE_SIZES 1 LABELS sanitize TIMEOUT 300)
  # The production layout: nodes of 2 (node-local and remote peers at once).
  accrete_add_mpi_test(cm_complex_test NP 3 5 NODE_SIZES 2 TIMEOUT 300)
endif()
