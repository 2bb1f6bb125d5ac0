# The shared library's exported C++ API carries its version (include/liveheap/export.hpp):
# every exported liveheap:: symbol is in liveheap::v1 or in one of the internal namespaces,
# the API's known entry points are there as liveheap::v1::..., and the allocator hooks stay
# plain C symbols. Run with -DNM=<nm> -DLIBRARY=<libliveheap.so>.
execute_process(COMMAND "${NM}" -D -C --defined-only "${LIBRARY}"
  RESULT_VARIABLE status OUTPUT_VARIABLE symbols ERROR_VARIABLE err)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${NM} failed (${status}): ${err}")
endif()
string(REPLACE ";" "," symbols "${symbols}")  # demangled names may hold ';' (lists below)
string(REPLACE "\n" ";" lines "${symbols}")

set(internal engine report symbolize tracker peak web)
list(JOIN internal "|" internal_alternatives)
set(versioned 0)
set(unversioned "")
foreach(line IN LISTS lines)
  # "<address> <type> <name>"
  if(NOT line MATCHES "^[0-9a-f]+ [A-Za-z] (.*)$")
    continue()
  endif()
  set(name "${CMAKE_MATCH_1}")
  if(name MATCHES "^liveheap::v1::")
    math(EXPR versioned "${versioned} + 1")
  elseif(name MATCHES "^liveheap::" AND NOT name MATCHES "^liveheap::(${internal_alternatives})::")
    string(APPEND unversioned "\n  ${name}")
  endif()
endforeach()
if(unversioned)
  message(FATAL_ERROR "exported outside liveheap::v1 (declare it between LIVEHEAP_API_BEGIN/END, "
                      "or in an internal namespace):${unversioned}")
endif()

foreach(expected
    "liveheap::v1::start(liveheap::v1::Options const&)"
    "liveheap::v1::take_snapshot()"
    "liveheap::v1::Snapshot::statistics(liveheap::v1::KeyType, bool) const"
    "liveheap::v1::to_json[abi:cxx11](liveheap::v1::Report const&, unsigned long)"
    "liveheap::v1::report_from_json(std::basic_string_view<char, std::char_traits<char> >)"
    "liveheap::v1::to_json[abi:cxx11](liveheap::v1::Statistic const&, liveheap::v1::KeyType)"
    "liveheap::v1::http::Handler::Handler(liveheap::v1::http::Config)"
    "liveheap::v1::RequestScope::RequestScope(std::basic_string_view<char, std::char_traits<char> >)"
    "liveheap::v1::settings::parse_whole(")
  string(FIND "${symbols}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${LIBRARY} does not export ${expected}")
  endif()
endforeach()
foreach(hook malloc free calloc realloc liveheap_request_begin liveheap_request_end)
  if(NOT "\n${symbols}" MATCHES "\n[0-9a-f]+ [TW] ${hook}\n")
    message(FATAL_ERROR "${LIBRARY} does not export the C hook ${hook}")
  endif()
endforeach()
message("${versioned} exported symbols in liveheap::v1, none of the API outside it")
