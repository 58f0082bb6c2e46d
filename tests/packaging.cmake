# Installs the built library into a scratch prefix and builds what users
# build against it: CMake (C++ only), pkg-config + make (C, C++, Fortran).
add_test(NAME install_and_consume
  COMMAND ${CMAKE_COMMAND}
    -DBUILD_DIR=${CMAKE_BINARY_DIR}
    -DSOURCE_DIR=${CMAKE_CURRENT_SOURCE_DIR}/consumer
    -DWORK_DIR=${CMAKE_BINARY_DIR}/consumer-test
    -DMPIEXEC=${MPIEXEC_EXECUTABLE}
    "-DPREFLAGS=${ACCRETE_MPIEXEC_PREFLAGS}"
    -DMPI_FLAVOR=${ACCRETE_MPI_FLAVOR}
    -P ${CMAKE_CURRENT_SOURCE_DIR}/consumer/run.cmake)
set_tests_properties(install_and_consume PROPERTIES TIMEOUT 300 ENVIRONMENT "${ACCRETE_MPI_ENV}")
