# The sanitizer build runs P <= 3 (.ci/run): the lifetimes of RPC
# arguments, views and completions are where it finds what tests cannot see.
accrete_add_mpi_test(upcxx_test SOURCES upcxx_test.cpp upcxx_components.cpp upcxx_unqualified.cpp upcxx_serialization_forms.cpp upcxx_transitive_includes.cpp upcxx_lifetimes.cpp upcxx_defer_completion.cpp NP 1 2 3 NODE_SIZES 0 1 LABELS sanitize)
accrete_add_mpi_test(upcxx_test NP 4 5 NODE_SIZES 0 1)
# Several processes on each of several nodes (nodes of 2, 1 and of 2, 2, 1):
# node peers and remote processes in one run, where local_team, is_local()
# and copy's paths differ from process to process.
accrete_add_mpi_test(upcxx_test NP 3 NODE_SIZES 2 LABELS sanitize)
accrete_add_mpi_test(upcxx_test NP 5 NODE_SIZES 2)
# The atomic_domain test makes 64-bit compare-and-swaps: under Open MPI the
# same exclusion of osc/rdma as tests/atomic.cmake (and for the same reason).
if(ACCRETE_MPI_FLAVOR STREQUAL "openmpi")
  foreach(t upcxx_test.np1 upcxx_test.np1.node1 upcxx_test.np2 upcxx_test.np2.node1 upcxx_test.np3 upcxx_test.np3.node1
            upcxx_test.np3.node2 upcxx_test.np4 upcxx_test.np4.node1 upcxx_test.np5 upcxx_test.np5.node1
            upcxx_test.np5.node2)
    set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT "OMPI_MCA_osc=^rdma")
  endforeach()
endif()

# A failing UPCXX_ASSERT_ALWAYS says what failed, where, on which rank, with
# its message (the program then aborts; the line is what is checked).
add_executable(upcxx_assert_failure upcxx_assert_failure.cpp)
target_link_libraries(upcxx_assert_failure PRIVATE accrete::upcxx)
add_test(NAME upcxx_assert_failure
  COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 1 ${ACCRETE_MPIEXEC_PREFLAGS} $<TARGET_FILE:upcxx_assert_failure>)
set_tests_properties(upcxx_assert_failure PROPERTIES ENVIRONMENT "${ACCRETE_MPI_ENV}" TIMEOUT 60
  PASS_REGULAR_EXPRESSION "UPCXX_ASSERT failed on rank 0: parts == 4 \\([^)]*upcxx_assert_failure.cpp:17\\): parts = 3")
add_test(NAME upcxx_fatal_error
  COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 1 ${ACCRETE_MPIEXEC_PREFLAGS} $<TARGET_FILE:upcxx_assert_failure> fatal)
set_tests_properties(upcxx_fatal_error PROPERTIES ENVIRONMENT "${ACCRETE_MPI_ENV}" TIMEOUT 60
  PASS_REGULAR_EXPRESSION "UPC\\+\\+ fatal error on rank 0: parts = 3")
# ACCRETE_BACKTRACE=1 (upcxx-run -backtrace): a crash or a failed assertion
# prints the rank, the signal and the call stack, whose frames name the
# program; without it, nothing of that (the test above).
add_test(NAME upcxx_backtrace_segv
  COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 1 ${ACCRETE_MPIEXEC_PREFLAGS} $<TARGET_FILE:upcxx_assert_failure> segv)
set_tests_properties(upcxx_backtrace_segv PROPERTIES ENVIRONMENT "${ACCRETE_MPI_ENV};ACCRETE_BACKTRACE=1" TIMEOUT 60
  PASS_REGULAR_EXPRESSION "accrete: rank 0 \\(pid [0-9]+\\) received SIGSEGV, segmentation fault; backtrace:\n[^\n]*upcxx_assert_failure")
add_test(NAME upcxx_backtrace_assert
  COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 1 ${ACCRETE_MPIEXEC_PREFLAGS} $<TARGET_FILE:upcxx_assert_failure>)
set_tests_properties(upcxx_backtrace_assert PROPERTIES ENVIRONMENT "${ACCRETE_MPI_ENV};ACCRETE_BACKTRACE=1" TIMEOUT 60
  PASS_REGULAR_EXPRESSION "UPCXX_ASSERT failed on rank 0: [^\n]*\n(.*\n)?accrete: rank 0 \\(pid [0-9]+\\) received SIGABRT, abort; backtrace:\n[^\n]*upcxx_assert_failure")
set_tests_properties(upcxx_assert_failure upcxx_fatal_error PROPERTIES FAIL_REGULAR_EXPRESSION "received SIGABRT, abort; backtrace")

