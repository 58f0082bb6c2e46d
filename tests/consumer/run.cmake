# cmake -P script: install accrete into a scratch prefix, then build and run
# what a user would build against it, each on 2 processes:
#  1. CMake projects (find_package(accrete 0.1)) in C++ only, C only,
#     Fortran only and all three, choosing no MPI themselves: the package
#     config must pick the MPI accrete was built with, for exactly the
#     languages each enabled; and a UPC++ program through accrete::upcxx;
#  2. a project asking for accrete 99.0, which must fail to configure;
#  3. Makefile builds with only pkg-config: a C, a C++ and a UPC++ program
#     (upcxx.pc), and a Fortran one when the Fortran module was installed;
#  4. every installed public header compiled with strict warnings as errors;
#  5. UPC++'s front doors: a UPC++ program built with the installed upcxx
#     wrapper (asking for C++17) and started with upcxx-run, one built by a
#     Makefile from upcxx-meta, one by find_package(UPCXX); upcxx-run
#     refusing a size it cannot give.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
separate_arguments(pre UNIX_COMMAND "${PREFLAGS}")

function(step what)
  string(TIMESTAMP t0 "%s")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  string(TIMESTAMP t1 "%s")
  math(EXPR dt "${t1} - ${t0}")
  message(STATUS "${what}: ok (${dt} s)")
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

# Runs a launch command (ARGN) of two processes; each must say it is ok.
function(expect_2_ok what)
  step("${what}" ${ARGN})
  string(REGEX MATCHALL "rank [01]: ok" oks "${step_output}")
  list(LENGTH oks n)
  if(NOT n EQUAL 2)
    message(FATAL_ERROR "${what}: expected 'rank 0: ok' and 'rank 1: ok', got:\n${step_output}")
  endif()
endfunction()
function(run_on_2 what prog)
  expect_2_ok("${what}" ${MPIEXEC} -n 2 ${pre} ${prog})
endfunction()

