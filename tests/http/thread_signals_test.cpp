// Every thread liveheap starts blocks the asynchronous signals: the host's handlers run on
// the host's threads, and a signal the host waits for with sigwait() is never taken by
// liveheap. Checked in the kernel's view of each thread (/proc/self/task/*/status, SigBlk).
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "../support/threads_of.hpp"
#include "../support/tracing_session.hpp"
#include "../support/wait.hpp"
#include "client.hpp"
#include "liveheap/http.hpp"
#include "liveheap/request_comparison.hpp"
#include "liveheap/tracker.hpp"

namespace http_test {
namespace {

using test_support::kPatience;
using test_support::wait_until;

std::vector<pid_t> other_threads() {
  std::vector<pid_t> tids = test_support::threads_of(::getpid());
  std::erase(tids, ::getpid());
  return tids;
}

// The thread's blocked-signal mask, as the kernel reports it (bit n-1 for signal n).
std::uint64_t blocked_mask(pid_t tid) {
  std::ifstream status("/proc/self/task/" + std::to_string(tid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.starts_with("SigBlk:")) return std::stoull(line.substr(7), nullptr, 16);
  return 0;
}

TEST(ThreadSignals, EveryThreadLiveheapStartsBlocksTheHostsSignals) {
  // The main thread blocks nothing: whatever the new threads block, they blocked themselves.
  sigset_t none;
  sigemptyset(&none);
  ASSERT_EQ(pthread_sigmask(SIG_SETMASK, &none, nullptr), 0);

  liveheap::Options options;
  options.history_interval_s = 1;
  const test_support::TracingSession tracing(options);
  AdminServer server(Config{}, "127.0.0.1", 0);
  // A report starts the handler's worker.
  ASSERT_EQ(get(server.port(), "/debug/memory/top?key=traceback&limit=1").status, 200);
  ASSERT_EQ(get(server.port(), "/debug/memory/peak").status, 200);
  // The first request the per-request comparison sees starts its thread.
  liveheap::http::ComparisonConfig compare;
  compare.log = [](std::string_view) {};
  liveheap::http::RequestComparison comparison(compare);
  comparison.on_request();
  liveheap::start_recorders();
  // The server, its worker, history, peak and comparison threads (names are read by a
  // process of their own, not a thread of this one).
  ASSERT_TRUE(wait_until(kPatience, [] { return other_threads().size() >= 5; }))
      << "only " << other_threads().size() << " threads started";

  for (const pid_t tid : other_threads())
    for (const int signal : {SIGTERM, SIGINT, SIGHUP, SIGCHLD, SIGALRM, SIGUSR1, SIGUSR2, SIGPIPE, SIGQUIT,
                             SIGWINCH, SIGRTMIN + 2})
      EXPECT_NE(blocked_mask(tid) & (std::uint64_t{1} << (signal - 1)), 0u)
          << "thread " << tid << " takes signal " << signal;
  // A fault in liveheap's thread still reaches the host's crash handler. (glibc blocks
  // every signal, faults too, in a thread on its way out: such a thread is not asked.)
  const auto bit = [](int signal) { return std::uint64_t{1} << (signal - 1); };
  for (const pid_t tid : other_threads()) {
    const std::uint64_t mask = blocked_mask(tid);
    const bool exiting = (mask & bit(SIGBUS)) != 0 && (mask & bit(SIGFPE)) != 0;
    if (!exiting) {
      EXPECT_EQ(mask & bit(SIGSEGV), 0u) << "thread " << tid;
    }
  }
}

}  // namespace
}  // namespace http_test
