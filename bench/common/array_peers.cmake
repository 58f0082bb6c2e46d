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
