add_executable(commit_timeout_test commit_timeout_test.cpp)
target_link_libraries(commit_timeout_test PRIVATE accrete::accrete)
# The run must fail (MPI_Abort) AND name the missing process.
add_test(NAME commit_timeout_test.np3
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/expect_output.sh nonzero "processes not in this commit: 2$"
          ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 3 ${ACCRETE_MPIEXEC_PREFLAGS} $<TARGET_FILE:commit_timeout_test>)
set_tests_properties(commit_timeout_test.np3 PROPERTIES TIMEOUT 120
  ENVIRONMENT "${ACCRETE_MPI_ENV};ACCRETE_COMMIT_TIMEOUT=3")
# The same across pretend nodes: the straggler is remote, read without
# blocking on its (absent) MPI progress.
add_test(NAME commit_timeout_test.np3.node1
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/expect_output.sh nonzero "processes not in this commit: .*2"
          ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 3 ${ACCRETE_MPIEXEC_PREFLAGS} $<TARGET_FILE:commit_timeout_test>)
set_tests_properties(commit_timeout_test.np3.node1 PROPERTIES TIMEOUT 120
  ENVIRONMENT "${ACCRETE_MPI_ENV};ACCRETE_COMMIT_TIMEOUT=3;ACCRETE_NODE_SIZE=1")
# A straggler that makes no MPI progress at all, on another (pretend) node:
# it is named, and the abort comes within seconds, not when it wakes up.
add_test(NAME commit_timeout_test.np3.node1.compute
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/expect_output.sh nonzero "processes not in this commit: .*2"
          ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 3 ${ACCRETE_MPIEXEC_PREFLAGS} $<TARGET_FILE:commit_timeout_test>
          compute)
set_tests_properties(commit_timeout_test.np3.node1.compute PROPERTIES TIMEOUT 60
  ENVIRONMENT "${ACCRETE_MPI_ENV};ACCRETE_COMMIT_TIMEOUT=3;ACCRETE_NODE_SIZE=1")

# Malformed ACCRETE_* values are errors naming the variable (the program
# exits 0 only when init threw accrete::error naming it).
add_executable(env_values_test env_values_test.cpp)
target_link_libraries(env_values_test PRIVATE accrete::accrete)
set(_env_cases
  "ACCRETE_SEGMENT_SIZE=1e30" "ACCRETE_SEGMENT_SIZE=inf" "ACCRETE_SEGMENT_SIZE=0" "ACCRETE_SEGMENT_SIZE=10Mxyz"
  "ACCRETE_NODE_SIZE=abc" "ACCRETE_NODE_SIZE=-1" "ACCRETE_AM_RING_BYTES=9223372036854775808"
  "ACCRETE_AM_BULK_RING_BYTES=2G"
  "ACCRETE_VERBOSE=yes" "ACCRETE_PROGRESS_THREAD=2" "ACCRETE_BACKTRACE=yes"
  # One grammar for every variable (docs/semantics.md): no blanks, no '+',
  # no exponent or hex, nothing that rounds to 0, no segment the node
  # cannot hold (it failed inside the MPI's shared-memory setup).
  "ACCRETE_NODE_SIZE= 1" "ACCRETE_NODE_SIZE=+1" "ACCRETE_NODE_SIZE=1 " "ACCRETE_SEGMENT_SIZE=1T"
  "ACCRETE_COMMIT_TIMEOUT=1e-400" "ACCRETE_COMMIT_TIMEOUT=0x1p3" "ACCRETE_COMMIT_TIMEOUT=inf"
  "ACCRETE_COLLECTIVE_TIMEOUT=2s" "ACCRETE_COLLECTIVE_TIMEOUT=-1" "ACCRETE_NONCONTIG=Auto" "ACCRETE_SIMD=avx512" "ACCRETE_HUGE_PAGES=1"
  "ACCRETE_SEGMENT_SIZE=0%" "ACCRETE_SEGMENT_SIZE=101%" "ACCRETE_SEGMENT_SIZE=2.5%" "ACCRETE_SEGMENT_SIZE=%")
set(_i 0)
foreach(c ${_env_cases})
  string(REGEX REPLACE "=.*" "" var "${c}")
  add_test(NAME env_values_test.${_i} COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 1 ${ACCRETE_MPIEXEC_PREFLAGS}
           $<TARGET_FILE:env_values_test> ${var})
  set_tests_properties(env_values_test.${_i} PROPERTIES TIMEOUT 60 ENVIRONMENT "${ACCRETE_MPI_ENV};${c}")
  math(EXPR _i "${_i} + 1")
endforeach()
# The commit timeout is read at the first commit.
add_test(NAME env_values_test.commit_timeout COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 1
         ${ACCRETE_MPIEXEC_PREFLAGS} $<TARGET_FILE:env_values_test> ACCRETE_COMMIT_TIMEOUT)
