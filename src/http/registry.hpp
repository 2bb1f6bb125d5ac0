// The private registry through which the processes of one program find each other: a
// directory only the user can open ($XDG_RUNTIME_DIR/liveheap, else /tmp/liveheap-$UID,
// 0700, owned by the user; where another user took that name, the first of "<it>.1" to
// "<it>.8" that is or can be made so) with one sub-directory per LIVEHEAP_ADDR, holding
// one Unix-domain socket per process, "<pid>.sock".
// The directories and the holder's record are made in libc-only code, which the preload
// library also uses before the rest of liveheap is loaded (boot/registry_dir.hpp).
// Thread-safety: pure functions over the file system.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "liveheap/export.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {

// Reads what the registry needs of the environment, once: call before liveheap's threads
// run (the host may call setenv later, and getenv beside a setenv is not safe). The
// preload library did (boot/start_environment.hpp).
void read_registry_environment();

// The directory for the group `address` ("host:port"), created 0700 where missing. Throws
// std::runtime_error with a one-line reason when it, or every candidate for the registry
// above it, is not a directory owned by this user without group or other permissions
// (none is ever "fixed").
std::string open_registry(std::string_view address);

// "<dir>/<pid>.sock". Throws std::runtime_error when the path is too long for a socket.
std::string socket_path(const std::string& dir, pid_t pid);

// The pids with a live socket in `dir`, ascending. A socket whose process is gone (or a
// zombie) and that refuses connections, or whose pid lives but that has refused for longer than a start-up
// takes (the pid was reused), is removed on the way.
std::vector<pid_t> list_registry(const std::string& dir);

// What processes killed without their exit handler (SIGKILL) left, removed: in the group
// directory `dir`, sockets whose pid is gone (or a zombie, its parent not having reaped
// it yet) and that refuse connections, and a holder
// record naming a dead pid; with `other_groups`, the same in every other group directory
// of its registry that is ours, each removed once empty (a whole group that died). A socket
// whose pid lives, or that something still accepts on, stays. Quiet, never throws.
void sweep_registry(const std::string& dir, bool other_groups) noexcept;

// The holder of the group's port records itself as "<dir>/holder", a symbolic link whose
// target is its pid (written once it listens, replaced atomically, removed as it exits):
// the others of the group retry the port only while that holder lives, so that a port
// some other program holds is never taken from it when that program restarts.

// "<dir>/holder".
std::string holder_path(const std::string& dir);

// Records `pid` as the holder. Quiet: false when it could not (nothing else to do then).
bool record_port_holder(const std::string& dir, pid_t pid) noexcept;

// The pid recorded at `holder` (holder_path), or 0 when none is. One readlink: no
// allocation, no message, no lock (the port retry calls it every second).
pid_t recorded_port_holder(const char* holder) noexcept;

// True when `pid` is a process that exists (a zombie too, until it is reaped).
bool process_exists(pid_t pid) noexcept;

// Removes the record when it names `pid` or a process that no longer exists.
void forget_port_holder(const std::string& dir, pid_t pid) noexcept;

}  // namespace http
LIVEHEAP_NAMESPACE_END
