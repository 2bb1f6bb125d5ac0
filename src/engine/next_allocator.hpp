// The allocator underneath: the malloc family of whatever object follows liveheap in symbol
// order (glibc, jemalloc, tcmalloc, mimalloc), resolved once with dlsym(RTLD_NEXT). Every
// hook forwards to it, so a block only ever goes back to the allocator that made it.
// Thread-safety: the table is published once, before any hook uses it; until then each
// entry points at a resolver that fills the whole table (other threads wait for it).
#pragma once

#include <cstddef>

#include "shared.hpp"

namespace liveheap::engine {

struct NextAllocator {
  void* (*malloc)(std::size_t);
  void (*free)(void*);
  void* (*calloc)(std::size_t, std::size_t);
  void* (*realloc)(void*, std::size_t);
  void* (*memalign)(std::size_t, std::size_t);
  int (*posix_memalign)(void**, std::size_t, std::size_t);
  void* (*aligned_alloc)(std::size_t, std::size_t);
  void* (*valloc)(std::size_t);
  void* (*pvalloc)(std::size_t);
  std::size_t (*malloc_usable_size)(void*);
};

// Read by every hook: one indirect call, as the GOT call to glibc's __libc_* was.
// Hidden, so it is read PC-relative.
[[gnu::visibility("hidden")]] extern NextAllocator g_next;

// The file of the object whose malloc the hooks forward to ("" when unknown), e.g.
// "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2". Resolves the table if not yet done.
LIVEHEAP_SHARED const char* next_allocator_file() noexcept;

// True when the allocator underneath is glibc's own malloc (libc.so.6 defines it).
bool next_is_glibc() noexcept;

// True when this process's calls to malloc reach liveheap's malloc: liveheap's is the first
// definition in symbol order. A non-PIE executable's canonical PLT entry for malloc (which
// dlsym(RTLD_DEFAULT) returns) is not a definition: the calls go on through it to the first
// real one.
LIVEHEAP_SHARED bool hooks_installed() noexcept;

}  // namespace liveheap::engine
