// Walk states (walk_state.hpp): one per living thread, taken over from threads that exited,
// and kept by a forked child's thread.
#include <sys/wait.h>
#include <unistd.h>

#include <barrier>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "stack_capture.hpp"
#include "walk_state.hpp"

namespace liveheap::engine {
namespace {

// A walk of this thread's stack: it takes the thread's state first. Returns the state.
const WalkState* walk_and_tell_state() {
  std::uintptr_t frames[kMaxFramesCapture];
  std::uint64_t hash = 0;
  EXPECT_GT(capture_stack(frames, kMaxFramesCapture, &hash), 0u);
  return t_walk_state;
}

TEST(WalkState, AThreadTakesOverTheStateOfAThreadThatExited) {
  walk_and_tell_state();
  std::thread([] { walk_and_tell_state(); }).join();  // one exited: there is one to take
  const std::uint64_t mapped = walk_states_mapped();
  for (int i = 0; i < 16; ++i) {
    const WalkState* state = nullptr;
    std::uint64_t walks = 0;
    std::thread([&] {
      state = walk_and_tell_state();
      walks = walk_cache_use().walks;
    }).join();
    EXPECT_NE(state, nullptr);
    EXPECT_EQ(walks, 1u) << "the state taken over was not emptied";
  }
  EXPECT_EQ(walk_states_mapped(), mapped) << "threads that came and went one at a time mapped states";
}

TEST(WalkState, ThreadsAliveTogetherEachHaveTheirOwn) {
  constexpr int kThreads = 6;
  std::barrier all_walked(kThreads);
  std::vector<const WalkState*> states(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      states[i] = walk_and_tell_state();
      all_walked.arrive_and_wait();  // none exits before all have theirs
      EXPECT_TRUE(walk_state_marked_mine());
      EXPECT_EQ(walk_and_tell_state(), states[i]) << "a thread's state changed under it";
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(std::set<const WalkState*>(states.begin(), states.end()).size(), std::size_t{kThreads});
  EXPECT_EQ(std::set<const WalkState*>(states.begin(), states.end()).count(nullptr), 0u);
}

// In a forked child the forking thread has another id: its state must carry it, or the
// child's next thread would take that state over as an exited thread's and share it.
TEST(WalkState, AForkedChildsThreadKeepsItsState) {
  const WalkState* mine = walk_and_tell_state();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int failed = 0;
    if (!walk_state_marked_mine()) failed |= 1;
    const WalkState* other = nullptr;
    std::thread([&] { other = walk_and_tell_state(); }).join();
    if (other == mine || other == nullptr) failed |= 2;
    if (walk_and_tell_state() != mine) failed |= 4;
    _exit(failed);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: the state is not marked with the child's thread id; 2: the "
                                       "child's new thread took it; 4: the forking thread lost it";
}

}  // namespace
}  // namespace liveheap::engine
