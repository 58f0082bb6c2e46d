accrete_add_mpi_test(atomic_test SOURCES atomic_test.cpp NP 1 2 3 4 NODE_SIZES 0 1)

# Open MPI 4.1's osc/rdma segfaults on a 64-bit MPI_Compare_and_swap over
# btl/vader (reproducible with plain MPI_Win_allocate + MPI_Compare_and_swap
# on MPI_INT64_T at P = 2). Until the backend chooses a working one-sided
# component itself, the atomic tests exclude osc/rdma.
if(ACCRETE_MPI_FLAVOR STREQUAL "openmpi")
  foreach(np 1 2 3 4)
    foreach(t atomic_test.np${np} atomic_test.np${np}.node1)
      set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT "OMPI_MCA_osc=^rdma")
    endforeach()
  endforeach()
endif()
