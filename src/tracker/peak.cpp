// The peak recorder (peak.hpp): one detached liveheap thread that sleeps until the
// allocation path signals it (engine::set_peak_mark, peak_signal.hpp). What the hooks do for
// it is the compare that keeps the traced peak, against a lower number when the mark is
// below the peak: nothing more in a steady heap.
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
#include "fork_repairs.hpp"
#include "fork_safe_once.hpp"
#include "liveheap/tracker.hpp"
#include "peak_signal.hpp"
#include "stack_table.hpp"
#include "wall_clock.hpp"

namespace liveheap::peak {
namespace {

// Never destroyed: the detached thread may still run while static destructors do.
struct State {
  std::mutex recording;  // serializes recorders: the thread, record_now, forget
  std::mutex latest_mutex;
  std::shared_ptr<const Record> latest;  // guarded by latest_mutex
  std::atomic<bool> thread_running{false};
  std::atomic<bool> restart_in_child{true};  // else a forked child waits for run()
  std::atomic<std::uint64_t> looks{0};       // looks()
  std::atomic<std::uint32_t> answered{0};    // the signal count the last look answered
};

State* make_state();
State& state() { return engine::fork_safe_once<State, make_state>(); }

std::atomic<State*> g_made{nullptr};  // the repair's way to it: a repair must not make one

// fork() without exec, first of the child's handlers (engine/fork_repairs.hpp): the
// parent's thread does not exist here, and a lock it held stays held.
void repair_after_fork() {
  State* s = g_made.load(std::memory_order_relaxed);
  new (&s->recording) std::mutex;
  new (&s->latest_mutex) std::mutex;
  s->thread_running.store(false);
}

State* make_state() {
  IgnoreScope ignore;
  auto* made = new State;
  g_made.store(made);
  engine::on_fork_child(repair_after_fork);
  return made;
}

static_assert(engine::kStackIdBits <= 24, "StackAtPeak::id");

// A record being filled by the engine's visit: reserved beforehand, so no allocation (and
// no throw) inside the visit; a stack past the reservation is left out and `full` set.
struct Filling {
  Record* record;
  bool full = false;
};

void add_stack(void* ctx, std::uint32_t id, const engine::StackSums& sums) {
  auto* f = static_cast<Filling*>(ctx);
  if (f->record->stacks.size() == f->record->stacks.capacity()) {
    f->full = true;
    return;
  }
  f->record->stacks.push_back({sums.bytes, id, sums.count});
  f->record->total += sums.bytes;
}

// The heap now, with room for `room` live stacks; *full when they were more.
std::shared_ptr<Record> take_record(std::size_t room, bool* full) {
  auto r = std::make_shared<Record>();
  r->stacks.reserve(room);
  r->taken_at_ms = engine::now_ms();
  Filling filling{r.get()};
  engine::visit_stack_ids(add_stack, &filling);
  *full = filling.full;
  return r;
}

// Records the heap now as the peak. Holds s.recording. May throw std::bad_alloc.
void record(State& s) {
  IgnoreScope ignore;  // the record is the tracker's memory
  // Room for the live stacks of the last record and an eighth more (the heap grew by a
  // 32nd at least since); for every stack (16 B each, most of them freed long ago in a
  // program of many stacks) only when they were more.
  const std::size_t every = engine::stack_count() + 64;
  const std::shared_ptr<const Record> last = latest();
  const std::size_t likely = last ? last->stacks.size() + last->stacks.size() / 8 + 1024 : every;
  bool full = true;
  std::shared_ptr<Record> r;
  if (likely < every) r = take_record(likely, &full);
  if (full) {
    // Stacks interned after this reservation are left out, as they would have been had
    // they come a moment later.
    r = take_record(every, &full);
    if (r->stacks.capacity() - r->stacks.size() > r->stacks.size() / 8) r->stacks.shrink_to_fit();
  }
  engine::set_peak_mark(r->total + std::max(r->total / kMarginDivisor, kMinMargin));
  std::shared_ptr<const Record> old;  // freed outside the lock
  std::lock_guard lock(s.latest_mutex);
  old = std::exchange(s.latest, std::move(r));
}

// Takes the signal, then records if the traced total is past the mark. Returns the signal
// count it answered: a signal sent since wakes the thread again.
std::uint32_t look(State& s) {
  const std::uint32_t answering = engine::peak_signal::sent();
  engine::peak_signal::take();
  if (engine::active() && engine::traced().current > engine::peak_mark()) {
    try {
      std::lock_guard lock(s.recording);
      // Asked again under the lock: a record taken on demand while this thread waited for
      // it (record_now) moved the mark, and the heap may have fallen since; recording it
      // now would replace the higher record with a lower heap.
      if (engine::traced().current > engine::peak_mark()) record(s);
    } catch (...) {
      // Out of memory: the previous record stays; the next crossing tries again.
    }
  }
  // After the record: a waiter on either sees it.
  s.answered.store(answering, std::memory_order_release);
  s.looks.fetch_add(1, std::memory_order_release);
  return answering;
}

[[noreturn]] void record_forever() {
  State& s = state();
  IgnoreScope ignore;  // for the thread's whole life: everything it allocates is ours
  {
    // The mark was left at "never" while no thread ran: with no record yet, the first look
    // records the heap as it is.
    std::lock_guard lock(s.recording);
    if (!latest()) engine::set_peak_mark(0);
  }
  for (;;) engine::peak_signal::wait(look(s));
}

void start_thread(State& s) noexcept {
  if (s.thread_running.exchange(true)) return;
  try {
    IgnoreScope ignore;
    const engine::BlockedSignals quiet;  // the host's signals are the host's threads'
    std::thread(record_forever).detach();
  } catch (...) {
    s.thread_running.store(false);  // out of threads: the next start tries again
  }
}

// fork() without exec, after repair_after_fork: the child's own thread, or no one to wake.
void after_fork_in_child() {
  State& s = state();
  if (engine::active() && s.restart_in_child.load()) start_thread(s);
  else engine::set_peak_mark(engine::kNoPeakMark);  // no one to wake until run()
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
  // With the thread running, the next traced allocation wakes it; without, the allocation
  // path has no one to wake (the thread sets the mark as it starts).
  engine::set_peak_mark(s.thread_running.load() ? 0 : engine::kNoPeakMark);
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

std::uint64_t looks() noexcept { return state().looks.load(std::memory_order_acquire); }

bool caught_up() noexcept {
  return state().answered.load(std::memory_order_acquire) == engine::peak_signal::sent();
}

}  // namespace liveheap::peak
