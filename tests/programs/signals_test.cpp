// Programs that rely on how signals reach them: one forks from a SIGALRM handler while it
// allocates, one waits for SIGTERM with sigwait in a main thread that blocks it. Under the
// preload library neither may change: no deadlock, and SIGTERM still goes to sigwait
// (liveheap's own threads, started before main, must block the signals themselves).
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "../http/client.hpp"
#include "../support/read_file.hpp"
#include "../support/temp_dir.hpp"
#include "../support/wait.hpp"
#include "program_run.hpp"

namespace programs_test {
namespace {

constexpr auto kForkTimeout = 10s;  // bare: ~0.1 s

// /proc/<pid>/status, or "" when the process is gone.
std::string proc_status(pid_t pid) {
  return test_support::read_file("/proc/" + std::to_string(pid) + "/status");
}

// Whether the signal mask on `field`'s line ("ShdPnd:\t0000000000004000") has `signal`.
bool pending_in(const std::string& status, const std::string& field, int signal) {
  const auto at = status.find(field);
  if (at == std::string::npos) return false;
  const unsigned long long mask = std::stoull(status.substr(at + field.size()), nullptr, 16);
  return (mask >> (signal - 1)) & 1;
}

// Runs `program` five times under `env` (where the signal lands differs from run to run):
// each as bare. Returns whether one hung.
bool expect_runs_as_bare(const std::vector<std::string>& program, const std::vector<std::string>& env,
                         const ProgramRun& bare) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    const ProgramRun preloaded = run(program, env, kForkTimeout);
    EXPECT_EQ(preloaded.how(), "exit 0") << "attempt " << attempt << ": " << preloaded.err;
    EXPECT_EQ(preloaded.out, bare.out) << "attempt " << attempt;
    EXPECT_EQ(preloaded.err, "") << "attempt " << attempt;
    if (preloaded.how() != "exit 0") return preloaded.timed_out;
  }
  return false;
}

// Without LIVEHEAP_ADDR liveheap starts no thread: the program stays single-threaded, and its
// fork takes no allocator lock, bare or preloaded, even from a signal that interrupted malloc
// (or liveheap's own tables) on the only thread.
TEST(Signals, ASingleThreadedProgramThatForksInASigalrmHandlerWhileAllocatingNeverDeadlocks) {
  const std::vector<std::string> program = {LIVEHEAP_FORK_IN_ALARM, "allocate"};
  const ProgramRun bare = run(program, {}, kForkTimeout);
  ASSERT_EQ(bare.how(), "exit 0") << bare.err;
  ASSERT_EQ(bare.out, "forked 20, reaped 20\n");
  for (const char* mode : {"exact", "sampled"})
    if (expect_runs_as_bare(
            program,
            {std::string("LD_PRELOAD=") + LIVEHEAP_PRELOAD_LIBRARY, std::string("LIVEHEAP_MODE=") + mode},
            bare))
      return;  // one hang is enough: the others would only add timeouts
}

// With LIVEHEAP_ADDR, liveheap's threads are there: a handler must not run on them (it would
// find their locks held by its own thread), and the fork handlers take no lock the handler's
// thread holds. (A fork from a handler that interrupted malloc is another matter there: the
// process is multi-threaded, so glibc's fork takes the allocator's locks, as in any threaded
// program; docs/processes.md.)
TEST(Signals, AProgramThatForksInASigalrmHandlerNeverDeadlocks) {
  const std::vector<std::string> program = {LIVEHEAP_FORK_IN_ALARM, "compute"};
  const ProgramRun bare = run(program, {}, kForkTimeout);
  ASSERT_EQ(bare.how(), "exit 0") << bare.err;
  ASSERT_EQ(bare.out, "forked 20, reaped 20\n");
  test_support::TempDir runtime;
  bool hung = false;  // once one configuration hangs, the others would only add timeouts
  for_each_configuration(runtime.path(), [&](const Configuration&, const auto& env, auto) {
    if (!hung) hung = expect_runs_as_bare(program, env, bare);
  });
}

// Starts sigwait_term with `env`, sends SIGTERM while it works and checks that it collects
// it with sigwait and exits 0. With a `port`, first waits until liveheap's endpoint (so its
// threads) answers through it.
void expect_sigterm_reaches_sigwait(const std::vector<std::string>& env, std::uint16_t port) {
  http_test::ChildProcess program({LIVEHEAP_SIGWAIT_TERM}, clean_env(env));
  ASSERT_EQ(program.read_line(test_support::kPatienceMs), "ready");
  const std::string target = "/debug/memory/stats?format=json&pid=" + std::to_string(program.pid());
  if (port != 0) {
    ASSERT_TRUE(test_support::wait_until(test_support::kPatience, [&] {
      return http_test::get(port, target).status == 200;
    })) << "the program's endpoint never answered";
  }
  // While the program works (reads a line) with SIGTERM blocked: the signal must stay
  // pending until its sigwait.
  ASSERT_EQ(::kill(program.pid(), SIGTERM), 0);
  bool pending = false;
  ASSERT_TRUE(test_support::wait_until(10s, [&] {
    const std::string status = proc_status(program.pid());
    pending = pending_in(status, "ShdPnd:", SIGTERM);
    return pending || status.empty() || status.find("\nState:\tZ") != std::string::npos;
  })) << "SIGTERM was neither pending nor fatal";
  if (pending) program.write_line("done");  // (writing to a dead program's stdin: SIGPIPE)
  const auto said = program.read_line(10000);
  EXPECT_EQ(said.value_or("<nothing: killed by SIGTERM, status 143 in a shell>"), "got signal 15");
  EXPECT_EQ(program.wait(10000), 0) << "it did not exit 0: SIGTERM reached a thread that "
                                       "does not block it";
}

TEST(Signals, AProgramWaitingForSigtermWithSigwaitExitsZeroOnIt) {
  {
    SCOPED_TRACE("bare");
    expect_sigterm_reaches_sigwait({}, 0);
  }
  test_support::TempDir runtime;
  for_each_configuration(runtime.path(), [&](const Configuration&, const auto& env, auto port) {
    expect_sigterm_reaches_sigwait(env, port);
  });
}

}  // namespace
}  // namespace programs_test
