// A process's own endpoint (preload mode): its routes on a Unix-domain socket in the
// private registry (registry.hpp), and on LIVEHEAP_ADDR while it holds that port. A
// process that finds the port taken (a wrapper's child, a prefork worker) is reached
// through the holder with ?pid=, and tries the port again every second so that one of
// the group takes over when the holder exits. After fork() without exec the child does
// the same for itself: it closes its parent's sockets (fork_fds.hpp) and, unless it execs
// within a moment, registers its own endpoint (in its parent's group directory, also when
// it drops privileges first: bind_before_uid_change).
// Thread-safety: start_process_endpoint or take_over_process_endpoint once, from the
// preload library; the rest from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "early_endpoint.hpp"
#include "liveheap/http.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {

// Starts serving; never throws: problems are one line each on stderr. Registering costs
// nothing on the caller's thread (it happens on the endpoint's own thread).
void start_process_endpoint(Config config, const std::string& host, std::uint16_t port);

// The same for the endpoint the preload library started before this library was loaded
// (boot/early_endpoint.hpp): its sockets are served from here on, as if made here. Takes
// the descriptors out of `early`. Never throws.
void take_over_process_endpoint(Config config, boot::EarlyEndpoint& early);

// The registry directory of this process's group, once it registered; std::nullopt for
// a process without one (a program that mounts a Handler itself).
std::optional<std::string> process_registry();

// Just before this process changes its user ids (boot/uid_change_hook.hpp). A forked child
// that has not registered yet binds its socket now, in the group directory it inherited,
// while it still may: after setuid(nobody) it could not enter its root parent's private
// directory, and would register under nobody's, where the group's holder never looks. Its
// server serves that socket once it starts. Once per process; keeps errno; a no-op
// without an endpoint.
void bind_before_uid_change() noexcept;

}  // namespace http
LIVEHEAP_NAMESPACE_END
