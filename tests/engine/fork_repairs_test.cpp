// A module's repair for a forked child runs in the child of a fork that was already under
// way when the module registered it: a liveheap thread makes its module's state (and takes
// its lock) just as the host forks, and glibc runs no pthread_atfork handler registered
// after a fork began, so such a child would keep the lock held by a thread it does not have.
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>

#include <gtest/gtest.h>

#include "fork_repairs.hpp"

namespace {

std::atomic<int> g_repairs{0};

void repair() { g_repairs.fetch_add(1); }

// A prepare handler of the test's fork: the module registering while that fork is under way
// (twice: still one repair a child).
void register_while_forking() {
  liveheap::engine::on_fork_child(repair);
  liveheap::engine::on_fork_child(repair);
}

TEST(ForkRepairs, ARepairRegisteredWhileAForkIsUnderWayRunsInThatForksChildOnce) {
  pthread_atfork(register_while_forking, nullptr, nullptr);
  g_repairs = 0;
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) _exit(g_repairs.load());
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 1) << "repairs run in the child";
}

}  // namespace
