// A process's endpoint before the full library is loaded (preload mode, LIVEHEAP_ADDR on a
// loopback address with the endpoint's default settings). What makes the process reachable
// costs a few system calls: the port's first try on the thread that loads the process,
// then, on a thread of its own, its socket in the registry and the holder's record. The
// full library (full_library.hpp) is loaded only when the endpoint has its first
// connection, when the recorders are due (100 ms: the history and peak recorders run in
// every process that lives that long), or before the process changes its user ids (while
// the library's file is still readable); it then takes the sockets over and serves them
// as if it had made them (http/endpoint.hpp, take_over_process_endpoint). A process that
// exits before then never maps it.
// A forked child does as the full library's endpoint does: it closes its parent's sockets
// (fork_fds.hpp) and, unless it execs within 50 ms, registers its own in its parent's
// group directory (binding it just before a uid change when that comes first).
// Thread-safety: start once, from the preload library's constructor; the rest from any
// thread. The state is behind one lock; the full library is loaded outside it.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "fork_fds.hpp"
#include "registry_dir.hpp"
#include "shared.hpp"

namespace liveheap::boot {

// LIVEHEAP_ADDR's host and port when the early endpoint can serve it: "[host:]port" with
// a port from 0 to 65535 and a loopback literal for host (127.0.0.0/8, ::1 in brackets),
// or none (127.0.0.1). Anything else (a name to resolve, an address the listen policy must
// judge, a malformed value) is the full library's, which explains what is wrong.
struct EarlyAddress {
  char host[64] = {};  // as written, an IPv6 one without its brackets
  std::uint16_t port = 0;
};
bool parse_early_address(const char* text, EarlyAddress& address) noexcept;

// Starts the endpoint: listens on the port (and says so, as the full library does), then
// registers on its own thread. Never fails: a problem is one line on stderr, as the full
// library would say it, and the process runs on.
void start_early_endpoint(const EarlyAddress& address) noexcept;

// What the full library takes over, once, from the early endpoint's thread (or the thread
// about to change its user ids). The descriptors come with their fork_fds entries.
struct EarlyEndpoint {
  EarlyAddress listen;
  char address[80] = {};  // the group's name, "host:port" (an IPv6 host in brackets)
  int tcp_fd = -1;        // listening on the port (this process holds it), or -1
  ForkFd tcp_tracked;
  bool port_taken = false;  // its try found the port taken: the full library retries
  int local_fd = -1;        // listening in the registry, or -1
  ForkFd local_tracked;
  DirPath dir;                        // the group's directory: where this process registered, or
                                      // (a forked child not registered yet) its parent's; or ""
  SocketPath socket;                  // its socket there, once registered
  pid_t registered_pid = 0;           // the process that bound `socket`
  bool registry_tried = false;        // registration was tried (and said why when it failed)
  bool forked = false;                // a child forked without exec
  bool announce = true;               // the process the user started: may say a line
  std::int64_t recorders_due_ns = 0;  // CLOCK_MONOTONIC time at which the recorders start
};

// The full library's entry point that takes an early endpoint over (full_start.cpp).
using TakeOver = void (*)(EarlyEndpoint& endpoint);
inline constexpr char kTakeOverFunction[] = "liveheap_preload_take_over";

}  // namespace liveheap::boot
