// The preload library reads the LIVEHEAP_* variables once, at start
// (boot/start_environment.hpp); the tracker in the full library reads that copy.
// Thread-safety: a pure function of what `lookup` returns.
#pragma once

#include <optional>

#include "liveheap/tracker.hpp"

namespace liveheap::tracker {

// options_from_environment's variables read with `lookup` instead of getenv (the preload
// library's copy of the environment at start: the host may call setenv meanwhile).
std::optional<Options> options_from(Mode default_mode, const char* (*lookup)(const char* name));

}  // namespace liveheap::tracker
