// Addresses -> Frames (function, file, line, module), cached. The debug information is read
// by liveheap-symbolizer, a process of its own shared by every traced process of the user
// (symbolizer_process.hpp): a traced process tells it where each address lies (object file,
// build-id, offset) and keeps only the names it gets back. When the symbolizer cannot be
// reached, frames are named by their dynamic symbol or module+offset, without lines, and
// status() says why; such names are not cached.
// Thread-safety: every function may be called from any thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "liveheap/snapshot.hpp"

namespace liveheap::symbolize {

// For each address, in order, its frames: the functions inlined at that address, innermost
// first, then the function the code is in (at least one Frame each). Addresses are return
// addresses: the line looked up is the call's (address - 1).
std::vector<std::vector<Frame>> symbolize(std::span<const std::uintptr_t> addresses);

// Addresses asked of symbolize() since start-up, and of them those not in its cache, sent
// to the symbolizer process: what reports cost in symbols (/stats shows them).
struct Counts {
  std::uint64_t asked = 0;
  std::uint64_t resolved = 0;
};
Counts counts() noexcept;

// The symbolizer process as of the last request sent to it.
struct Status {
  bool asked = false;          // a request was sent (or tried) since start-up
  pid_t pid = 0;               // the process that answered
  std::int64_t rss_bytes = 0;  // its resident memory then
  std::int64_t files = 0;      // the files whose debug information it held then
  std::string problem;         // why the last request got no answer; "" when it got one
};
Status status();

}  // namespace liveheap::symbolize
