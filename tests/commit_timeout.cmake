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
  "ACCRETE_VERBOSE=yes" "ACCRETE_PROGRESS_THREAD=2")
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
add_test(NAME matrix_after_finalize COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 ${ACCRETE_MPIEXEC_PREFLAGS}
         $<TARGET_FILE:env_values_test> after_finalize)
set_tests_properties(matrix_after_finalize PROPERTIES TIMEOUT 60 ENVIRONMENT "${ACCRETE_MPI_ENV}")