step("install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

# 1. CMake consumers, one per language mix (Fortran ones when the module
#    was installed).
file(GLOB_RECURSE _mods ${prefix}/*/accrete.mod)
function(cmake_consumer what dir)
  step("configure the ${what} CMake consumer" ${CMAKE_COMMAND} -S ${dir} -B ${WORK_DIR}/${what}
       -DCMAKE_PREFIX_PATH=${prefix})
  step("build the ${what} CMake consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/${what})
  foreach(prog ${ARGN})
    run_on_2("run ${prog} of the ${what} CMake consumer" ${WORK_DIR}/${what}/${prog})
  endforeach()
endfunction()
cmake_consumer(cxx-only ${SOURCE_DIR} consumer)
cmake_consumer(c-only ${SOURCE_DIR}/c c_consumer)
cmake_consumer(upcxx ${SOURCE_DIR}/upcxx upcxx_consumer)
cmake_consumer(upcxx-find ${SOURCE_DIR}/upcxx-find upcxx_find_consumer)
if(_mods)
  cmake_consumer(fortran-only ${SOURCE_DIR}/fortran f_consumer)
  cmake_consumer(mixed ${SOURCE_DIR}/mixed c_consumer cxx_consumer f_consumer)
endif()

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
run_on_2("run the UPC++ consumer (pkg-config upcxx)" ${WORK_DIR}/make/upcxx_consumer)
if(fortran)
  run_on_2("run the Fortran consumer (pkg-config)" ${WORK_DIR}/make/f_consumer)
endif()

# 4. Every installed public header under strict warnings as errors, all in
#    one translation unit, with g++ and clang++ (where installed; the MPICH
#    build leaves clang++ to the Open MPI one: what an MPI can change is
#    g++'s warnings). That each header compiles on its own is the build's
#    check (tests/headers.cmake); one unit per header here took 50-100 s
#    per compiler.
find_program(_gxx NAMES g++)
find_program(_gcc NAMES gcc)
find_program(_clangxx NAMES clang++)
find_program(_clang NAMES clang)
foreach(pair "g++;${_gxx};${_gcc}" "clang++;${_clangxx};${_clang}")
  list(GET pair 0 name)
  list(GET pair 1 cxx)
  list(GET pair 2 cc)
  if(NOT cxx OR NOT cc)
    message(STATUS "strict header check with ${name}: not run, the compiler is not installed")
    continue()
  endif()
  if(name STREQUAL "clang++" AND MPI_FLAVOR STREQUAL "mpich")
    message(STATUS "strict header check with ${name}: run in the Open MPI build only")
    continue()
  endif()
  step("configure the strict header check (${name})" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/strict
       -B ${WORK_DIR}/strict-${name} -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${cxx}
       -DCMAKE_C_COMPILER=${cc})
  step("compile every public header strictly (${name})" ${CMAKE_COMMAND} --build ${WORK_DIR}/strict-${name})
endforeach()

# 5. upcxx, upcxx-meta, upcxx-run.
set(bin ${prefix}/bin)
file(MAKE_DIRECTORY ${WORK_DIR}/upcxx-tools)
execute_process(COMMAND ${bin}/upcxx -O -std=c++17 -Wall -Wextra ${SOURCE_DIR}/upcxx/hello.cpp
                -o ${WORK_DIR}/upcxx-tools/hello RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc OR NOT err MATCHES "upcxx: -std=c[+][+]17 is below C[+][+]20")
  message(FATAL_ERROR "upcxx -std=c++17 should compile with C++20 and say so, got rc=${rc}:\n${out}\n${err}")
endif()
message(STATUS "compile with the upcxx wrapper (-std=c++17 raised to C++20, with a note): ok")
execute_process(COMMAND ${bin}/upcxx -threadmode=par -info RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc OR NOT out MATCHES "MPI: +${MPI_FLAVOR}" OR NOT out MATCHES "threadmode: par" OR NOT out MATCHES "LIBS: +[^\n]*-laccrete")
  message(FATAL_ERROR "upcxx -info should print the configuration, got rc=${rc}:\n${out}${err}")
endif()
message(STATUS "upcxx -info: ok")
# No launcher flags: upcxx-run oversubscribes (and runs as root) itself.
expect_2_ok("run it with upcxx-run" ${bin}/upcxx-run -n 2 -shared-heap 64MB ${WORK_DIR}/upcxx-tools/hello)
file(MAKE_DIRECTORY ${WORK_DIR}/upcxx-meta)
step("make the upcxx-meta consumer" make -C ${WORK_DIR}/upcxx-meta -f ${SOURCE_DIR}/upcxx-meta/Makefile
     SRC=${SOURCE_DIR} META=${bin}/upcxx-meta)
expect_2_ok("run the upcxx-meta consumer" ${bin}/upcxx-run -np 2 ${WORK_DIR}/upcxx-meta/upcxx_meta_consumer)
step("make the upcxx-meta consumer with c++ and PPFLAGS/LIBFLAGS alone" make -C ${WORK_DIR}/upcxx-meta
     -f ${SOURCE_DIR}/upcxx-meta/Makefile.plain SRC=${SOURCE_DIR} META=${bin}/upcxx-meta)
expect_2_ok("run the plain upcxx-meta consumer" ${bin}/upcxx-run -np 2 ${WORK_DIR}/upcxx-meta/upcxx_meta_plain)
# A share of each node's memory, as UPC++'s launcher takes it; beyond 100%
# it is refused, naming the value.
expect_2_ok("run it with upcxx-run -shared-heap 2%" ${bin}/upcxx-run -n 2 -shared-heap 2% ${WORK_DIR}/upcxx-tools/hello)
execute_process(COMMAND ${bin}/upcxx-run -n 2 -shared-heap 150% ${WORK_DIR}/upcxx-tools/hello
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "or a share of the node's memory from 1% to 100%, not '150%'")
  message(FATAL_ERROR "upcxx-run -shared-heap 150% should fail naming the value, got rc=${rc}:\n${err}")
endif()
message(STATUS "upcxx-run -shared-heap 150% refused: ok")
# UPC++'s placement options in the launcher's words: run on one node of
# this host, with backtraces asked for; then the command for 2 hosts.
expect_2_ok("run it with upcxx-run -N 1 -localhost -backtrace" ${bin}/upcxx-run -n 2 -N 1 -localhost -backtrace
            ${WORK_DIR}/upcxx-tools/hello)
execute_process(COMMAND ${bin}/upcxx-run -n 4 -N 2 -ssh-servers h1,h2 -backtrace -show ${WORK_DIR}/upcxx-tools/hello
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(MPI_FLAVOR STREQUAL "openmpi")
  set(_placed "--map-by ppr:2:node --host h1:2[\\]?,h2:2 ")
else()
  set(_placed "-ppn 2 -hosts h1[\\]?,h2 ")
endif()
if(rc OR NOT out MATCHES "^ACCRETE_BACKTRACE=1 " OR NOT out MATCHES "${_placed}")
  message(FATAL_ERROR "upcxx-run -N 2 -ssh-servers h1,h2 -backtrace -show: expected '${_placed}' and "
                      "ACCRETE_BACKTRACE=1, got rc=${rc}:\n${out}${err}")
endif()
message(STATUS "upcxx-run -N 2 -ssh-servers h1,h2 -backtrace in ${MPI_FLAVOR}'s words: ok")
