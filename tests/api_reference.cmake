# The C++ and C API reference (docs/api/Doxyfile, `./x docs`): Doxygen must
# find every public declaration documented. WARN_AS_ERROR makes an
# undocumented one (or a broken doc command) fail this test, naming it.
# `./x deps` installs Doxygen; without it the test is not registered.
find_program(ACCRETE_DOXYGEN doxygen)
if(ACCRETE_DOXYGEN)
  add_test(NAME api_reference_documented
    COMMAND ${CMAKE_COMMAND} -E env ACCRETE_DOCS_OUT=${CMAKE_BINARY_DIR}/api-reference-test
            ${ACCRETE_DOXYGEN} docs/api/Doxyfile
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(api_reference_documented PROPERTIES LABELS docs TIMEOUT 300)
else()
  message(STATUS "accrete: doxygen not found; the API reference check (api_reference_documented) is not registered")
endif()
