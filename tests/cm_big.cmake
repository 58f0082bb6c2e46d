# Sizes beyond 2^31 (~7-9 GB each): run alone, Open MPI builds only (the
# code paths are MPI-independent arithmetic; MPICH runs the rest of the
# suite), never under the sanitizers.
if(ACCRETE_MPI_FLAVOR STREQUAL "openmpi" AND NOT ACCRETE_SANITIZE)
  add_executable(cm_big_test cm_big_test.cpp)
  target_link_libraries(cm_big_test PRIVATE accrete::accrete)
  foreach(ns 0 1)
    set(env ${ACCRETE_MPI_ENV})
    if(ns EQUAL 1)
      list(APPEND env ACCRETE_NODE_SIZE=1)
    endif()
    add_test(NAME cm_big_test.part.np2.node${ns}
      COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 ${ACCRETE_MPIEXEC_PREFLAGS} $<TARGET_FILE:cm_big_test> part)
    set_tests_properties(cm_big_test.part.np2.node${ns} PROPERTIES TIMEOUT 600 ENVIRONMENT "${env}" RUN_SERIAL TRUE)
  endforeach()
  add_test(NAME cm_big_test.local.np1
    COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 1 ${ACCRETE_MPIEXEC_PREFLAGS} $<TARGET_FILE:cm_big_test> local)
  set_tests_properties(cm_big_test.local.np1 PROPERTIES TIMEOUT 600 ENVIRONMENT "${ACCRETE_MPI_ENV}" RUN_SERIAL TRUE)
endif()