# finalize() runs the RPCs that reach a process already in it (UPC++'s
# finalize begins with a barrier that makes user-level progress).
add_executable(upcxx_finalize_test upcxx_finalize_test.cpp)
target_link_libraries(upcxx_finalize_test PRIVATE accrete::upcxx)
foreach(np 2 3)
  foreach(ns 0 1)
    set(_env ${ACCRETE_MPI_ENV})
    set(_name upcxx_finalize_test.np${np})
    if(NOT ns EQUAL 0)
      list(APPEND _env ACCRETE_NODE_SIZE=${ns})
      set(_name ${_name}.node${ns})
    endif()
    add_test(NAME ${_name}
      COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${ACCRETE_MPIEXEC_PREFLAGS}
              $<TARGET_FILE:upcxx_finalize_test>)
    set_tests_properties(${_name} PROPERTIES ENVIRONMENT "${_env}" TIMEOUT 60 PROCESSORS ${np})
  endforeach()
endforeach()

# A program that ends without finalize() (tests/exit_check_test.cpp): the
# job ends as under UPC++/GASNet, status 0 when every process returned, the
# failing status when one exited with it, and never hangs. One node and
# every process its own node.
add_executable(exit_check_test exit_check_test.cpp)
target_link_libraries(exit_check_test PRIVATE accrete::upcxx)
foreach(case "return|zero|rank 2 of 3 returns without finalize"
              "exit3|nonzero|rank 0 exits with status 3 without accrete::finalize"
              "fork|zero|child exited with 5"
              "early|nonzero|rank 0 ended without accrete::finalize.*not every process ended|accrete::barrier.*not entered it: 0")
  # mode|want|regex (the regex may hold "|" itself)
  string(REGEX MATCH "^([^|]*)[|]([^|]*)[|](.*)$" _m "${case}")
  set(_mode ${CMAKE_MATCH_1})
  set(_want ${CMAKE_MATCH_2})
  set(_regex "${CMAKE_MATCH_3}")
  foreach(ns 0 1)
    set(_env ${ACCRETE_MPI_ENV};ACCRETE_COLLECTIVE_TIMEOUT=5)
    set(_name exit_check_test.${_mode}.np3)
    if(ns EQUAL 1)
      list(APPEND _env ACCRETE_NODE_SIZE=1)
      set(_name ${_name}.node1)
    endif()
    add_test(NAME ${_name}
      COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/expect_output.sh ${_want} "${_regex}"
              ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 3 ${ACCRETE_MPIEXEC_PREFLAGS}
              $<TARGET_FILE:exit_check_test> ${_mode})
    set_tests_properties(${_name} PROPERTIES ENVIRONMENT "${_env}" TIMEOUT 60 PROCESSORS 3 LABELS sanitize)
  endforeach()
endforeach()

# RMA on a type that is not TriviallySerializable stops at compile time with
# UPC++'s words as the first error, for each form (value and array puts and
# gets, with and without completion requests). Compiler-only, so an Open
# MPI build checks it for both.
if(NOT ACCRETE_MPI_FLAVOR STREQUAL "mpich")
  set(_mpi_inc "")
  foreach(d ${MPI_CXX_INCLUDE_DIRS})
    list(APPEND _mpi_inc -I${d})
  endforeach()
  # -Wfatal-errors: the compiler stops at the first error, which must be it.
  function(accrete_upcxx_compile_error name c regex)
    add_test(NAME ${name}.case${c}
      COMMAND ${CMAKE_CXX_COMPILER} -std=c++20 -fsyntax-only -Wfatal-errors -DCASE=${c}
              -I${PROJECT_SOURCE_DIR}/include ${_mpi_inc} ${CMAKE_CURRENT_SOURCE_DIR}/${name}.cpp)
    set_tests_properties(${name}.case${c} PROPERTIES PASS_REGULAR_EXPRESSION "${regex}")
  endfunction()
  foreach(c 1 2 3 4 5 6)
    accrete_upcxx_compile_error(upcxx_rma_type_error ${c}
      "static assertion failed: upcxx: RMA operations only work on TriviallySerializable types")
  endforeach()
  # upcxx_memberof needs a standard-layout class; upcxx_memberof_general
  # takes any class but not a reference member.
  accrete_upcxx_compile_error(upcxx_memberof_error 1
    "static assertion failed: upcxx_memberof requires a global_ptr to a standard-layout class")
  accrete_upcxx_compile_error(upcxx_memberof_error 2
    "static assertion failed: upcxx_memberof_general: the member is a reference")
endif()
