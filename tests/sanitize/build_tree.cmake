# Configures and builds a sanitized tree (cmake/sanitize.cmake) of only the given targets:
#   cmake -DSOURCE=dir -DBINARY=dir -DSANITIZE=address|thread -DCXX=clang++ -DCC=clang
#         -DTARGETS="a;b" [-DOPT=-O0] [-DJOBS=n] [-DLAUNCHER=ccache] -P build_tree.cmake
# Used by the test command (tests/sanitize/CMakeLists.txt) and by ./build.sh fuzz. OPT (-O1 by
# default: what sanitizers and libFuzzer advise for long runs) with line tables; reports still
# name file:line. The test command's ASan tree is built at -O0: a third less compile time
# than -O1 for the Beast-heavy files, and its tests and bounded fuzzer runs are short. The
# build type is None, not empty: empty, the top-level CMakeLists.txt would make it
# RelWithDebInfo, whose -O2 -g came after these flags and won.
if(NOT JOBS)
  cmake_host_system_information(RESULT JOBS QUERY NUMBER_OF_LOGICAL_CORES)
endif()
if(NOT OPT)
  set(OPT -O1)
endif()
set(launcher)
if(LAUNCHER)
  set(launcher -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER} -DCMAKE_C_COMPILER_LAUNCHER=${LAUNCHER})
endif()
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${SOURCE} -B ${BINARY} -DCMAKE_BUILD_TYPE=None
    "-DCMAKE_CXX_FLAGS=${OPT} -gline-tables-only -DNDEBUG" "-DCMAKE_C_FLAGS=${OPT} -gline-tables-only -DNDEBUG"
    -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_C_COMPILER=${CC} -DLIVEHEAP_SANITIZE=${SANITIZE}
    -DLIVEHEAP_BUILD_TESTS=ON -DLIVEHEAP_BUILD_SAMPLES=OFF -DLIVEHEAP_INSTALL=OFF ${launcher}
  OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BINARY} -j ${JOBS} --target ${TARGETS}
  COMMAND_ERROR_IS_FATAL ANY)
