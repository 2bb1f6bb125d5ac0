// A tracing session for a test: tracing starts with the given options in the constructor and
// stops (which clears the traces) in the destructor, however the test ends. A test that calls
// start() and stop() by hand and fails an ASSERT between them leaves tracing on, with its
// options, for every test after it in the same process.
#pragma once

#include "liveheap/tracker.hpp"

namespace test_support {

class TracingSession {
 public:
  // Not inlined: start() makes a few traced allocations, and a constructor inlined into the
  // test would add an inline frame to their tracebacks, one more than max_frames addresses.
  [[gnu::noinline]] explicit TracingSession(const liveheap::Options& options = {}) {
    liveheap::start(options);
  }
  ~TracingSession() {
    liveheap::clear();  // also the history and the peak record: nothing outlives the test
    liveheap::stop();
  }
  TracingSession(const TracingSession&) = delete;
  TracingSession& operator=(const TracingSession&) = delete;
};

}  // namespace test_support
