# libFuzzer target for the deserializer. The library is built by the chosen
# MPI compiler wrapper (usually GCC), which has no libFuzzer, so the fuzzer
# (header-only code under test) is compiled by clang++ directly when one with
# the fuzzer runtime is installed; otherwise it is skipped. The test runs it
# for a bounded number of inputs from a seed corpus of valid messages
# (written by tests/fuzz/make_seeds.cpp with the real serializer).
find_program(ACCRETE_CLANGXX NAMES clang++ clang++-16 clang++-15 clang++-14)
if(ACCRETE_CLANGXX)
  set(_fz_bin ${CMAKE_CURRENT_BINARY_DIR}/deserialize_fuzz.bin)
  set(_fz_flags -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
                -I${PROJECT_SOURCE_DIR}/include)
  execute_process(COMMAND ${ACCRETE_CLANGXX} ${_fz_flags} -x c++ -o ${CMAKE_CURRENT_BINARY_DIR}/fuzz_probe -
                  INPUT_FILE ${PROJECT_SOURCE_DIR}/tests/fuzz/probe.cpp
                  RESULT_VARIABLE _fz_ok OUTPUT_QUIET ERROR_QUIET)
  if(_fz_ok EQUAL 0)
    add_custom_command(OUTPUT ${_fz_bin}
      COMMAND ${ACCRETE_CLANGXX} ${_fz_flags} -o ${_fz_bin} ${PROJECT_SOURCE_DIR}/tests/fuzz/deserialize_fuzz.cpp
      DEPENDS ${PROJECT_SOURCE_DIR}/tests/fuzz/deserialize_fuzz.cpp ${PROJECT_SOURCE_DIR}/include/accrete/serialization.hpp
              ${PROJECT_SOURCE_DIR}/include/accrete/detail/packet_format.hpp
              ${PROJECT_SOURCE_DIR}/include/accrete/view.hpp ${PROJECT_SOURCE_DIR}/include/accrete/error.hpp
      COMMENT "clang++ libFuzzer: deserialize_fuzz" VERBATIM)
    add_custom_target(deserialize_fuzz_build ALL DEPENDS ${_fz_bin})
    add_executable(fuzz_make_seeds fuzz/make_seeds.cpp)
    target_link_libraries(fuzz_make_seeds PRIVATE accrete::accrete)
    set(_fz_corpus ${CMAKE_CURRENT_BINARY_DIR}/fuzz_corpus)
    add_test(NAME deserialize_fuzz
      COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=1
              sh -c "rm -rf '${_fz_corpus}' && mkdir -p '${_fz_corpus}' && '$<TARGET_FILE:fuzz_make_seeds>' '${_fz_corpus}' && '${_fz_bin}' -runs=300000 -max_len=4096 -seed=1 '${_fz_corpus}'")
    set_tests_properties(deserialize_fuzz PROPERTIES TIMEOUT 300 LABELS fuzz)
  else()
    message(STATUS "accrete: ${ACCRETE_CLANGXX} lacks the libFuzzer runtime; deserialize_fuzz not built")
  endif()
else()
  message(STATUS "accrete: no clang++; deserialize_fuzz not built")
endif()
