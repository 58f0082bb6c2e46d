# cmake -P script: install accrete into a scratch prefix, then build and run
# what a user would build against it, each on 2 processes:
#  1. a C++-only CMake project (find_package(accrete 0.1)), choosing no MPI
#     itself: the package config must pick the MPI accrete was built with;
#  2. a project asking for accrete 99.0, which must fail to configure;
#  3. Makefile builds with only pkg-config: a C and a C++ program, and a
#     Fortran one when the Fortran module was installed.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
separate_arguments(pre UNIX_COMMAND "${PREFLAGS}")

function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "${what}: ok")
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

function(run_on_2 what prog)
  step("${what}" ${MPIEXEC} -n 2 ${pre} ${prog})
  string(REGEX MATCHALL "rank [01]: ok" oks "${step_output}")
  list(LENGTH oks n)
  if(NOT n EQUAL 2)
    message(FATAL_ERROR "${what}: expected 'rank 0: ok' and 'rank 1: ok', got:\n${step_output}")
  endif()
endfunction()

step("install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

# 1. C++-only CMake consumer.
step("configure the C++-only CMake consumer" ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/build
     -DCMAKE_PREFIX_PATH=${prefix})
step("build the C++-only CMake consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run_on_2("run the C++-only CMake consumer" ${WORK_DIR}/build/consumer)

# 2. The version file rejects a newer request.
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/version -B ${WORK_DIR}/version
                -DCMAKE_PREFIX_PATH=${prefix} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "version")
  message(FATAL_ERROR "find_package(accrete 99.0) should fail naming the version, got rc=${rc}:\n${err}")
endif()
message(STATUS "find_package(accrete 99.0) refused: ok")

# 3. pkg-config + make.
file(GLOB_RECURSE pcs ${prefix}/*/accrete.pc)
list(GET pcs 0 pc)
get_filename_component(pcdir ${pc} DIRECTORY)
set(fortran "")
if(EXISTS ${pcdir}/accrete-fortran.pc)
  set(fortran FORTRAN=1)
endif()
file(MAKE_DIRECTORY ${WORK_DIR}/make)
step("make the pkg-config consumers" ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pcdir}
     make -C ${WORK_DIR}/make -f ${SOURCE_DIR}/make/Makefile SRC=${SOURCE_DIR}/make ${fortran})
run_on_2("run the C consumer (pkg-config)" ${WORK_DIR}/make/c_consumer)
run_on_2("run the C++ consumer (pkg-config)" ${WORK_DIR}/make/cxx_consumer)
if(fortran)
  run_on_2("run the Fortran consumer (pkg-config)" ${WORK_DIR}/make/f_consumer)
endif()
