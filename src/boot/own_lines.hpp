// Where liveheap's own lines go. liveheap writes into someone else's process, whose stderr
// may be read by a tool (a shell's $(cmd 2>&1), a test comparing output, a log shipper):
// - a configuration mistake (a bad LIVEHEAP_* value, a port this user may not bind, a
//   registry others could open) is one line on stderr, said by the process the user
//   started: the user asked for what cannot be, and would otherwise never learn why;
// - anything else (the address the admin server serves on) goes only where LIVEHEAP_LOG
//   says: `stderr`, or a file's absolute path (appended to, opened for each line: no
//   descriptor is held); unset, nowhere.
// Thread-safety: any thread; libc only, no lock, nothing allocated.
#pragma once

#include "shared.hpp"

namespace liveheap::boot {

// "liveheap: <line>" on stderr.
LIVEHEAP_SHARED void say_configuration_error(const char* line) noexcept;

// "liveheap: <line>" where LIVEHEAP_LOG says. A value that is neither `stderr` nor an
// absolute path is a configuration error, said once.
LIVEHEAP_SHARED void log_line(const char* line) noexcept;

}  // namespace liveheap::boot
