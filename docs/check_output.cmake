# Runs PROGRAM, writes its stdout to ACTUAL and compares it with the committed
# EXPECTED file (the output a docs page includes). With -DUPDATE=ON it rewrites
# EXPECTED instead. Used by docs/CMakeLists.txt (tests docs.snippet.*).
get_filename_component(dir "${ACTUAL}" DIRECTORY)
file(MAKE_DIRECTORY "${dir}")
execute_process(COMMAND "${PROGRAM}" OUTPUT_FILE "${ACTUAL}" ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} failed (${rc}): ${err}")
endif()
if(UPDATE)
  configure_file("${ACTUAL}" "${EXPECTED}" COPYONLY)
  message(STATUS "updated ${EXPECTED}")
  return()
endif()
if(NOT EXISTS "${EXPECTED}")
  message(FATAL_ERROR "${EXPECTED} does not exist; create it with `cmake --build <dir> --target docs_update`")
endif()
file(READ "${EXPECTED}" want)
file(READ "${ACTUAL}" got)
if(NOT want STREQUAL got)
  message(FATAL_ERROR "the output of ${PROGRAM} differs from the committed ${EXPECTED}:\n"
          "  diff -u ${EXPECTED} ${ACTUAL}\n"
          "If the change is intended, run `cmake --build <dir> --target docs_update` and review the diff.")
endif()
