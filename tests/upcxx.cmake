accrete_add_mpi_test(upcxx_test SOURCES upcxx_test.cpp NP 1 2 3 4 5 NODE_SIZES 0 1)
# The atomic_domain test makes 64-bit compare-and-swaps: under Open MPI the
# same exclusion of osc/rdma as tests/atomic.cmake (and for the same reason).
if(ACCRETE_MPI_FLAVOR STREQUAL "openmpi")
  foreach(np 1 2 3 4 5)
    foreach(t upcxx_test.np${np} upcxx_test.np${np}.node1)
      set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT "OMPI_MCA_osc=^rdma")
    endforeach()
  endforeach()
endif()
