# cmake -DMODE=clean|compare -DDIR=<dir> -P cm_repro_files.cmake
# clean: empty DIR. compare: the files cm_repro_<type>_np<P>_node<k>.bin that
# the runs of cm_repro_test left (those that ran: `ctest -E` may leave some
# out; a run that failed stops this test through its fixture) must hold the
# same bytes, and at least two runs must have left one.
if(MODE STREQUAL "clean")
  file(REMOVE_RECURSE "${DIR}")
  file(MAKE_DIRECTORY "${DIR}")
  return()
endif()
foreach(type f64 f32 c64 c32)
  file(GLOB files "${DIR}/cm_repro_${type}_np*_node*.bin")
  list(LENGTH files n)
  if(n LESS 2)
    message(FATAL_ERROR "${type}: ${n} saved file(s) in ${DIR}; the comparison needs runs of cm_repro_test at two "
                        "or more process counts or node sizes")
  endif()
  list(GET files 0 first)
  foreach(f ${files})
    execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files "${first}" "${f}" RESULT_VARIABLE differ)
    if(differ)
      message(FATAL_ERROR "${f} differs from ${first}: assembly is not reproducible across these runs")
    endif()
  endforeach()
  message(STATUS "${type}: the ${n} runs saved identical bytes")
endforeach()
