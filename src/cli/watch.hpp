// liveheap-watch's rounds: poll /diff, print what grew, and judge it against --fail-over.
// Thread-safety: runs on the calling thread only.
#pragma once

#include <ostream>
#include <stdexcept>

#include "options.hpp"

namespace liveheap::cli {

// The server answered, but not with what liveheap-watch asked for (a 4xx/5xx, or a body
// that is not a liveheap diff). The message says what came back and what to try.
class ServerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr int kExitOk = 0;
inline constexpr int kExitOverThreshold = 1;
inline constexpr int kExitError = 2;

// Runs options.rounds rounds (forever without it), the report of each to `out`, and the
// verdict of --fail-over to `err`. Returns kExitOk, or kExitOverThreshold at the first
// round whose total growth exceeds --fail-over. Throws ConnectionError or ServerError.
int watch(const WatchOptions& options, std::ostream& out, std::ostream& err);

}  // namespace liveheap::cli
