// Tests wait on observable state, not on time: a fixed sleep is too short on a loaded machine
// (ctest -j beside other builds stalls a process for seconds) and too long everywhere else.
// Header-only, so that every test binary can use it without linking anything.
#pragma once

#include <chrono>
#include <exception>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace test_support {

// Long enough for the slowest loaded machine; a test that passes waits only as long as the
// state takes to change.
inline constexpr std::chrono::seconds kPatience{30};
inline constexpr int kPatienceMs = 30000;  // the same, for calls that take milliseconds

// Polls `condition` every `poll` until it returns true (success) or `timeout` passes
// (failure, saying how long it waited and what the condition last threw, if it threw).
// A condition that throws counts as "not yet": a server that is not listening yet refuses
// the connection. Use as ASSERT_TRUE(wait_until(...)) << "what never happened".
template <class Condition>
testing::AssertionResult wait_until(std::chrono::milliseconds timeout, Condition&& condition,
                                    std::chrono::milliseconds poll = std::chrono::milliseconds(20)) {
  const auto start = std::chrono::steady_clock::now();
  std::string last_error;
  for (;;) {
    try {
      if (condition()) return testing::AssertionSuccess();
    } catch (const std::exception& e) {
      last_error = e.what();
    }
    if (std::chrono::steady_clock::now() - start >= timeout) break;
    std::this_thread::sleep_for(poll);
  }
  testing::AssertionResult failure = testing::AssertionFailure();
  failure << "timed out after " << timeout.count() << " ms";
  if (!last_error.empty()) failure << " (the condition last threw: " << last_error << ")";
  return failure;
}

}  // namespace test_support
