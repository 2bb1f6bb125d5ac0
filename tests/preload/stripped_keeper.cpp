// A program built without a symbol table (linked with -s), as Debian ships PostgreSQL's
// postmaster: its own functions keep 4 MiB, so their frames are module+offset names.
// Prints "READY" once it holds the blocks, then waits for its stdin to close.
#include <cstdlib>
#include <iostream>
#include <string>

namespace {

void* volatile g_kept[4];

[[gnu::noinline]] void* keep(std::size_t bytes) {
  void* p = std::malloc(bytes);
  asm volatile("" ::: "memory");  // a call, not a tail call: this frame stays on the stack
  return p;
}

[[gnu::noinline]] void fill() {
  for (void* volatile& slot : g_kept) slot = keep(1 << 20);
  asm volatile("" ::: "memory");
}

}  // namespace

int main() {
  fill();
  std::cout << "READY" << std::endl;
  std::string line;
  std::getline(std::cin, line);
  return 0;
}
