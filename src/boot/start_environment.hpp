// The LIVEHEAP_* variables and XDG_RUNTIME_DIR as they were when the process started,
// copied once before main. liveheap's own threads read these, never getenv: beside the
// host's setenv, getenv reads an environment being freed (git crashed so), and a forked
// child that clears its environment (nginx keeps only TZ) still meets its group.
// Thread-safety: capture once before any of liveheap's threads runs (the preload library's
// constructor does); then read from any thread.
#pragma once

#include "shared.hpp"

namespace liveheap::boot {

// Copies the variables. Idempotent: only the first call reads the environment.
LIVEHEAP_SHARED void capture_start_environment() noexcept;

// Whether the copy was made (without making it): in the full library, loaded later beside
// the host's threads, it always was (by the preload library's constructor), and code that
// would otherwise call getenv as it is loaded reads the copy instead.
LIVEHEAP_SHARED bool start_environment_captured() noexcept;

// The value `name` had at the capture, or nullptr when it was unset (or did not fit: the
// copies share 16 KiB; a too large value reads as unset and sets start_environment_overflowed).
LIVEHEAP_SHARED const char* start_env(const char* name) noexcept;
LIVEHEAP_SHARED bool start_environment_overflowed() noexcept;

// Calls fn(name, value) for each LIVEHEAP_* variable captured.
LIVEHEAP_SHARED void for_each_liveheap_variable(void (*fn)(void* ctx, const char* name, const char* value),
                                                void* ctx) noexcept;

}  // namespace liveheap::boot
