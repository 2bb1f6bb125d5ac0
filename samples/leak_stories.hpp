// The memory stories of samples/leaky_server, one function per route, each written the way
// the real bug is: three leaks, a bounded cache that only looks like one, and a route that
// cleans up. Each counts what its request left on the heap, the truth liveheap must show.
// Thread-safety: every function may be called from any thread; one mutex guards the state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "heap_accounting.hpp"

namespace leaky {

inline constexpr std::size_t kPlanCacheCapacity = 32;  // entries of /cache
inline constexpr std::size_t kMaxRows = 1'000'000;     // /convert?rows=
inline constexpr std::size_t kMaxScratchKiB = 65536;   // /ok?kb=

// What a request did. Each story marks two lines of leak_stories.cpp: "// route: <name>",
// the line that keeps the request's objects (its traceback frame carries all of `kept`),
// and "// site: <name>", the single line allocating the most (it carries `site`).
struct StoryResult {
  HeapUse kept;   // this request's net change of the heap, every line (negative: freed)
  HeapUse site;   // the part of `kept` allocated at the story's site line
  HeapUse held;   // what the story holds now, this request included
  bool hit = false;          // /cache: the shape was cached
  std::size_t entries = 0;   // /cache: entries now
  std::uint64_t checksum = 0;  // the work done, so that the compiler cannot skip it
};

// A per-request SDK client, kept in a registry nobody cleans (grows per request).
StoryResult create_api_client();
// A ~6.4 MiB figure per request, kept open in a registry keyed by request id.
StoryResult render_figure();
// A result converted into rows x 4 small heap blocks, kept alive by mistake.
// Throws std::invalid_argument unless 1 <= rows <= kMaxRows.
StoryResult convert_result(std::size_t rows);
// A plan compiled per input shape ("640x480") in an LRU cache of kPlanCacheCapacity: grows
// with distinct shapes, then plateaus. Throws std::invalid_argument for a malformed shape.
StoryResult lookup_plan(std::string_view shape);
// Builds a response with `kib` KiB of scratch and thousands of small strings, then frees it
// all. Throws std::invalid_argument unless 1 <= kib <= kMaxScratchKiB.
StoryResult well_behaved(std::size_t kib);
// The fix, deployed: drops every client, figure and conversion (not the bounded cache).
StoryResult release_leaks();

}  // namespace leaky
