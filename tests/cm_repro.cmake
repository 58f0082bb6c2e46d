# Reproducible assembly (issue 13). Every run saves its committed matrices
# into cm_repro/ as cm_repro_<type>_np<P>_node<k>.bin; cm_repro_compare then
# checks that all of them hold the same bytes (across P, grids, blocks,
# strategies, node sizes and threads; within one run the test compares its
# own configurations). cm_repro_clean empties the directory first.
set(ACCRETE_REPRO_DIR ${CMAKE_CURRENT_BINARY_DIR}/cm_repro)
set(ACCRETE_REPRO_RUNS np1 np2 np3 np4 np5 np4.node1 np3.node2 np5.node2 np3.node2.baseline_simd)
accrete_add_mpi_test(cm_repro_test SOURCES cm_repro_test.cpp NP 1 2 3 4 5 LABELS sanitize TIMEOUT 300
                     ENV ACCRETE_REPRO_DIR=${ACCRETE_REPRO_DIR})
accrete_add_mpi_test(cm_repro_test NP 4 NODE_SIZES 1 LABELS sanitize TIMEOUT 300 ENV ACCRETE_REPRO_DIR=${ACCRETE_REPRO_DIR})
accrete_add_mpi_test(cm_repro_test NP 3 5 NODE_SIZES 2 LABELS sanitize TIMEOUT 300 ENV ACCRETE_REPRO_DIR=${ACCRETE_REPRO_DIR})
# The kernels' baseline build (ACCRETE_SIMD=baseline, src/assembly/simd.hpp)
# must save the same bytes as the AVX2 build the other runs use.
accrete_add_mpi_test(cm_repro_test NP 3 NODE_SIZES 2 LABELS sanitize TIMEOUT 300 SUFFIX baseline_simd
                     ENV ACCRETE_REPRO_DIR=${ACCRETE_REPRO_DIR} ACCRETE_SIMD=baseline)
target_include_directories(cm_repro_test PRIVATE ${PROJECT_SOURCE_DIR}/src)
add_test(NAME cm_repro_clean COMMAND ${CMAKE_COMMAND} -DMODE=clean -DDIR=${ACCRETE_REPRO_DIR}
         -P ${CMAKE_CURRENT_SOURCE_DIR}/scripts/cm_repro_files.cmake)
add_test(NAME cm_repro_compare COMMAND ${CMAKE_COMMAND} -DMODE=compare -DDIR=${ACCRETE_REPRO_DIR} -P ${CMAKE_CURRENT_SOURCE_DIR}/scripts/cm_repro_files.cmake)
set_tests_properties(cm_repro_clean PROPERTIES FIXTURES_SETUP cm_repro_dir LABELS sanitize)
set_tests_properties(cm_repro_compare PROPERTIES FIXTURES_REQUIRED cm_repro_files LABELS sanitize)
foreach(run ${ACCRETE_REPRO_RUNS})
  set_tests_properties(cm_repro_test.${run} PROPERTIES FIXTURES_REQUIRED cm_repro_dir FIXTURES_SETUP cm_repro_files)
endforeach()
# Its threaded configurations (2 and 3 updating threads) in CI's
# ThreadSanitizer pass; files go to the test's working directory, apart
# from the comparison above.
accrete_add_mpi_test(cm_repro_test NP 2 NODE_SIZES 1 ENV GTEST_FILTER=Reproducible.* SUFFIX threads LABELS tsan
                     TIMEOUT 600)
