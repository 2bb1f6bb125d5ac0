// Threads allocating and freeing while snapshots are taken, fork in a tracked program, and
// the unwinder loaded without hijacking C++ exception handling.
// Not reformatted: an allocation and the __LINE__ that names it share a line or a fixed offset.
// clang-format off
#include <atomic>
#include <cstdlib>
#include <dlfcn.h>
#include <random>
#include <signal.h>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>

#include "../support/tracing_session.hpp"
#include "liveheap/tracker.hpp"

namespace {

using test_support::TracingSession;
using liveheap::Mode;

std::int64_t size_at_line(const liveheap::Snapshot& s, int line, std::int64_t* count) {
  for (const auto& st : s.statistics(liveheap::KeyType::line)) {
    const liveheap::Frame& f = st.traceback.at(0);
    if (f.line == static_cast<unsigned>(line) && f.file.ends_with("concurrency_test.cpp")) {
      *count = st.count;
      return st.size;
    }
  }
  *count = 0;
  return 0;
}

int g_kept_line = 0;

// Each worker churns random sizes and keeps exactly `keep` blocks of 1000 bytes.
[[gnu::noinline]] void churn(unsigned seed, int rounds, int keep, std::vector<void*>* kept) {
  std::mt19937 rng(seed);
  std::vector<void*> live;
  live.reserve(64);
  for (int i = 0; i < rounds; ++i) {
    if (live.size() < 64 && (rng() & 1)) {
      live.push_back(std::malloc(16 + rng() % 4000));
    } else if (!live.empty()) {
      std::free(live.back());
      live.pop_back();
    }
  }
  for (void* p : live) std::free(p);
  for (int i = 0; i < keep; ++i) {
    kept->push_back(std::malloc(1000)); g_kept_line = __LINE__;
  }
}

TEST(Concurrency, ThreadsWhileSnapshotsAreTakenEndExact) {
  constexpr int kThreads = 4;
  constexpr int kKeep = 25;
  std::vector<std::vector<void*>> kept(kThreads);
  for (auto& k : kept) k.reserve(kKeep);
  TracingSession tracing({Mode::exact, 32});
  const std::int64_t base = liveheap::traced_memory().current;
  std::atomic<bool> done{false};
  int snapshots = 0;
  std::thread observer([&] {
    while (!done.load()) {
      (void)liveheap::take_snapshot();
      ++snapshots;
    }
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t)
    workers.emplace_back(churn, 1234u + t, 200000, kKeep, &kept[t]);
  for (auto& w : workers) w.join();
  done = true;
  observer.join();
  EXPECT_GT(snapshots, 0);

  std::int64_t count = 0;
  const std::int64_t size = size_at_line(liveheap::take_snapshot(), g_kept_line, &count);
  EXPECT_EQ(size, kThreads * kKeep * 1000);
  EXPECT_EQ(count, kThreads * kKeep);
  for (auto& k : kept)
    for (void* p : k) std::free(p);
  EXPECT_EQ(size_at_line(liveheap::take_snapshot(), g_kept_line, &count), 0);
  EXPECT_EQ(liveheap::engine_stats().dropped, 0u);
  (void)base;
}

// Ten waves of four threads, each wave after the last has exited: five times as many
// threads as young tables, each table handed from a thread that exits to a later one with
// the blocks its last owner kept. Each thread frees half of what a thread of the wave before
// kept (blocks in a table another thread owns now, or that waits for one). Exact at the end.
TEST(Concurrency, ThreadsThatComeAndGoEndExact) {
  constexpr int kWaves = 10;
  constexpr int kPerWave = 4;
  constexpr int kKeep = 40;
  std::vector<std::vector<void*>> kept(kWaves * kPerWave);
  for (auto& k : kept) k.reserve(kKeep);
  TracingSession tracing({Mode::exact, 32});
  for (int wave = 0; wave < kWaves; ++wave) {
    std::vector<std::thread> threads;
    for (int t = 0; t < kPerWave; ++t) {
      const int i = wave * kPerWave + t;
      threads.emplace_back([&kept, i] {
        churn(777u + i, 20000, kKeep, &kept[i]);
        if (i < kPerWave) return;
        std::vector<void*>& before = kept[i - kPerWave];
        for (int k = 0; k < kKeep / 2; ++k) std::free(before[k]);
        before.erase(before.begin(), before.begin() + kKeep / 2);
      });
    }
    for (auto& t : threads) t.join();
  }
  std::int64_t live = 0;
  for (const auto& k : kept) live += static_cast<std::int64_t>(k.size());
  std::int64_t count = 0;
  EXPECT_EQ(size_at_line(liveheap::take_snapshot(), g_kept_line, &count), live * 1000);
  EXPECT_EQ(count, live);
  for (auto& k : kept)
    for (void* p : k) std::free(p);
  EXPECT_EQ(size_at_line(liveheap::take_snapshot(), g_kept_line, &count), 0);
  EXPECT_EQ(count, 0);
  EXPECT_EQ(liveheap::engine_stats().dropped, 0u);
}

// A child forked right after a report must still symbolize: it starts with a lock and a
// cache of names of its own, whatever the parent's threads held (it once waited forever on
// a condition variable of the parent's symbolizer thread; names now come from a process).
TEST(Concurrency, AChildForkedWhileTheSymbolizerIdlesSymbolizes) {
  TracingSession tracing({Mode::exact, 32});
  void* parent_block = std::malloc(4343); const int parent_line = __LINE__;
  std::int64_t count = 0;
  ASSERT_EQ(size_at_line(liveheap::take_snapshot(), parent_line, &count), 4343);  // names cached
  for (int i = 0; i < 5; ++i) {
    (void)liveheap::take_snapshot();  // a report has just been answered
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      alarm(20);  // a hang ends as SIGALRM, which the parent reports
      std::int64_t n = 0;
      _exit(size_at_line(liveheap::take_snapshot(), parent_line, &n) == 4343 ? 0 : 3);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "child hung or crashed, status " << status;
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  std::free(parent_block);
}

TEST(Concurrency, ForkedChildKeepsWorking) {
  TracingSession tracing({Mode::exact, 32});
  // Another thread busy in the allocator while we fork: its locks must not leak into the child.
  std::atomic<bool> done{false};
  std::thread busy([&] {
    while (!done.load()) std::free(std::malloc(128));
  });
  void* parent_block = std::malloc(4242); const int parent_line = __LINE__;
  for (int i = 0; i < 20; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // Child: allocate, free, snapshot (it asks the symbolizer process itself).
      void* p = std::malloc(9999); const int child_line = __LINE__;
      std::int64_t count = 0;
      const auto snap = liveheap::take_snapshot();
      const bool ok = size_at_line(snap, child_line, &count) == 9999 && count == 1 &&
                      size_at_line(snap, parent_line, &count) == 4242;
      std::free(p);
      _exit(ok ? 0 : 3);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "child crashed or hung, status " << status;
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  done = true;
  busy.join();
  std::int64_t count = 0;
  EXPECT_EQ(size_at_line(liveheap::take_snapshot(), parent_line, &count), 4242);
  std::free(parent_block);
}

// A child forked while another thread holds the tracker's control lock (clearing here; in
// a PostgreSQL postmaster, liveheap's thread starting the session as a checkpointer was
// forked) can still use and stop tracing, and so exit: the checkpointer once waited for the
// parent's thread at its exit, forever, and the cluster never shut down.
TEST(Concurrency, AChildForkedWhileAnotherThreadClearsCanStopTracing) {
  TracingSession tracing({Mode::exact, 32});
  std::atomic<bool> done{false};
  std::thread clearing([&] {
    while (!done.load()) liveheap::clear();
  });
  int hung = 0;
  for (int i = 0; i < 40; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      alarm(10);  // a hang ends as SIGALRM
      (void)liveheap::options();
      liveheap::clear();
      liveheap::stop();  // what an exit handler does
      _exit(0);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
      ++hung;
      break;  // one says it: each costs the alarm's seconds
    }
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  }
  done = true;
  clearing.join();
  EXPECT_EQ(hung, 0) << "a child forked while another thread cleared hung";
}

std::string module_of(const char* symbol) {
  void* address = dlsym(RTLD_DEFAULT, symbol);
  Dl_info info{};
  if (address == nullptr || dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "";
  return info.dli_fname;
}

TEST(Concurrency, UnwinderIsLoadedPrivately) {
  TracingSession tracing({Mode::exact, 32});  // loads libunwind
  // libunwind exports _Unwind_* and backtrace: loaded globally, they would replace
  // libgcc_s's and glibc's for every throw and every caller in the process.
  EXPECT_NE(module_of("_Unwind_RaiseException").find("libgcc_s"), std::string::npos);
  EXPECT_NE(module_of("backtrace").find("libc.so"), std::string::npos);
}

}  // namespace
