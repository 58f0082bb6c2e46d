# Launcher settings shared by tests, examples and benchmarks.
#   ACCRETE_MPIEXEC_PREFLAGS  flags placed before the program (oversubscription)
#   ACCRETE_MPI_ENV           environment entries every launch needs
set(ACCRETE_MPIEXEC_PREFLAGS "")
set(ACCRETE_MPI_ENV "")
if(ACCRETE_MPI_FLAVOR STREQUAL "openmpi")
  # Tests run up to 5 processes on 2 cores, often as root in CI containers.
  list(APPEND ACCRETE_MPIEXEC_PREFLAGS --oversubscribe)
  list(APPEND ACCRETE_MPI_ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
       OMPI_MCA_rmaps_base_oversubscribe=1)
endif()

# accrete_private_session_dirs(): call once in every directory that registers
# MPI tests. Open MPI 4.1's mpiexec creates <tmpdir>/ompi.<host>.<uid> at
# launch and removes it at exit when empty; two launches crossing there fail
# with "mkdir ... /tmp/ompi.<host>.0 ... File exists" (CI, stop 29, in the
# parallel CTest run). At the end of the directory, every test in it gets its
# own session base directory, so no two concurrent launches share one.
function(accrete_private_session_dirs)
  if(NOT ACCRETE_MPI_FLAVOR STREQUAL "openmpi")
    return()
  endif()
  get_property(deferred DIRECTORY PROPERTY ACCRETE_SESSION_DIRS_DEFERRED)
  if(NOT deferred)
    set_property(DIRECTORY PROPERTY ACCRETE_SESSION_DIRS_DEFERRED ON)
    cmake_language(DEFER CALL _accrete_apply_session_dirs)
  endif()
endfunction()
function(_accrete_apply_session_dirs)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(t IN LISTS tests)
    set(d ${CMAKE_BINARY_DIR}/mpi-session/${t})
    file(MAKE_DIRECTORY ${d})
    set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT OMPI_MCA_orte_tmpdir_base=${d})
  endforeach()
endfunction()

# accrete_add_mpi_test(<name> SOURCES <files...> NP <counts...>
#                      [NODE_SIZES <k...>] [LIBS <libs...>] [LABELS <l...>] [TIMEOUT <s>]
#                      [ENV <VAR=value...> SUFFIX <s>])
# Builds one GoogleTest binary and registers it once per process count (and
# once per pretend node size given in NODE_SIZES; 0 means "the real node").
# Calling it again for the same binary with ENV and SUFFIX registers the same
# runs again under extra environment settings (test names get .<SUFFIX>).
function(accrete_add_mpi_test name)
  cmake_parse_arguments(A "" "TIMEOUT;SUFFIX" "SOURCES;NP;NODE_SIZES;LIBS;LABELS;ENV" ${ARGN})
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 300)
  endif()
  if(NOT A_NODE_SIZES)
    set(A_NODE_SIZES 0)
  endif()
  accrete_private_session_dirs()
  if(NOT TARGET ${name})
    add_executable(${name} ${A_SOURCES})
    target_link_libraries(${name} PRIVATE accrete::accrete accrete_test_main ${A_LIBS})
  endif()
  set(sfx "")
  if(A_SUFFIX)
    set(sfx ".${A_SUFFIX}")
  endif()
  foreach(np ${A_NP})
    foreach(ns ${A_NODE_SIZES})
      set(env ${ACCRETE_MPI_ENV} ${A_ENV})
      if(ns EQUAL 0)
        set(tname ${name}.np${np}${sfx})
      else()
        set(tname ${name}.np${np}.node${ns}${sfx})
        list(APPEND env ACCRETE_NODE_SIZE=${ns})
      endif()
      add_test(NAME ${tname}
        COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${ACCRETE_MPIEXEC_PREFLAGS}
                $<TARGET_FILE:${name}>)
      set_tests_properties(${tname} PROPERTIES TIMEOUT ${A_TIMEOUT} ENVIRONMENT "${env}"
        PROCESSORS ${np} LABELS "${A_LABELS}")
    endforeach()
  endforeach()
endfunction()
