// What leaky_server prints on start: where it listens, the dashboard, and a curl
// walkthrough to copy into another shell (baseline -> traffic -> diff -> tracebacks).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "liveheap/snapshot.hpp"

namespace leaky {

// The first line is "leaky_server: listening on http://HOST:PORT/ (liveheap: MODE)".
void print_walkthrough(std::ostream& out, const std::string& host, std::uint16_t port,
                       liveheap::Mode mode, bool token);

}  // namespace leaky
