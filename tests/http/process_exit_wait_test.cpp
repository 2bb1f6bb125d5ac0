// ProcessExitWait: a process's exit wakes the io_context's thread (a pidfd, no timer), and
// stopping closes the pidfd only while its number still is that pidfd.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "process_exit_wait.hpp"

extern char** environ;

namespace http_test {
namespace {

namespace fs = std::filesystem;
using liveheap::http::ProcessExitWait;

// `sleep 60`, killed and reaped however the test ends.
struct Sleeper {
  Sleeper() {
    char sleep[] = "sleep", seconds[] = "60";
    char* argv[] = {sleep, seconds, nullptr};
    if (::posix_spawnp(&pid, sleep, nullptr, nullptr, argv, environ) != 0) pid = -1;
  }
  ~Sleeper() { end(); }
  void end() {
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    pid = -1;
  }
  pid_t pid = -1;
};

// The descriptor numbers of this process that are pidfds.
std::vector<int> pidfds() {
  std::vector<int> found;
  for (const auto& entry : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::string target = fs::read_symlink(entry.path(), ec).string();
    if (target.find("pidfd") != std::string::npos)
      found.push_back(std::stoi(entry.path().filename().string()));
  }
  return found;
}

TEST(ProcessExitWait, RunsOnceTheProcessHasExited) {
  Sleeper sleeper;
  ASSERT_GT(sleeper.pid, 0);
  const std::size_t before_size = pidfds().size();
  boost::asio::io_context io;
  ProcessExitWait wait;
  int ran = 0;
  ASSERT_TRUE(wait.start(io, sleeper.pid, [&] { ++ran; }));
  EXPECT_EQ(wait.waiting_for(), sleeper.pid);
  io.run_for(std::chrono::milliseconds(100));
  EXPECT_EQ(ran, 0) << "ran while the process lived";
  const pid_t pid = sleeper.pid;
  sleeper.end();
  io.run_for(std::chrono::seconds(30));  // returns as soon as nothing is left to wait for
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(wait.exited(), pid);
  EXPECT_EQ(wait.waiting_for(), 0);
  EXPECT_EQ(pidfds().size(), before_size) << "the pidfd was not closed";
}

// A daemon closes every descriptor and opens its own, one under the pidfd's number:
// stopping leaves that one open.
TEST(ProcessExitWait, StoppingLeavesWhatTheProgramOpenedUnderThePidfdsNumber) {
  Sleeper sleeper;
  ASSERT_GT(sleeper.pid, 0);
  boost::asio::io_context io;
  ProcessExitWait wait;
  const std::vector<int> before = pidfds();
  ASSERT_TRUE(wait.start(io, sleeper.pid, [] {}));
  std::vector<int> numbers;
  for (const int fd : pidfds())
    if (std::find(before.begin(), before.end(), fd) == before.end()) numbers.push_back(fd);
  ASSERT_EQ(numbers.size(), 1u);

  const int mine = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(mine, 0);
  ASSERT_EQ(::dup2(mine, numbers[0]), numbers[0]);  // the pidfd is closed, /dev/null in its place
  ::close(mine);
  wait.stop();
  EXPECT_NE(::fcntl(numbers[0], F_GETFD), -1) << "the program's descriptor was closed";
  std::error_code ec;
  EXPECT_EQ(fs::read_symlink("/proc/self/fd/" + std::to_string(numbers[0]), ec), "/dev/null");
  ::close(numbers[0]);

  ASSERT_TRUE(wait.start(io, sleeper.pid, [] {}));  // and its own pidfd it does close
  ASSERT_EQ(pidfds().size(), before.size() + 1);
  wait.stop();
  EXPECT_EQ(pidfds().size(), before.size());
}

}  // namespace
}  // namespace http_test
