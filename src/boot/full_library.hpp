// The rest of liveheap (the tracker, the symbolizer, the reports and the endpoint's server:
// C++ with libstdc++, Boost and every table a report needs) is a library of its own,
// libliveheap_preload_full.so beside the preload library, loaded when first needed: at
// start only when a variable needs it, else when the endpoint has its first request or its
// recorders are due. A process that asks nothing never maps it, nor libstdc++ for it.
// Thread-safety: any thread; outside the hooks (dlopen allocates and takes the loader's lock).
#pragma once

#include "shared.hpp"

namespace liveheap::boot {

// The function `name` of the full library, loaded (RTLD_GLOBAL: its public API and its
// C++ runtime are the process's, as when it was all one library) on the first call; nullptr
// when it cannot be loaded, after one line on stderr saying why.
LIVEHEAP_SHARED void* full_library_function(const char* name) noexcept;

// Finds the full library's file now, for a later full_library_function: the preload
// library's path may be relative to the working directory at start, which the process
// may change before then (a daemon's chdir("/")). Call it before any other thread runs.
void locate_full_library() noexcept;

}  // namespace liveheap::boot
