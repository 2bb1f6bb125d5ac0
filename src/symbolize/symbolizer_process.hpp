// liveheap-symbolizer as a traced process reaches it: one per user and installation (an
// abstract Unix socket named after the user id and the executable), started on demand by whichever process first needs it, from
// the executable installed next to liveheap's library (or LIVEHEAP_SYMBOLIZER). It is
// started detached: the host never sees it as a child (no SIGCHLD, nothing for its
// waitpid), it holds none of the host's descriptors, signals or terminal.
// Thread-safety: any thread; each call has its own connection.
#pragma once

#include <string>

#include "wire.hpp"

namespace liveheap::symbolize {

// The symbolizer's answer to `request`, starting it first when none answers. Throws
// std::runtime_error with a one-line reason when it cannot be found, started or asked.
wire::Reply ask_symbolizer_process(const wire::Request& request);

}  // namespace liveheap::symbolize
