# Fails when clang-format would change a C++ file of the project: the house format
# (.clang-format at the top; samples/ and the tests whose allocations and __LINE__ share
# lines say why they are left as written). Run by ctest as format_check:
#   cmake -DCLANG_FORMAT=clang-format-14 -DSOURCE=<checkout> -P tests/format_check.cmake
file(GLOB_RECURSE files LIST_DIRECTORIES false
  ${SOURCE}/src/*.cpp ${SOURCE}/src/*.hpp ${SOURCE}/src/*.h
  ${SOURCE}/include/*.hpp ${SOURCE}/include/*.h
  ${SOURCE}/tests/*.cpp ${SOURCE}/tests/*.hpp ${SOURCE}/tests/*.h
  ${SOURCE}/samples/*.cpp ${SOURCE}/samples/*.hpp)
list(FILTER files EXCLUDE REGEX "/node_modules/")
list(LENGTH files count)
if(count EQUAL 0)
  message(FATAL_ERROR "format_check: no C++ files under ${SOURCE}")
endif()
execute_process(COMMAND ${CLANG_FORMAT} --dry-run --Werror ${files}
  RESULT_VARIABLE status ERROR_VARIABLE errors)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "format_check: clang-format would change these lines "
    "(run: clang-format-14 -i <file>):\n${errors}")
endif()
message(STATUS "format_check: ${count} files as clang-format writes them")
