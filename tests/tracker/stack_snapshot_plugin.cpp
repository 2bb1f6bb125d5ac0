// A plugin that allocates: stack_snapshot_test.cpp loads it, keeps a block it made in a
// snapshot, unloads it, and checks that the snapshot is never named after other code.
#include <cstddef>
#include <cstdlib>

extern "C" [[gnu::visibility("default"), gnu::noinline]] void* plugin_allocate(std::size_t size) {
  void* p = std::malloc(size);
  asm volatile("" : : "r"(p) : "memory");  // no tail call: this frame stays on the stack
  return p;
}
