# The C API (include/accrete/c/accrete.h): a C program, not GoogleTest, at
# odd and even P, on the real node and with every process its own node, and
# once with MPI initialised by the program itself. Both MPIs.
add_executable(c_api_test c_api/c_api_test.c)
target_link_libraries(c_api_test PRIVATE accrete::accrete MPI::MPI_C m)
set_target_properties(c_api_test PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON LINKER_LANGUAGE CXX)
function(accrete_add_c_api_run name np)
  add_test(NAME ${name} COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${ACCRETE_MPIEXEC_PREFLAGS}
           $<TARGET_FILE:c_api_test> ${ARGN})
  set_tests_properties(${name} PROPERTIES TIMEOUT 300 ENVIRONMENT "${ACCRETE_MPI_ENV};${_c_api_env}" PROCESSORS ${np}
                       LABELS sanitize)
endfunction()
foreach(np 1 2 3 4)
  set(_c_api_env "")
  accrete_add_c_api_run(c_api_test.np${np} ${np})
endforeach()
set(_c_api_env ACCRETE_NODE_SIZE=1)
accrete_add_c_api_run(c_api_test.np3.node1 3)
# The production layout: nodes of 2 (node-local and remote peers at once).
set(_c_api_env ACCRETE_NODE_SIZE=2)
accrete_add_c_api_run(c_api_test.np3.node2 3)
accrete_add_c_api_run(c_api_test.np5.node2 5)
set(_c_api_env "")
accrete_add_c_api_run(c_api_test.np2.user_mpi 2 --user-mpi)

# The header is plain C99 (no C++ or compiler extensions) and also valid C++.
add_test(NAME c_header_is_c99
  COMMAND ${CMAKE_C_COMPILER} -std=c99 -pedantic-errors -Wall -Wextra -Werror -fsyntax-only
          -I${PROJECT_SOURCE_DIR}/include -x c ${PROJECT_SOURCE_DIR}/include/accrete/c/accrete.h)
add_test(NAME c_header_is_cxx
  COMMAND ${CMAKE_CXX_COMPILER} -std=c++20 -pedantic-errors -Wall -Wextra -Werror -fsyntax-only
          -I${PROJECT_SOURCE_DIR}/include -x c++ ${PROJECT_SOURCE_DIR}/include/accrete/c/accrete.h)

# Collective C calls that one process rejects or gives other arguments:
# every process returns an error, none waits forever; an array's queries
# after accrete_finalize report ACCRETE_ERR_STATE (tests/c_api/c_agree_test.c).
add_executable(c_agree_test c_api/c_agree_test.c)
target_link_libraries(c_agree_test PRIVATE accrete::accrete MPI::MPI_C)
set_target_properties(c_agree_test PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON LINKER_LANGUAGE CXX)
foreach(np 2 3)
  add_test(NAME c_agree_test.np${np} COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np}
           ${ACCRETE_MPIEXEC_PREFLAGS} $<TARGET_FILE:c_agree_test>)
  set_tests_properties(c_agree_test.np${np} PROPERTIES TIMEOUT 120 ENVIRONMENT "${ACCRETE_MPI_ENV}" PROCESSORS ${np}
                       LABELS sanitize)
endforeach()

# The C API's error messages in the C user's words (a sweep of bad inputs).
add_executable(c_errors_test c_api/c_errors_test.c)
target_link_libraries(c_errors_test PRIVATE accrete::accrete MPI::MPI_C m)
set_target_properties(c_errors_test PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON LINKER_LANGUAGE CXX)
foreach(np 1 2)
  add_test(NAME c_errors_test.np${np} COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np}
           ${ACCRETE_MPIEXEC_PREFLAGS} $<TARGET_FILE:c_errors_test>)
  set_tests_properties(c_errors_test.np${np} PROPERTIES TIMEOUT 120 ENVIRONMENT "${ACCRETE_MPI_ENV}"
                       PROCESSORS ${np} LABELS sanitize)
endforeach()

# The sparse matrix's C API (tests/c_api/c_sparse_test.c): uneven and empty
# row ranges, rounds, a growing pattern, errors; nodes real, of 1 and of 2.
add_executable(c_sparse_test c_api/c_sparse_test.c)
target_link_libraries(c_sparse_test PRIVATE accrete::accrete MPI::MPI_C)
set_target_properties(c_sparse_test PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON LINKER_LANGUAGE CXX)
foreach(run IN ITEMS "1;" "2;" "3;" "4;ACCRETE_NODE_SIZE=2" "5;ACCRETE_NODE_SIZE=1")
  list(GET run 0 np)
  list(GET run 1 env)
  set(name c_sparse_test.np${np})
  if(env)
    string(REGEX REPLACE ".*=" "" _ns "${env}")
    string(APPEND name ".node${_ns}")
  endif()
  add_test(NAME ${name} COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${ACCRETE_MPIEXEC_PREFLAGS}
           $<TARGET_FILE:c_sparse_test>)
  set_tests_properties(${name} PROPERTIES TIMEOUT 120 ENVIRONMENT "${ACCRETE_MPI_ENV};${env}" PROCESSORS ${np}
                       LABELS sanitize)
endforeach()
