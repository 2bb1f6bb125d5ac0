// liveheap's static TLS comes out of every thread's stack (glibc carves it from the stack's
// top): a program that starts threads with PTHREAD_STACK_MIN stacks must start and run them
// under the preload library as it does without it, whatever the mode.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace {

struct ProgramRun {
  std::string out;
  int status = -1;
};

ProgramRun run_program(const std::string& env) {
  const std::string command = "env " + env + " " LIVEHEAP_SMALL_STACK_THREADS_PATH " 2>&1";
  ProgramRun r;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buffer;
  while (std::size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe)) r.out.append(buffer.data(), n);
  const int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(PreloadThreadStacks, ThreadsWithTheSmallestStackStartAndRunInEveryMode) {
  ASSERT_EQ(run_program("").status, 0) << "the program fails without liveheap";
  for (const char* mode : {"off", "sampled", "exact"}) {
    const ProgramRun r = run_program(
        std::string("LD_PRELOAD=" LIVEHEAP_PRELOAD_PATH " LIVEHEAP_SAMPLE_INTERVAL=512 LIVEHEAP_MODE=") +
        mode);
    EXPECT_EQ(r.status, 0) << mode << "\n" << r.out;
    EXPECT_NE(r.out.find("threads 8 started and ran 8"), std::string::npos) << mode << "\n" << r.out;
  }
}

// What each thread's stack gives up: the preload library's static TLS, in bytes.
TEST(PreloadThreadStacks, ThePreloadLibraryTakesLessThanAKibibyteOfEachStack) {
  const ProgramRun r = run_program("LD_PRELOAD=" LIVEHEAP_PRELOAD_PATH " LIVEHEAP_MODE=exact");
  std::istringstream lines(r.out);
  std::string word, object;
  std::size_t bytes = 0;
  bool seen = false;
  while (lines >> word)
    if (word == "tls" && lines >> object >> bytes &&
        object.find("libliveheap_preload") != std::string::npos) {
      seen = true;
      EXPECT_LE(bytes, 1024u) << object;
    }
  EXPECT_TRUE(seen) << r.out;
}

}  // namespace
