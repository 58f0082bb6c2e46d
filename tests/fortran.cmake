# The Fortran module (src/fortran), when a Fortran compiler was found: a
# Fortran program at odd and even P and with every process its own node.
if(TARGET accrete_fortran)
  # fortran_api_test: the runtime, convergent_matrix, dist_array, counter;
  # fortran_sparse_test: the sparse matrix.
  add_library(fortran_test_report OBJECT fortran/test_report.f90)  # report(): the verdict line
  target_link_libraries(fortran_test_report PUBLIC accrete::accrete_fortran)
  set_target_properties(fortran_test_report PROPERTIES Fortran_MODULE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fortran_modules)
  target_include_directories(fortran_test_report PUBLIC ${CMAKE_CURRENT_BINARY_DIR}/fortran_modules)
  foreach(prog fortran_api_test fortran_sparse_test)
    add_executable(${prog} fortran/${prog}.f90)
    target_link_libraries(${prog} PRIVATE fortran_test_report accrete::accrete_fortran)
    # The tests compare reals exactly on purpose: their values are multiples of 0.25.
    target_compile_options(${prog} PRIVATE -Wno-compare-reals)
    foreach(run 1 2 3 4 3.node1 3.node2 5.node2)
      string(REGEX MATCH "^[0-9]+" np ${run})
      set(env ${ACCRETE_MPI_ENV})
      if(run MATCHES "node([0-9]+)")
        list(APPEND env ACCRETE_NODE_SIZE=${CMAKE_MATCH_1})
      endif()
      add_test(NAME ${prog}.np${run}
        COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${ACCRETE_MPIEXEC_PREFLAGS} $<TARGET_FILE:${prog}>)
      set_tests_properties(${prog}.np${run} PROPERTIES TIMEOUT 300 ENVIRONMENT "${env}" PROCESSORS ${np}
        PASS_REGULAR_EXPRESSION "${prog}: 0 failure" LABELS sanitize)
    endforeach()
  endforeach()
endif()
