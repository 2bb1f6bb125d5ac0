// Library frames, for folding text tracebacks: what is_plumbing() says, plus frames from
// system headers (Boost, the standard library) and system libraries without debug info.
// Thread-safety: pure functions (is_plumbing reads the user's list atomically).
#pragma once

#include <string>

#include "liveheap/snapshot.hpp"

namespace liveheap::report {

bool is_library_frame(const Frame& frame) noexcept;
// A library frame by its source or its name (plumbing, system headers), not merely by being
// machine code without debug info in a system path, as a stripped program under /usr/lib is.
bool is_library_source_frame(const Frame& frame) noexcept;
// What a folded run says the frame is in: "boost::asio", "std", "libc.so.6".
std::string library_name(const Frame& frame);

}  // namespace liveheap::report
