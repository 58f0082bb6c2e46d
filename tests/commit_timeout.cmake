add_executable(commit_timeout_test commit_timeout_test.cpp)
target_link_libraries(commit_timeout_test PRIVATE accrete::accrete)
add_test(NAME commit_timeout_test.np3
  COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 3 ${ACCRETE_MPIEXEC_PREFLAGS} $<TARGET_FILE:commit_timeout_test>)
set_tests_properties(commit_timeout_test.np3 PROPERTIES TIMEOUT 120
  ENVIRONMENT "${ACCRETE_MPI_ENV};ACCRETE_COMMIT_TIMEOUT=3"
  PASS_REGULAR_EXPRESSION "processes not in this commit: 2")
