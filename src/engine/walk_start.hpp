// Where a stack walk starts: the code address, rsp and rbp of one instruction, read
// together so that the unwind rule of that address describes them.
// A hook reads them in its own frame and hands them down, so the walk begins at the hook
// (one rule step to its caller) instead of at the walk's own frame, below the engine's.
#pragma once

#include <cstdint>

namespace liveheap::engine {

struct WalkStart {
  std::uintptr_t pc = 0;  // 0: none given (the walk starts in its own frame)
  std::uintptr_t sp = 0;
  std::uintptr_t bp = 0;
};

// Reads this frame's registers. Always inlined, so that they are the caller's: its code
// address, its rsp, its rbp at that point.
[[gnu::always_inline]] inline WalkStart here() noexcept {
  WalkStart s;
  asm volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2" : "=r"(s.pc), "=r"(s.sp), "=r"(s.bp));
  return s;
}

}  // namespace liveheap::engine
