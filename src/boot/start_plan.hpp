// What the preload library does as the process loads it, decided from the LIVEHEAP_*
// variables of the start environment: start the engine itself (the common case: nothing
// else is loaded), or load the full library at once because a variable needs its parsers
// or its server (it then starts everything, and reports a bad value as it always has).
// Thread-safety: a pure function of the start environment.
#pragma once

#include "early_endpoint.hpp"
#include "engine.hpp"

namespace liveheap::boot {

struct StartPlan {
  // Load the rest of liveheap now and let it start: a value this plan could not read (it
  // may be bad: the full library names it), LIVEHEAP_PLUMBING, or an endpoint the early
  // endpoint cannot serve alone (an address to resolve or to judge, a token, allowed
  // hosts, a prefix, a callsite count: the endpoint's settings).
  bool full_library = false;
  // Otherwise the engine's session (mode off: none),
  engine::Settings engine;
  // and, with LIVEHEAP_ADDR, the early endpoint's address.
  bool endpoint = false;
  EarlyAddress address;
};

StartPlan plan_start() noexcept;

}  // namespace liveheap::boot
