# Puts, gets, copies, RPC writes and atomics of every shape and completion
# in flight together (tests/rma_mix_test.cpp), in every layout.
accrete_add_mpi_test(rma_mix_test SOURCES rma_mix_test.cpp NP 1 2 3 4 5 NODE_SIZES 0 1 LABELS sanitize TIMEOUT 300)
accrete_add_mpi_test(rma_mix_test NP 3 4 5 NODE_SIZES 2 LABELS sanitize TIMEOUT 300)
# The same with the progress thread beside the issuing thread, and in the
# par thread mode.
accrete_add_mpi_test(rma_mix_test NP 3 NODE_SIZES 2 ENV ACCRETE_PROGRESS_THREAD=1 SUFFIX progress LABELS tsan TIMEOUT 300)
accrete_add_mpi_test(rma_mix_test NP 3 NODE_SIZES 1 ENV ACCRETE_THREAD_MODE=par SUFFIX par TIMEOUT 300)
# Strided transfers as one message each (the automatic choice under MPICH)
# under either MPI, also unpacked by the progress thread.
accrete_add_mpi_test(rma_mix_test NP 3 NODE_SIZES 1 ENV ACCRETE_NONCONTIG=message SUFFIX message TIMEOUT 300)
accrete_add_mpi_test(rma_mix_test NP 3 NODE_SIZES 1 ENV ACCRETE_NONCONTIG=message ACCRETE_PROGRESS_THREAD=1
                     SUFFIX message_progress TIMEOUT 300)
if(ACCRETE_MPI_FLAVOR STREQUAL "openmpi")
  # double atomics are 64-bit compare-and-swap loops, which Open MPI 4's
  # osc/rdma refuses (tests/atomic.cmake): the runs above leave it out, as
  # the error tells a user to, and these keep it for the integer atomics.
  # The progress-thread run keeps osc/rdma and the integer atomics: without
  # osc/rdma the window is osc/ucx's, and under ThreadSanitizer the progress
  # thread's exit then crashes in UCX's munmap hook (ucm_vm_munmap, called
  # by glibc freeing the thread's stack), outside accrete.
  get_property(_tests DIRECTORY PROPERTY TESTS)
  foreach(t ${_tests})
    if(t MATCHES "^rma_mix_test[.].*[.]progress$")
      set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT "GTEST_FILTER=*IntegerAtomics*")
    elseif(t MATCHES "^rma_mix_test[.]")
      set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT "OMPI_MCA_osc=^rdma")
    endif()
  endforeach()
  accrete_add_mpi_test(rma_mix_test NP 3 NODE_SIZES 1 2 ENV GTEST_FILTER=*IntegerAtomics* SUFFIX osc_rdma TIMEOUT 300)
endif()
