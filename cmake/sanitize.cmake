# LIVEHEAP_SANITIZE=address|thread: this tree is built under a sanitizer (ASan+UBSan, or TSan),
# as tests/sanitize/CMakeLists.txt does for the test command. The sanitizer's runtime is the
# process's malloc then, so the library is built without liveheap's malloc hooks (src/engine):
# tracing cannot start in such a tree, and only tests that need no tracing run there. With
# clang and address, the code also carries libFuzzer's coverage and tests/fuzz is built.
set(LIVEHEAP_SANITIZE "" CACHE STRING "address (ASan+UBSan) or thread (TSan); empty for none")
set_property(CACHE LIVEHEAP_SANITIZE PROPERTY STRINGS "" address thread)
if(LIVEHEAP_SANITIZE STREQUAL "address")
  set(liveheap_sanitizers -fsanitize=address,undefined)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    add_compile_options(-fsanitize=fuzzer-no-link)
  endif()
elseif(LIVEHEAP_SANITIZE STREQUAL "thread")
  set(liveheap_sanitizers -fsanitize=thread)
elseif(LIVEHEAP_SANITIZE)
  message(FATAL_ERROR "LIVEHEAP_SANITIZE must be address or thread, got '${LIVEHEAP_SANITIZE}'")
endif()
if(LIVEHEAP_SANITIZE)
  add_compile_options(${liveheap_sanitizers} -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_link_options(${liveheap_sanitizers})
endif()
