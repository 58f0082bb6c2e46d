accrete_add_mpi_test(atomic_test SOURCES atomic_test.cpp NP 1 2 3 4 NODE_SIZES 0 1)
# Several processes on each of several nodes: the world window is then
# MPI_Win_create'd (osc/ucx under Open MPI where UCX is present), where
# floating-point atomics once came out wrong.
accrete_add_mpi_test(atomic_test NP 3 5 NODE_SIZES 2)

# Open MPI 4.1's osc/rdma segfaults on a 64-bit MPI_Compare_and_swap over
# btl/vader (reproducible with plain MPI_Win_allocate + MPI_Compare_and_swap
# on MPI_INT64_T at P = 2). The test main initializes MPI before accrete,
# as a program may: then accrete cannot choose the one-sided component,
# and refuses those operations with the remedy (AtomicErrors.* without the
# exclusion, below); the other atomic tests exclude osc/rdma, as the
# message tells a user to. atomics_owned_mpi_test lets accrete initialize
# MPI, which leaves osc/rdma out by itself: no setting needed.
add_executable(atomics_owned_mpi_test atomics_owned_mpi_test.cpp)
target_link_libraries(atomics_owned_mpi_test PRIVATE accrete::accrete)
foreach(ns 1 2)
  add_test(NAME atomics_owned_mpi_test.np3.node${ns}
    COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 3 ${ACCRETE_MPIEXEC_PREFLAGS}
            $<TARGET_FILE:atomics_owned_mpi_test>)
  set_tests_properties(atomics_owned_mpi_test.np3.node${ns} PROPERTIES TIMEOUT 120 PROCESSORS 3
    ENVIRONMENT "${ACCRETE_MPI_ENV};ACCRETE_NODE_SIZE=${ns}")
endforeach()
if(ACCRETE_MPI_FLAVOR STREQUAL "openmpi")
  accrete_add_mpi_test(atomic_test NP 2 3 NODE_SIZES 1 ENV GTEST_FILTER=AtomicErrors.* ACCRETE_TEST_CAS64=refused
                       SUFFIX osc_rdma)
  accrete_add_mpi_test(atomic_test NP 3 NODE_SIZES 2 ENV GTEST_FILTER=AtomicErrors.* ACCRETE_TEST_CAS64=refused
                       SUFFIX osc_rdma)
  foreach(t atomic_test.np1 atomic_test.np1.node1 atomic_test.np2 atomic_test.np2.node1 atomic_test.np3
            atomic_test.np3.node1 atomic_test.np3.node2 atomic_test.np4 atomic_test.np4.node1 atomic_test.np5.node2)
    set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT "OMPI_MCA_osc=^rdma")
  endforeach()
endif()
