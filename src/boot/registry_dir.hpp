// The private registry's directories and the port holder's record, in libc-only code (the
// preload library registers a process before the rest of liveheap is loaded; http's
// registry.hpp wraps these for the full library and describes the layout): a directory
// only the user can open ($XDG_RUNTIME_DIR/liveheap, else /tmp/liveheap-$EUID, or the
// first of "<it>.1" to "<it>.8" that is or can be made so), one sub-directory per
// LIVEHEAP_ADDR, one "<pid>.sock" per process, and "holder", a symbolic link to the pid
// of the process that holds the port.
// Thread-safety: pure functions over the file system; XDG_RUNTIME_DIR is the one at start
// (start_environment.hpp).
#pragma once

#include <sys/types.h>
#include <sys/un.h>

#include <cstddef>

#include "shared.hpp"

namespace liveheap::boot {

// A registry directory's path; a socket's must also fit sockaddr_un.
struct DirPath {
  char text[256] = {};
};
struct SocketPath {
  char text[sizeof(sockaddr_un::sun_path)] = {};
};
// Why a registry directory cannot be used, in one line.
struct Reason {
  char text[512] = {};
};

// The directory of the group `address` ("host:port"), created 0700 where missing, into
// `dir`; false with `why` when it, or every candidate for the registry above it, is not a
// directory owned by this user without group or other permissions (none is ever "fixed").
LIVEHEAP_SHARED bool open_group_dir(const char* address, DirPath& dir, Reason& why) noexcept;

// "<dir>/<pid>.sock" into `path`; false when it does not fit a Unix socket's address.
LIVEHEAP_SHARED bool socket_path(const char* dir, pid_t pid, SocketPath& path) noexcept;

// Records `pid` as the holder of the group's port in `dir` (atomically: readers never see
// a half-made record). Quiet: false when it could not.
LIVEHEAP_SHARED bool record_port_holder(const char* dir, pid_t pid) noexcept;

// The pid recorded at `holder` ("<dir>/holder"), or 0 when none is. One readlink: no
// allocation, no message, no lock (the port retry calls it every second).
LIVEHEAP_SHARED pid_t recorded_port_holder(const char* holder) noexcept;

// True when `pid` is a process that exists (a zombie too, until it is reaped).
LIVEHEAP_SHARED bool process_exists(pid_t pid) noexcept;

// Removes the record in `dir` when it names `pid` or a process that no longer exists.
LIVEHEAP_SHARED void forget_port_holder(const char* dir, pid_t pid) noexcept;

}  // namespace liveheap::boot
