# The Fortran module (src/fortran), when a Fortran compiler was found: a
# Fortran program at odd and even P and with every process its own node.
if(TARGET accrete_fortran)
  add_executable(fortran_api_test fortran/fortran_api_test.f90)
  target_link_libraries(fortran_api_test PRIVATE accrete::accrete_fortran)
  # The test compares reals exactly on purpose: its values are multiples of 0.25.
  target_compile_options(fortran_api_test PRIVATE -Wno-compare-reals)
  foreach(run 1 2 3 4 3.node1 3.node2 5.node2)
    string(REGEX MATCH "^[0-9]+" np ${run})
    set(env ${ACCRETE_MPI_ENV})
    if(run MATCHES "node([0-9]+)")
      list(APPEND env ACCRETE_NODE_SIZE=${CMAKE_MATCH_1})
    endif()
    add_test(NAME fortran_api_test.np${run}
      COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${ACCRETE_MPIEXEC_PREFLAGS} $<TARGET_FILE:fortran_api_test>)
    set_tests_properties(fortran_api_test.np${run} PROPERTIES TIMEOUT 300 ENVIRONMENT "${env}" PROCESSORS ${np}
      PASS_REGULAR_EXPRESSION "fortran_api_test: 0 failure" LABELS sanitize)
  endforeach()
endif()
