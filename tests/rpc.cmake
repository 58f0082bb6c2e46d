accrete_add_mpi_test(rpc_test SOURCES rpc_test.cpp NP 1 2 3 4 NODE_SIZES 0 1 TIMEOUT 600 LABELS sanitize)
# Several processes on each of several nodes (nodes of 2: 2 + 1, 2 + 2 + 1),
# where node-local and MPI paths meet in one run.
accrete_add_mpi_test(rpc_test NP 3 5 NODE_SIZES 2 TIMEOUT 600)
# Tiny rings (tests/CMakeLists.txt); 0 turns the rings off (MPI only).
accrete_add_mpi_test(rpc_test NP 2 4 ENV ${ACCRETE_TINY_RINGS} SUFFIX ring256 TIMEOUT 600 LABELS sanitize)
accrete_add_mpi_test(rpc_test NP 2 3 ENV ACCRETE_AM_RING_BYTES=0 SUFFIX noring TIMEOUT 600)

# Compile-time diagnostics: a lambda capturing a non-serializable value must
# be rejected with a clear message.
set(_rpc_bad_capture ${CMAKE_CURRENT_BINARY_DIR}/rpc_bad_capture.cpp)
file(WRITE ${_rpc_bad_capture} [=[
#include <string>
#include "accrete/rpc.hpp"
void f() {
  std::string s = "not trivially copyable";
  accrete::rpc_ff(0, [s] { (void)s.size(); });
}
]=])
add_test(NAME rpc_bad_capture_diagnostic
  COMMAND ${MPI_CXX_COMPILER} -std=c++20 -fsyntax-only -I${PROJECT_SOURCE_DIR}/include ${_rpc_bad_capture})
set_tests_properties(rpc_bad_capture_diagnostic PROPERTIES PASS_REGULAR_EXPRESSION "the callable is not serializable")
