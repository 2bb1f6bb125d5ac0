// The peak recorder (peak.hpp): one detached liveheap thread polls the traced total; the
// allocation hooks are not involved at all, so the hot path does not change.
#include "peak.hpp"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <new>
#include <thread>
#include <utility>

#include "blocked_signals.hpp"
#include "engine.hpp"
#include "liveheap/tracker.hpp"

namespace liveheap::peak {
namespace {

constexpr std::chrono::milliseconds kIdlePoll{20};  // while tracing is off

// Never destroyed: the detached thread may still poll while static destructors run.
struct State {
  std::mutex recording;  // serializes recorders: the thread, record_now, forget
  std::mutex latest_mutex;
  std::shared_ptr<const Record> latest;  // guarded by latest_mutex
  std::atomic<std::int64_t> mark{0};     // the thread records once traced current exceeds it
  std::atomic<bool> thread_running{false};
  std::atomic<bool> restart_in_child{true};  // else a forked child waits for run()
  std::atomic<std::uint64_t> polls{0};  // comparisons made while tracing (polls())
};

State& state() {
  static State* s = [] {
    IgnoreScope ignore;
    return new State;
  }();
  return *s;
}

std::int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

void add_stack(void* ctx, const std::uintptr_t* frames, std::uint32_t depth,
               const engine::StackSums& sums) {
  auto* r = static_cast<Record*>(ctx);
  // Reserved beforehand: no allocation (and no throw) inside the engine's visit. A stack
  // interned after the reservation is left out of this record.
  if (r->stacks.size() == r->stacks.capacity()) return;
  r->stacks.push_back({frames, depth, sums.bytes, sums.count});
  r->total += sums.bytes;
}

// Records the heap now as the peak. Holds s.recording. May throw std::bad_alloc.
void record(State& s) {
  IgnoreScope ignore;  // the record is the tracker's memory
  auto r = std::make_shared<Record>();
  r->stacks.reserve(engine::stack_count() + 64);
  r->taken_at_ms = now_ms();
  engine::visit_stacks(add_stack, r.get());
  s.mark.store(r->total + std::max(r->total / kMarginDivisor, kMinMargin), std::memory_order_relaxed);
  std::shared_ptr<const Record> old;  // freed outside the lock
  std::lock_guard lock(s.latest_mutex);
  old = std::exchange(s.latest, std::move(r));
}

[[noreturn]] void poll_forever() {
  State& s = state();
  IgnoreScope ignore;  // for the thread's whole life: everything it allocates is ours
  for (;;) {
    std::this_thread::sleep_for(engine::active() ? kPeakPoll : kIdlePoll);
    if (!engine::active()) continue;
    if (engine::traced().current > s.mark.load(std::memory_order_relaxed)) {
      try {
        std::lock_guard lock(s.recording);
        record(s);
      } catch (...) {
        // Out of memory: the previous record stays; the next poll tries again.
      }
    }
    s.polls.fetch_add(1, std::memory_order_release);  // after the record: a waiter sees it
  }
}

void start_thread(State& s) noexcept {
  if (s.thread_running.exchange(true)) return;
  try {
    IgnoreScope ignore;
    const engine::BlockedSignals quiet;  // the host's signals are the host's threads'
    std::thread(poll_forever).detach();
  } catch (...) {
    s.thread_running.store(false);  // out of threads: the next start tries again
  }
}

// fork() without exec: the parent's thread does not exist here, and a lock it held stays held.
void after_fork_in_child() {
  State& s = state();
  new (&s.recording) std::mutex;
  new (&s.latest_mutex) std::mutex;
  s.thread_running.store(false);
  if (engine::active() && s.restart_in_child.load()) start_thread(s);
}

}  // namespace

void on_start(bool run_now, bool restart_in_child) {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(nullptr, nullptr, after_fork_in_child); });
  forget();
  state().restart_in_child.store(restart_in_child);
  if (run_now) start_thread(state());
}

void run() { start_thread(state()); }

void forget() noexcept {
  State& s = state();
  std::lock_guard lock(s.recording);
  s.mark.store(0, std::memory_order_relaxed);
  std::shared_ptr<const Record> old;
  std::lock_guard latest_lock(s.latest_mutex);
  old = std::exchange(s.latest, nullptr);
}

void record_now() noexcept {
  State& s = state();
  try {
    std::lock_guard lock(s.recording);
    record(s);
  } catch (...) {
    // Out of memory: the previous record stays.
  }
}

std::shared_ptr<const Record> latest() {
  State& s = state();
  std::lock_guard lock(s.latest_mutex);
  return s.latest;
}

std::uint64_t polls() noexcept { return state().polls.load(std::memory_order_acquire); }

}  // namespace liveheap::peak
