// The preload library starts the engine by itself (boot/start_plan.hpp) and loads the
// tracker only when the process's endpoint first needs it (boot/early_endpoint.hpp). Then
// the tracker takes up that session: the options as the start environment says them, and
// all that start() does but start the engine, whose tables (and the samples in them) are
// kept as they are.
// Thread-safety: as start().
#pragma once

#include <optional>

#include "liveheap/tracker.hpp"

namespace liveheap::tracker {

// options_from_environment's variables read with `lookup` instead of getenv (the preload
// library's copy of the environment at start: the host may call setenv meanwhile).
std::optional<Options> options_from(Mode default_mode, const char* (*lookup)(const char* name));

// start(options) for a session the engine already runs with the same settings.
void adopt_engine_session(const Options& options);

}  // namespace liveheap::tracker
