# Every cpp, c and fortran code block of the README, docs/guide.md and docs/upcxx.md is
# extracted at configure time (tests/docs/extract_snippets.py), built as a
# program and run on 2 processes: a snippet that stops compiling or working
# fails the build or the test suite. Editing either file re-runs the
# extraction.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
set(_doc_files README.md docs/guide.md docs/upcxx.md)
set(_doc_out ${CMAKE_BINARY_DIR}/doc_snippets)
foreach(f ${_doc_files})
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${f})
endforeach()
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/docs/extract_snippets.py)
execute_process(COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/docs/extract_snippets.py ${_doc_out}
                        ${PROJECT_SOURCE_DIR} ${_doc_files}
                OUTPUT_VARIABLE _snippets RESULT_VARIABLE _rc)
if(_rc)
  message(FATAL_ERROR "extracting the documentation's code blocks failed")
endif()
string(REPLACE "\n" ";" _snippets "${_snippets}")
foreach(line ${_snippets})
  separate_arguments(parts UNIX_COMMAND "${line}")
  list(GET parts 0 name)
  list(GET parts 1 lang)
  list(GET parts 2 where)
  if(lang STREQUAL "fortran")
    if(NOT TARGET accrete_fortran)
      message(STATUS "accrete: ${where} is Fortran and no Fortran compiler was found: not built")
      continue()
    endif()
    add_executable(${name} ${_doc_out}/${name}.f90)
    target_link_libraries(${name} PRIVATE accrete::accrete_fortran)
  elseif(lang STREQUAL "c")
    add_executable(${name} ${_doc_out}/${name}.c)
    target_link_libraries(${name} PRIVATE accrete::accrete)
    set_target_properties(${name} PROPERTIES C_STANDARD 11 LINKER_LANGUAGE CXX)
  else()
    add_executable(${name} ${_doc_out}/${name}.cpp)
    target_link_libraries(${name} PRIVATE accrete::accrete)
  endif()
  add_test(NAME ${name}.np2
    COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 ${ACCRETE_MPIEXEC_PREFLAGS} $<TARGET_FILE:${name}>)
  set_tests_properties(${name}.np2 PROPERTIES TIMEOUT 120 ENVIRONMENT "${ACCRETE_MPI_ENV}" PROCESSORS 2
    WORKING_DIRECTORY ${_doc_out} LABELS docs)
endforeach()
