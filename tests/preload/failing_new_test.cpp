// An operator new that the allocator cannot serve fails under the preload library as
// without it, in every mode: the C++ runtime's new_handler runs, then std::bad_alloc is
// thrown or null returned (failing_new.cpp checks each of the eight forms).
#include <chrono>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../support/child_process.hpp"

namespace {

using namespace std::chrono_literals;

test_support::ChildExit run_program(const std::vector<std::string>& env) {
  test_support::ChildProcess child({LIVEHEAP_FAILING_NEW_PATH}, test_support::environment_with(env),
                                   {.stdin_pipe = false, .with_stderr = true});
  return child.finish(0, 30s);
}

TEST(PreloadFailingNew, EveryFormFailsAsTheRuntimeSaysInEveryMode) {
  const test_support::ChildExit bare = run_program({});
  ASSERT_TRUE(bare.ok()) << "the program fails without liveheap: " << bare.describe() << "\n" << bare.output;
  for (const char* mode : {"off", "sampled", "exact"}) {
    // A small sample interval: in sampled mode every failing block is drawn a sample.
    const test_support::ChildExit r =
        run_program({"LD_PRELOAD=" LIVEHEAP_PRELOAD_PATH, "LIVEHEAP_SAMPLE_INTERVAL=512",
                     std::string("LIVEHEAP_MODE=") + mode});
    EXPECT_TRUE(r.ok()) << mode << ": " << r.describe() << "\n" << r.output;
    EXPECT_EQ(r.output, bare.output) << mode;
  }
}

}  // namespace
