# Every public header (accrete/ and upcxx/) compiles on its own (and twice,
# to check its guard), after `using namespace std;`, as many programs write
# before their includes (a header's `x.rank < 0` then parses as
# std::rank<...>).
# accrete/detail/ headers are internal: they compile only behind a public
# header or with ACCRETE_INTERNAL_INCLUDE (the library's own sources).
# Whether a header compiles on its own does not depend on the MPI: an
# MPICH build leaves this to an Open MPI one (CI builds both), and checks
# the warnings of all headers in one unit (tests/consumer/strict).
if(NOT ACCRETE_MPI_FLAVOR STREQUAL "mpich")
  file(GLOB_RECURSE _accrete_public_headers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/include/accrete/*.hpp
       ${PROJECT_SOURCE_DIR}/include/upcxx/*.hpp)
  list(FILTER _accrete_public_headers EXCLUDE REGEX "/accrete/detail/")
  # The interop headers need their library: checked only when it was found.
  list(FILTER _accrete_public_headers EXCLUDE REGEX "/accrete/sparse/(petsc|hypre)\\.hpp$")
  set(_hdr_sources "")
  foreach(h ${_accrete_public_headers})
    file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR}/include ${h})
    string(MAKE_C_IDENTIFIER ${rel} id)
    set(src ${CMAKE_CURRENT_BINARY_DIR}/header_check/${id}.cpp)
    file(CONFIGURE OUTPUT ${src} CONTENT "namespace std {}\nusing namespace std;\n#include <${rel}>\n#include <${rel}>\n")
    list(APPEND _hdr_sources ${src})
  endforeach()
  add_library(accrete_header_check OBJECT ${_hdr_sources})
  target_link_libraries(accrete_header_check PRIVATE accrete::accrete)
  foreach(lib petsc hypre)
    if(TARGET accrete::${lib})
      set(src ${CMAKE_CURRENT_BINARY_DIR}/header_check/accrete_sparse_${lib}_hpp.cpp)
      file(CONFIGURE OUTPUT ${src} CONTENT "#include <accrete/sparse/${lib}.hpp>\n#include <accrete/sparse/${lib}.hpp>\n")
      add_library(accrete_header_check_${lib} OBJECT ${src})
      target_link_libraries(accrete_header_check_${lib} PRIVATE accrete::${lib})
    endif()
  endforeach()
endif()

# A user's file that includes an internal header directly must not compile,
# and must say why.
add_test(NAME internal_header_guard
  COMMAND ${CMAKE_CXX_COMPILER} -std=c++20 -fsyntax-only -I${PROJECT_SOURCE_DIR}/include
          ${CMAKE_CURRENT_SOURCE_DIR}/internal_include_check.cpp)
set_tests_properties(internal_header_guard PROPERTIES
  PASS_REGULAR_EXPRESSION "accrete/detail/ headers are internal to accrete")

# <mpi.h> stays behind the backend seam: only src/backend/mpi/ and the two
# public MPI-interop headers (team.hpp, matrix/process_grid.hpp) include it.
add_test(NAME mpi_header_seam
  COMMAND ${CMAKE_COMMAND} -DROOT=${PROJECT_SOURCE_DIR} -P ${PROJECT_SOURCE_DIR}/cmake/check_mpi_seam.cmake)
