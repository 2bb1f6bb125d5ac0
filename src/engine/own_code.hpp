// The engine's own code: every function that can be on the stack between a hook's entry
// (malloc & co., operator new/delete) and the stack walk lives in one ELF section,
// liveheap_text, and the walk drops the return addresses that fall in it. A section, not
// the whole object the engine is linked into: a white-box test links the engine's objects
// into its own executable, and its frames must stay in the stacks it checks.
// GCC neither hot/cold-splits nor moves to .text.unlikely a function with a section
// attribute (tests/engine/own_code_section_test.cmake checks the built binaries).
#pragma once

#include <cstdint>

// On every function on the path from a hook to the walk (docs/ARCHITECTURE.md, hot-path
// rules). A function that is only called from that path and returns before the walk (a
// table lookup, the reentrancy guard) needs none.
#define LIVEHEAP_OWN_CODE [[gnu::section("liveheap_text")]]

// The linker's bounds of the section in the object this code is linked into (the library,
// the preload library, or a test executable): each object has its own.
extern "C" {
[[gnu::visibility("hidden")]] extern const char __start_liveheap_text[];
[[gnu::visibility("hidden")]] extern const char __stop_liveheap_text[];
}

namespace liveheap::engine {

// Two PC-relative address computations, no load: cheap enough for every frame of a walk.
inline bool in_own_section(std::uintptr_t address) noexcept {
  return address - reinterpret_cast<std::uintptr_t>(__start_liveheap_text) <
         reinterpret_cast<std::uintptr_t>(__stop_liveheap_text) -
             reinterpret_cast<std::uintptr_t>(__start_liveheap_text);
}

}  // namespace liveheap::engine
