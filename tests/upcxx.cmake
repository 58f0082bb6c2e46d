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

# A UPC++ program that uses a device memory kind must not compile, and the
# compiler must say why.
set(_upcxx_device_kind ${CMAKE_CURRENT_BINARY_DIR}/upcxx_device_kind.cpp)
file(WRITE ${_upcxx_device_kind} [=[
#include <upcxx/upcxx.hpp>
void f() {
  upcxx::cuda_device gpu(0);
  (void)gpu;
}
]=])
add_test(NAME upcxx_device_kind_diagnostic
  COMMAND ${MPI_CXX_COMPILER} -std=c++20 -fsyntax-only -I${PROJECT_SOURCE_DIR}/include ${_upcxx_device_kind})
set_tests_properties(upcxx_device_kind_diagnostic PROPERTIES
  PASS_REGULAR_EXPRESSION "device memory kinds .* are not supported")

# A failing UPCXX_ASSERT_ALWAYS says what failed, where, on which rank, with
# its message (the program then aborts; the line is what is checked).
add_executable(upcxx_assert_failure upcxx_assert_failure.cpp)
target_link_libraries(upcxx_assert_failure PRIVATE accrete::upcxx)
add_test(NAME upcxx_assert_failure
  COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 1 ${ACCRETE_MPIEXEC_PREFLAGS} $<TARGET_FILE:upcxx_assert_failure>)
set_tests_properties(upcxx_assert_failure PROPERTIES ENVIRONMENT "${ACCRETE_MPI_ENV}" TIMEOUT 60
  PASS_REGULAR_EXPRESSION "UPCXX_ASSERT failed on rank 0: parts == 4 \\([^)]*upcxx_assert_failure.cpp:9\\): parts = 3")
