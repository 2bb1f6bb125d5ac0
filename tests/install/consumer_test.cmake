# Installs the build tree into WORK_DIR/prefix (the preload libraries and the symbolizer in
# lib/ with libliveheap.so), builds the consumer against it, runs it; then
# again with nlohmann_json hidden from the consumer: liveheap::liveheap must not need it.
file(REMOVE_RECURSE "${WORK_DIR}")
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "failed (${status}): ${ARGN}\n${out}\n${err}")
  endif()
  message("${out}")
endfunction()
run(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${WORK_DIR}/prefix")
# The preload library, its full part and the symbolizer, side by side: each is looked for
# beside the one that needs it (src/boot/full_library.hpp, src/symbolize/symbolizer_process.hpp).
foreach(file libliveheap_preload.so libliveheap_preload_full.so liveheap-symbolizer)
  if(NOT EXISTS "${WORK_DIR}/prefix/lib/${file}")
    message(FATAL_ERROR "cmake --install left out lib/${file}")
  endif()
endforeach()
run(${CMAKE_COMMAND} -S "${CONSUMER_DIR}" -B "${WORK_DIR}/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
    "-DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix")
run(${CMAKE_COMMAND} --build "${WORK_DIR}/build")
run(${CMAKE_COMMAND} -E env "LD_LIBRARY_PATH=${WORK_DIR}/prefix/lib" "${WORK_DIR}/build/consumer")
run(${CMAKE_COMMAND} -E env "LD_LIBRARY_PATH=${WORK_DIR}/prefix/lib" "${WORK_DIR}/build/consumer_json")
run(${CMAKE_COMMAND} -S "${CONSUMER_DIR}" -B "${WORK_DIR}/build-nojson"
    -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix" -DWITH_JSON=OFF
    -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON)
run(${CMAKE_COMMAND} --build "${WORK_DIR}/build-nojson")
run(${CMAKE_COMMAND} -E env "LD_LIBRARY_PATH=${WORK_DIR}/prefix/lib" "${WORK_DIR}/build-nojson/consumer")
file(REMOVE_RECURSE "${WORK_DIR}")
