// The allocator underneath liveheap (glibc, jemalloc, tcmalloc, mimalloc) and its own view
// of memory: what it serves, what it holds, what it could give back. It is asked through
// its own API, found by symbol in the object that serves malloc.
// Thread-safety: functions of the process, callable from any thread; call them under an
// IgnoreScope (what they allocate is liveheap's own).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "liveheap/export.hpp"

LIVEHEAP_API_BEGIN

struct AllocatorInfo {
  std::string name;  // "glibc", "jemalloc", "tcmalloc", "mimalloc", or "unknown"
  std::string file;  // the object that serves malloc
  // That allocator's own figures, in bytes, in its own names (e.g. jemalloc's "allocated",
  // "active", "resident", "retained", "mapped").
  std::vector<std::pair<std::string, std::int64_t>> figures;
  // glibc only: its mallinfo2() locks each arena while it counts the free chunks, so it is
  // read fresh at most once per 1000x what its last read took, and `figures` may be those
  // of an earlier read: figures_age_ms is their age (0 or a few ms when read for this
  // call), read_ms what that read took (the time the host's malloc waited).
  std::int64_t figures_age_ms = 0;
  double read_ms = 0;
};
AllocatorInfo read_allocator() noexcept;
// Its name alone (AllocatorInfo::name), found once: no figures are asked for.
const std::string& allocator_name() noexcept;

// Asks the allocator to hand free memory back to the kernel: malloc_trim(0) for glibc,
// a purge of every arena for jemalloc, ReleaseFreeMemory for tcmalloc, mi_collect(true)
// for mimalloc. Returns what was asked, e.g. "malloc_trim(0) released memory".
std::string release_free_memory();

LIVEHEAP_API_END
