accrete_add_mpi_test(atomic_test SOURCES atomic_test.cpp NP 1 2 3 4 NODE_SIZES 0 1)
# Several processes on each of several nodes: the world window is then
# MPI_Win_create'd (osc/ucx under Open MPI where UCX is present), where
# floating-point atomics once came out wrong.
accrete_add_mpi_test(atomic_test NP 3 5 NODE_SIZES 2)

# Open MPI 4.1's osc/rdma segfaults on a 64-bit MPI_Compare_and_swap over
# btl/vader (reproducible with plain MPI_Win_allocate + MPI_Compare_and_swap
# on MPI_INT64_T at P = 2). Until the backend chooses a working one-sided
# component itself, the atomic tests exclude osc/rdma.
if(ACCRETE_MPI_FLAVOR STREQUAL "openmpi")
  foreach(t atomic_test.np1 atomic_test.np1.node1 atomic_test.np2 atomic_test.np2.node1 atomic_test.np3
            atomic_test.np3.node1 atomic_test.np3.node2 atomic_test.np4 atomic_test.np4.node1 atomic_test.np5.node2)
    set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT "OMPI_MCA_osc=^rdma")
  endforeach()
endif()
