// The preload library starts its history and peak recorders only once the process's
// endpoint has served a moment (Options::defer_recorders): a short command pays no thread
// for them, and without LIVEHEAP_ADDR (nothing could read them) they never start.
#include <array>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

namespace {

std::string run(const std::string& env, const std::string& args) {
  const std::string command = "env LD_PRELOAD=" LIVEHEAP_PRELOAD_PATH " " + env + " " +
                              LIVEHEAP_TASK_COUNT_PATH " " + args + " 2>/dev/null";
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  std::array<char, 256> buffer;
  while (std::size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe)) out.append(buffer.data(), n);
  EXPECT_EQ(pclose(pipe), 0) << command;
  return out;
}

TEST(PreloadRecorders, WithoutAnEndpointNoRecorderThreadEverStarts) {
  // 500 ms: five times the endpoint's delay; the main thread is the only one.
  EXPECT_EQ(run("LIVEHEAP_MODE=sampled", "500"), "1\n");
  EXPECT_EQ(run("LIVEHEAP_MODE=exact LIVEHEAP_HISTORY_INTERVAL=1", "500"), "1\n");
}

TEST(PreloadRecorders, TheEndpointStartsThemOnceTheProcessHasLivedAMoment) {
  // main, the endpoint's server, the history recorder and the peak recorder.
  EXPECT_EQ(run("LIVEHEAP_ADDR=127.0.0.1:0", "until 4 20000"), "4\n");
  // No history: the peak recorder alone joins the endpoint.
  EXPECT_EQ(run("LIVEHEAP_ADDR=127.0.0.1:0 LIVEHEAP_HISTORY_INTERVAL=0", "until 3 20000"), "3\n");
  EXPECT_EQ(run("LIVEHEAP_ADDR=127.0.0.1:0 LIVEHEAP_HISTORY_INTERVAL=0", "400"), "3\n");
}

TEST(PreloadRecorders, AChildForkedWithoutExecStartsItsOwnAfterItsEndpoint) {
  // The parent's threads are not in the child; its own endpoint and recorders come.
  EXPECT_EQ(run("LIVEHEAP_ADDR=127.0.0.1:0", "fork-until 4 20000"), "child 4\n");
}

}  // namespace