set_tests_properties(env_values_test.commit_timeout PROPERTIES TIMEOUT 60
  ENVIRONMENT "${ACCRETE_MPI_ENV};ACCRETE_COMMIT_TIMEOUT=-1")
# Empty values mean unset (the convention of MPI and most tools); valid
# ones are taken.
add_test(NAME env_values_test.empty_means_unset COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2
         ${ACCRETE_MPIEXEC_PREFLAGS} $<TARGET_FILE:env_values_test> accept)
set_tests_properties(env_values_test.empty_means_unset PROPERTIES TIMEOUT 60 ENVIRONMENT
  "${ACCRETE_MPI_ENV};ACCRETE_NODE_SIZE=;ACCRETE_SEGMENT_SIZE=;ACCRETE_COMMIT_TIMEOUT=;ACCRETE_COLLECTIVE_TIMEOUT=;ACCRETE_VERBOSE=;ACCRETE_NONCONTIG=;ACCRETE_SIMD=;ACCRETE_BACKTRACE=;ACCRETE_HUGE_PAGES=")
add_test(NAME env_values_test.valid_values COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2
         ${ACCRETE_MPIEXEC_PREFLAGS} $<TARGET_FILE:env_values_test> accept)
set_tests_properties(env_values_test.valid_values PROPERTIES TIMEOUT 60 ENVIRONMENT
  "${ACCRETE_MPI_ENV};ACCRETE_NODE_SIZE=1;ACCRETE_SEGMENT_SIZE=64M;ACCRETE_COMMIT_TIMEOUT=120.5;ACCRETE_COLLECTIVE_TIMEOUT=30.25;ACCRETE_SIMD=baseline;ACCRETE_NONCONTIG=message;ACCRETE_HUGE_PAGES=targets")
# A share of the node's memory (upcxx-run -shared-heap P%), divided among
# the node's processes; the program computes the expected size itself.
add_test(NAME env_values_test.segment_share COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 3
         ${ACCRETE_MPIEXEC_PREFLAGS} $<TARGET_FILE:env_values_test> share)
set_tests_properties(env_values_test.segment_share PROPERTIES TIMEOUT 60 ENVIRONMENT
  "${ACCRETE_MPI_ENV};ACCRETE_SEGMENT_SIZE=2%;ACCRETE_NODE_SIZE=1")
add_test(NAME matrix_after_finalize COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 ${ACCRETE_MPIEXEC_PREFLAGS}
         $<TARGET_FILE:env_values_test> after_finalize)
set_tests_properties(matrix_after_finalize PROPERTIES TIMEOUT 60 ENVIRONMENT "${ACCRETE_MPI_ENV}")

# ACCRETE_COLLECTIVE_TIMEOUT: every accrete collective, not only commit. The
# run must fail (MPI_Abort) AND name the call and the processes that never
# entered it (tests/collective_timeout_test.cpp). On one node the records
# are read directly, across pretend nodes by MPI (a process that does not
# answer within a second is reported as such).
add_executable(collective_timeout_test collective_timeout_test.cpp)
target_link_libraries(collective_timeout_test PRIVATE accrete::accrete)
foreach(case "norm|accrete::dist_array::norm .*not entered it: 1 \\(in no blocking accrete collective\\), 2 \\(in no"
              "construct|accrete::dist_array .*not entered it: 1 \\(in no blocking"
              "other|accrete::dist_array::norm .*not entered it: 1 \\(in accrete::barrier instead: the calls differ\\), 2 \\(in accrete::barrier"
              "split|accrete::team::split .*not entered it: 1 \\(in no blocking")
  string(REPLACE "|" ";" _c "${case}")
  list(GET _c 0 _mode)
  list(GET _c 1 _regex)
  add_test(NAME collective_timeout_test.${_mode}.np3
    COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/expect_output.sh nonzero "${_regex}"
            ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 3 ${ACCRETE_MPIEXEC_PREFLAGS}
            $<TARGET_FILE:collective_timeout_test> ${_mode})
  set_tests_properties(collective_timeout_test.${_mode}.np3 PROPERTIES TIMEOUT 120 ENVIRONMENT "${ACCRETE_MPI_ENV}")
endforeach()
add_test(NAME collective_timeout_test.norm.np3.node1
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/expect_output.sh nonzero
          "accrete::dist_array::norm .*not entered it: .*(1 \\(in no blocking|not answering.*1)"
          ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 3 ${ACCRETE_MPIEXEC_PREFLAGS}
          $<TARGET_FILE:collective_timeout_test> norm)
set_tests_properties(collective_timeout_test.norm.np3.node1 PROPERTIES TIMEOUT 120
  ENVIRONMENT "${ACCRETE_MPI_ENV};ACCRETE_NODE_SIZE=1")
