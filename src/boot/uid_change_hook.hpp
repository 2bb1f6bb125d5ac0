// The hooks on setuid, seteuid, setreuid and setresuid (uid_change_hook.cpp) run one
// function, set by the process's endpoint, just before the real call: a forked child that
// has not registered yet binds its socket there while it still has its parent's user ids.
// Thread-safety: any thread.
#pragma once

#include "shared.hpp"

namespace liveheap::boot {

// `fn` runs before every change of the user ids from now on (it must keep errno and be
// cheap after its first run); nullptr runs nothing.
LIVEHEAP_SHARED void set_before_uid_change(void (*fn)()) noexcept;
// The function set now, or nullptr.
LIVEHEAP_SHARED void (*before_uid_change_function() noexcept)();

}  // namespace liveheap::boot
