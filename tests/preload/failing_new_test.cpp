// An operator new that the allocator cannot serve fails under the preload library as
// without it, in every mode: the C++ runtime's new_handler runs, then std::bad_alloc is
// thrown or null returned (failing_new.cpp checks each of the eight forms).
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

namespace {

struct ProgramRun {
  std::string out;
  int status = -1;
};

ProgramRun run_program(const std::string& env) {
  const std::string command = "env " + env + " " LIVEHEAP_FAILING_NEW_PATH " 2>&1";
  ProgramRun r;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buffer;
  while (std::size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe)) r.out.append(buffer.data(), n);
  const int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(PreloadFailingNew, EveryFormFailsAsTheRuntimeSaysInEveryMode) {
  const ProgramRun bare = run_program("");
  ASSERT_EQ(bare.status, 0) << "the program fails without liveheap:\n" << bare.out;
  for (const char* mode : {"off", "sampled", "exact"}) {
    // A small sample interval: in sampled mode every failing block is drawn a sample.
    const ProgramRun r = run_program(
        std::string("LD_PRELOAD=" LIVEHEAP_PRELOAD_PATH " LIVEHEAP_SAMPLE_INTERVAL=512 LIVEHEAP_MODE=") +
        mode);
    EXPECT_EQ(r.status, 0) << mode << "\n" << r.out;
    EXPECT_EQ(r.out, bare.out) << mode;
  }
}

}  // namespace
