// Stack shapes for the unwinder tests: call chains built from frames of every kind the
// compiler emits (rsp- and rbp-based CFA, alloca, realigned, -O0, through libstdc++ and
// glibc callbacks), each ending in a capture by all three unwinders from one call site.
#pragma once

#include <cstdint>
#include <vector>

namespace liveheap::engine::test {

// The same stack as each unwinder saw it (own frames dropped). `frame_rules_walked` is
// false when the rule walk needed another unwinder for this stack. With `from_here_taken`,
// `from_here` is capture_stack() begun at capture_all's own registers (a WalkStart, as a
// hook begins it), so without capture_all's call site, and `from_here_hash` its hash.
struct Captured {
  std::vector<std::uintptr_t> frame_rules, libunwind, libgcc, from_here;
  std::uint64_t from_here_hash = 0;
  bool frame_rules_walked = false;
  bool from_here_taken = false;
};

// Captures the caller's stack three times from one call site (and, `from_here`, once more
// from its own frame).
Captured capture_all(std::uint32_t max_frames = 128, bool from_here = false);

// Frame kinds, one per level of a chain.
enum class Shape : int {
  plain,
  alloca_frame,
  realigned,
  unoptimized,
  std_function,
  std_sort,
  qsort_callback,
  kCount
};

// Calls down through `shapes` (outermost first), then capture_all at the bottom.
Captured capture_through(const std::vector<Shape>& shapes, std::uint32_t max_frames = 128);
// The same, with `from_here` taken too.
Captured capture_through_from_here(const std::vector<Shape>& shapes, std::uint32_t max_frames = 128);

// Unoptimized frames (compiled at -O0 in their own file): calls `next(level)`.
void call_unoptimized(void (*next)(int), int level);

}  // namespace liveheap::engine::test
