# ctest driver: `cmake -DMODE=build|run -DSRC=<tests/fuzz> -DBIN=<build dir> [-DTARGET=x -DRUNS=n
# -DSECONDS=s] -P`. A run: RUNS inputs from seed 1 (mostly the same inputs for the same code: the
# coverage feedback still varies a little between processes), SECONDS a bound on the whole.
if(MODE STREQUAL "build")
  find_program(CCACHE ccache)
  set(launcher "")
  if(CCACHE)
    set(launcher -DCMAKE_CXX_COMPILER_LAUNCHER=${CCACHE})
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${SRC} -B ${BIN} -G Ninja -DCMAKE_CXX_COMPILER=${CLANGXX} ${launcher}
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "configuring the fuzz project failed")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${BIN} -j2 RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "building the fuzz targets failed")
  endif()
else()
  # A fresh corpus each run, seeded from tests/fuzz/seeds/<target> (read-only).
  file(REMOVE_RECURSE ${BIN}/corpus/${TARGET})
  file(MAKE_DIRECTORY ${BIN}/corpus/${TARGET})
  if(NOT DEFINED RUNS)
    set(RUNS -1)
  endif()
  execute_process(COMMAND ${BIN}/fuzz_${TARGET} -seed=1 -runs=${RUNS} -max_total_time=${SECONDS} -timeout=10
                          -rss_limit_mb=2048
                          -print_final_stats=1 ${BIN}/corpus/${TARGET} ${SRC}/seeds/${TARGET}
                  WORKING_DIRECTORY ${BIN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "fuzz_${TARGET} found a crash, leak or timeout (exit ${rc}); see the crash-* file in ${BIN}")
  endif()
endif()
