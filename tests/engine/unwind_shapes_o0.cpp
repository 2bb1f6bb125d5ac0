// Frames as -O0 builds them (rbp-based CFA, every local on the stack).
#include "unwind_shapes.hpp"

namespace liveheap::engine::test {

void call_unoptimized(void (*next)(int), int level) {
  volatile int locals[8] = {level, 1, 2, 3, 4, 5, 6, 7};
  next(locals[0]);
  locals[1] = locals[1] + 1;  // keeps the frame live after the call
}

}  // namespace liveheap::engine::test
