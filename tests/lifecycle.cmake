# Binaries with their own main: they control MPI and accrete start-up.
add_executable(init_order_test init_order_test.cpp)
target_link_libraries(init_order_test PRIVATE accrete::accrete)
foreach(mode accrete-first user-first)
  foreach(np 1 3)
    add_test(NAME init_order_test.${mode}.np${np}
      COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${ACCRETE_MPIEXEC_PREFLAGS}
              $<TARGET_FILE:init_order_test> ${mode})
    set_tests_properties(init_order_test.${mode}.np${np} PROPERTIES TIMEOUT 120 ENVIRONMENT "${ACCRETE_MPI_ENV}"
      LABELS sanitize)
  endforeach()
endforeach()

add_executable(big_transfer_test big_transfer_test.cpp)
target_link_libraries(big_transfer_test PRIVATE accrete::accrete)
foreach(ns 0 1)
  add_test(NAME big_transfer_test.np2.node${ns}
    COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 ${ACCRETE_MPIEXEC_PREFLAGS}
            $<TARGET_FILE:big_transfer_test>)
  set(env ${ACCRETE_MPI_ENV})
  if(ns EQUAL 1)
    list(APPEND env ACCRETE_NODE_SIZE=1)
  endif()
  # Needs ~7 GB of memory; run it alone.
  set_tests_properties(big_transfer_test.np2.node${ns} PROPERTIES TIMEOUT 600 ENVIRONMENT "${env}" RUN_SERIAL TRUE)
endforeach()

# Objects that outlive finalize() under a second init() (tests/reinit_test.cpp):
# using one throws, destroying one leaves the new runtime alone. The real
# node and every process its own node.
add_executable(reinit_test reinit_test.cpp)
target_link_libraries(reinit_test PRIVATE accrete::accrete)
foreach(ns 0 1)
  foreach(np 2 3)
    set(_name reinit_test.np${np})
    set(_env ${ACCRETE_MPI_ENV})
    if(ns EQUAL 1)
      set(_name ${_name}.node1)
      list(APPEND _env ACCRETE_NODE_SIZE=1)
    endif()
    add_test(NAME ${_name} COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${ACCRETE_MPIEXEC_PREFLAGS}
             $<TARGET_FILE:reinit_test>)
    set_tests_properties(${_name} PROPERTIES TIMEOUT 120 ENVIRONMENT "${_env}" PROCESSORS ${np} LABELS sanitize)
  endforeach()
endforeach()

# A dist_array part taller than INT_MAX rows over MPI: a put of the whole
# part goes in row pieces MPI can count (tests/tall_part_test.cpp). Needs
# 8 GiB of shared memory; run it alone.
add_executable(tall_part_test tall_part_test.cpp)
target_link_libraries(tall_part_test PRIVATE accrete::accrete)
add_test(NAME tall_part_test.np2.node1
  COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 ${ACCRETE_MPIEXEC_PREFLAGS} $<TARGET_FILE:tall_part_test>)
set_tests_properties(tall_part_test.np2.node1 PROPERTIES TIMEOUT 600 RUN_SERIAL TRUE
  ENVIRONMENT "${ACCRETE_MPI_ENV};ACCRETE_NODE_SIZE=1")
