# accrete_array_bench(target source): a dist_array benchmark racing accrete,
# plain MPI RMA and -- when Debian's Global Arrays for this MPI is installed
# (libglobalarrays-dev, libarmci-mpi-dev) -- GA. GA is a benchmark peer
# only: nothing else links it.
find_library(ACCRETE_GA_LIBRARY NAMES ga-${ACCRETE_MPI_FLAVOR})
find_library(ACCRETE_ARMCI_LIBRARY NAMES armci-${ACCRETE_MPI_FLAVOR})
find_library(ACCRETE_GFORTRAN_LIBRARY NAMES gfortran libgfortran.so.5)
find_library(ACCRETE_CBLAS_LIBRARY NAMES openblas cblas blas REQUIRED)
if(ACCRETE_GA_LIBRARY AND ACCRETE_ARMCI_LIBRARY AND ACCRETE_GFORTRAN_LIBRARY)
  set(ACCRETE_BENCH_HAVE_GA ON)
else()
  set(ACCRETE_BENCH_HAVE_GA OFF)
endif()
function(accrete_array_bench target source)
  add_executable(${target} ${source})
  target_link_libraries(${target} PRIVATE accrete::accrete ${ACCRETE_CBLAS_LIBRARY})
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/bench/common)
  if(ACCRETE_BENCH_HAVE_GA)
    target_compile_definitions(${target} PRIVATE ACCRETE_BENCH_GA=1)
    target_link_libraries(${target} PRIVATE ${ACCRETE_GA_LIBRARY} ${ACCRETE_ARMCI_LIBRARY}
                          ${ACCRETE_SCALAPACK_LIBRARY} ${LAPACK_LIBRARIES} ${ACCRETE_GFORTRAN_LIBRARY})
  endif()
endfunction()

# accrete_array_bench_check(target): the tiny preset at P = 2 as a CTest --
# it checks that every implementation computes the same, exact numbers
# (the benchmark exits non-zero otherwise), not speed.
function(accrete_array_bench_check target)
  if(NOT ACCRETE_BUILD_TESTS)
    return()
  endif()
  accrete_private_session_dirs()
  set(env ${ACCRETE_MPI_ENV})
  # ARMCI-MPI over MPICH 4.0 puts elements in the wrong place with
  # MPI_Win_allocate'd windows.
  if(ACCRETE_MPI_FLAVOR STREQUAL "mpich")
    list(APPEND env ARMCI_USE_WIN_ALLOCATE=0)
  endif()
  add_test(NAME ${target}_checks.np2
           COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 ${ACCRETE_MPIEXEC_PREFLAGS}
                   $<TARGET_FILE:${target}> --preset tiny --reps 1)
  set_tests_properties(${target}_checks.np2 PROPERTIES TIMEOUT 300 ENVIRONMENT "${env}" PROCESSORS 2
                       PASS_REGULAR_EXPRESSION "results verified")
endfunction()
