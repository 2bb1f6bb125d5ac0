// A program for the allocator tests: run unmodified under LD_PRELOAD="liveheap <allocator>".
// It keeps known bytes at known lines through every entry point (malloc, calloc, realloc,
// posix_memalign, aligned_alloc, memalign, operator new) and checks malloc_usable_size and
// alignment on each block, so a block handed to the wrong allocator shows as an error.
//
//   allocator_program   prints READY, waits for a line, allocates, prints one
//                       "SITE <file>:<line> <bytes> <count>" per site, then "USABLE ok" (or
//                       "USABLE bad <what>"), then ALLOCATED; waits for a line, frees all, exits.
// Not reformatted: an allocation and the __LINE__ that names it share a line or a fixed offset.
// clang-format off
#include <malloc.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace {

struct Site {
  int line;
  long bytes;
  long count;
};

struct Block {
  void* pointer;
  std::size_t size;
  std::size_t alignment;
  bool delete_array;
};

std::vector<Site> g_sites;
std::vector<Block> g_blocks;
std::string g_usable_error;

void keep(void* pointer, std::size_t size, std::size_t alignment = 0, bool delete_array = false) {
  if (pointer == nullptr) {
    g_usable_error = "null for " + std::to_string(size);
    return;
  }
  std::memset(pointer, 0x5a, size);  // the whole block is ours to write
  if (malloc_usable_size(pointer) < size)
    g_usable_error = "usable " + std::to_string(malloc_usable_size(pointer)) + " < " + std::to_string(size);
  if (alignment != 0 && reinterpret_cast<std::uintptr_t>(pointer) % alignment != 0)
    g_usable_error = "misaligned for " + std::to_string(alignment);
  g_blocks.push_back({pointer, size, alignment, delete_array});
}

[[gnu::noinline]] void allocate_known() {
  // 65536 small blocks: enough bytes for sampled mode's estimate to be tight.
  for (int i = 0; i < 65536; ++i) {
    keep(std::malloc(1000), 1000); if (i == 0) g_sites.push_back({__LINE__, 65536000, 65536});
  }
  for (int i = 0; i < 64; ++i) {
    keep(std::calloc(100, 1000), 100000); if (i == 0) g_sites.push_back({__LINE__, 6400000, 64});
  }
  for (int i = 0; i < 64; ++i) {
    void* grown = std::malloc(16);
    grown = std::realloc(grown, 300000); if (i == 0) g_sites.push_back({__LINE__, 19200000, 64});
    keep(grown, 300000);
  }
  for (int i = 0; i < 64; ++i) {
    void* aligned = nullptr;
    const int failed = posix_memalign(&aligned, 4096, 5000); if (i == 0) g_sites.push_back({__LINE__, 320000, 64});
    if (failed != 0) aligned = nullptr;
    keep(aligned, 5000, 4096);
  }
  for (int i = 0; i < 64; ++i) {
    keep(std::aligned_alloc(64, 6400), 6400, 64); if (i == 0) g_sites.push_back({__LINE__, 409600, 64});
  }
  for (int i = 0; i < 64; ++i) {
    keep(memalign(256, 7000), 7000, 256); if (i == 0) g_sites.push_back({__LINE__, 448000, 64});
  }
  for (int i = 0; i < 64; ++i) {
    keep(new char[9000], 9000, 0, true); if (i == 0) g_sites.push_back({__LINE__, 576000, 64});
  }
  for (int i = 0; i < 1000; ++i) {  // allocated and freed again: no growth
    void* transient = std::malloc(50000); std::memset(transient, 1, 50000); std::free(transient);
  }
  g_sites.push_back({__LINE__ - 2, 0, 0});
}

void free_all() {
  for (const Block& block : g_blocks) {
    if (block.delete_array) delete[] static_cast<char*>(block.pointer);
    else std::free(block.pointer);
  }
  g_blocks.clear();
}

}  // namespace

int main() {
  // stdin's buffer is static: glibc would malloc it at the first read, which may come after
  // READY (a baseline taken then would count those 4 KiB as the program's growth).
  static char stdin_buffer[BUFSIZ];
  std::setvbuf(stdin, stdin_buffer, _IOFBF, sizeof stdin_buffer);
  g_sites.reserve(64);
  g_blocks.reserve(70000);  // so keeping the blocks allocates nothing at the known lines
  std::string line;
  std::cout << "READY" << std::endl;
  if (!std::getline(std::cin, line)) return 1;
  allocate_known();
  for (const Site& site : g_sites)
    std::cout << "SITE " << __FILE__ << ":" << site.line << " " << site.bytes << " " << site.count << "\n";
  std::cout << "USABLE " << (g_usable_error.empty() ? "ok" : "bad " + g_usable_error) << "\n";
  std::cout << "ALLOCATED" << std::endl;
  std::getline(std::cin, line);
  free_all();
  return 0;
}
