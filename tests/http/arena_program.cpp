// A program with an allocator of its own, for LIVEHEAP_PLUMBING end to end: every block
// comes from arena_allocate(), so without the variable key=line names the arena's malloc
// line; naming the arena as plumbing must name the two callers' lines instead.
//   prints READY, waits for a line on stdin, allocates, prints one
//   "SITE <file>:<line> <bytes> <count>" per caller and ALLOCATED, waits for stdin to close.
// Not reformatted: an allocation and the __LINE__ that names it share a line or a fixed offset.
// clang-format off
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

namespace {

std::vector<void*> g_kept;  // reserved before READY: only the arena allocates after it

[[gnu::noinline]] void* arena_allocate(std::size_t bytes) {
  void* block = std::malloc(bytes);
  asm volatile("" : : "r"(block) : "memory");
  return block;
}
constexpr int kArenaLine = __LINE__ - 4;

[[gnu::noinline]] void make_small_objects() {
  for (int i = 0; i < 10; ++i) g_kept.push_back(arena_allocate(1000));
}
constexpr int kSmallLine = __LINE__ - 2;

[[gnu::noinline]] void make_big_buffers() {
  for (int i = 0; i < 3; ++i) g_kept.push_back(arena_allocate(100000));
}
constexpr int kBigLine = __LINE__ - 2;

}  // namespace

int main() {
  // stdin's buffer is static: glibc would malloc it at the first read, which may come after
  // READY (a baseline taken then would count those 4 KiB as the program's growth).
  static char stdin_buffer[BUFSIZ];
  std::setvbuf(stdin, stdin_buffer, _IOFBF, sizeof stdin_buffer);
  g_kept.reserve(64);
  std::printf("READY\n");
  std::fflush(stdout);
  std::string line;
  if (!std::getline(std::cin, line)) return 1;
  make_small_objects();
  make_big_buffers();
  std::printf("SITE %s:%d %d %d\n", __FILE__, kSmallLine, 10 * 1000, 10);
  std::printf("SITE %s:%d %d %d\n", __FILE__, kBigLine, 3 * 100000, 3);
  std::printf("SITE %s:%d %d %d\n", __FILE__, kArenaLine, 10 * 1000 + 3 * 100000, 13);
  std::printf("ALLOCATED\n");
  std::fflush(stdout);
  while (std::getline(std::cin, line)) {
  }
  for (void* block : g_kept) std::free(block);
}
