// The history recorder's thread, its bounded ring of points, and fork/exit handling: the
// thread stops at stop() and at exit; a forked child restarts it on its next use.
#include "history.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <new>
#include <optional>

#include "blocked_signals.hpp"
#include "engine.hpp"
#include "fork_repairs.hpp"
#include "fork_safe_once.hpp"
#include "liveheap/allocator.hpp"
#include "liveheap/request_scope.hpp"
#include "liveheap/tracker.hpp"
#include "wall_clock.hpp"

namespace liveheap::tracker {
namespace {

// Resident bytes from /proc/self/statm (its second field, in pages); -1 when unknown.
std::int64_t resident_bytes() noexcept {
  char buffer[128];
  const int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  const ssize_t n = ::read(fd, buffer, sizeof buffer - 1);
  ::close(fd);
  if (n <= 0) return -1;
  buffer[n] = '\0';
  long size = 0, resident = 0;
  if (std::sscanf(buffer, "%ld %ld", &size, &resident) != 2) return -1;
  return static_cast<std::int64_t>(resident) * ::sysconf(_SC_PAGESIZE);
}

struct Point {
  HistoryPoint point;
  std::vector<HistoryEntry> entries;
};

// Every field guarded by `mutex`, except the tick's scratch (under tick_mutex, so that
// history_tick() from a test cannot race the thread). fork() takes `mutex` first (this
// handler is registered after the engine's, so it runs before the engine locks malloc).
struct Recorder {
  std::mutex mutex;
  std::condition_variable* wake = new std::condition_variable;  // replaced in a forked child
  std::optional<pthread_t> thread;  // a pthread: its join is bounded (join_thread)
  bool stopping = false;
  bool forked = false;  // set in a child: the thread is gone
  unsigned interval_s = 0;
  std::uint64_t noise = 0;       // the sampling interval in sampled mode (idle_between)
  std::uint64_t generation = 0;  // bumped by start/stop/clear: a tick in flight is dropped
  std::deque<Point> points;
  std::uint64_t points_dropped = 0;
  std::mutex* tick_mutex = new std::mutex;  // replaced in a forked child
  std::vector<HistoryEntry> scratch;
};

Recorder& recorder();

// In a forked child, under `mutex`: the parent's thread is not here. Its object and the
// objects it may have held (the tick mutex, the condition it waited on) are left as they
// are, never used again. Returns whether the thread was running in the parent.
bool adopt_fork(Recorder& r) {
  if (!r.forked) return false;
  r.forked = false;
  r.wake = new std::condition_variable;
  r.tick_mutex = new std::mutex;
  new (&r.scratch) std::vector<HistoryEntry>();  // the parent's tick may have been mid-push
  const bool was_running = r.thread.has_value();
  r.thread.reset();
  r.stopping = false;
  return was_running;
}

// fork(): the lock is held across it (the child's copy of the points is whole), and the
// child makes it afresh, from the engine's repairs: a fork that began before these handlers
// were registered runs neither, and the child's copy may then be held by a thread of the
// parent.
std::atomic<Recorder*> g_made{nullptr};  // the handlers' way to it: they must not make one

Recorder* make_recorder() {
  auto* made = new Recorder;  // never destroyed: the thread may outlive static destructors
  g_made.store(made);
  engine::on_fork_child([] {
    Recorder* me = g_made.load(std::memory_order_relaxed);
    new (&me->mutex) std::mutex;
    me->forked = true;
  });
  ::pthread_atfork([] { g_made.load()->mutex.lock(); }, [] { g_made.load()->mutex.unlock(); }, nullptr);
  return made;
}

Recorder& recorder() { return engine::fork_safe_once<Recorder, make_recorder>(); }

// Offers `e` to `kept`, a heap of at most kHistoryStacksPerPoint entries with the smallest
// size on top; what falls out is counted as the point's dropped stacks and bytes. Once the
// heap is full, most stacks are smaller than its top and cost one comparison.
void keep_biggest(std::vector<HistoryEntry>& kept, HistoryEntry e, HistoryPoint& point) {
  auto bigger = [](const HistoryEntry& a, const HistoryEntry& b) { return a.size > b.size; };
  if (kept.size() < kHistoryStacksPerPoint) {
    kept.push_back(e);
    std::push_heap(kept.begin(), kept.end(), bigger);
    return;
  }
  if (e.size > kept.front().size) {
    std::pop_heap(kept.begin(), kept.end(), bigger);  // the smallest kept to the back
    std::swap(kept.back(), e);                        // `e` in its place; it falls out
    std::push_heap(kept.begin(), kept.end(), bigger);
  }
  point.bytes_dropped += e.size;
  ++point.stacks_dropped;
}

void run(unsigned interval_s) {
  engine::begin_ignore();  // this thread's allocations are the tracker's own
  Recorder& r = recorder();
  std::unique_lock lock(r.mutex);
  // A point at once: what the program does in its first interval is a change from here, not
  // the history's starting level (a burst of traffic soon after start stays visible).
  bool first = true;
  while (!r.stopping) {
    if (!first && r.wake->wait_for(lock, std::chrono::seconds(interval_s), [&] { return r.stopping; })) break;
    first = false;
    lock.unlock();
    history_tick();
    lock.lock();
  }
}

// Joins the thread; called with `lock` held, returns with it held.
void join_thread(std::unique_lock<std::mutex>& lock) {
  Recorder& r = recorder();
  adopt_fork(r);
  if (!r.thread) return;
  r.stopping = true;
  r.wake->notify_all();
  const pthread_t thread = *r.thread;
  r.thread.reset();
  lock.unlock();
  // Bounded: exit() runs this, and a process must never fail to exit because liveheap's
  // thread is stuck (left running, and its object leaked, after two seconds).
  timespec deadline{};
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 2;
  if (pthread_timedjoin_np(thread, nullptr, &deadline) != 0) pthread_detach(thread);
  lock.lock();
  r.stopping = false;
}

void start_thread(Recorder& r) {
  static std::once_flag at_exit;
  std::call_once(at_exit, [] { std::atexit([] { history_stop(); }); });
  IgnoreScope ignore;                  // the thread's stack bookkeeping and TLS are the tracker's own
  const engine::BlockedSignals quiet;  // the host's signals are the host's threads'
  pthread_t thread;
  const auto entry = [](void* interval) -> void* {
    run(static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(interval)));
    return nullptr;
  };
  // No thread (the system is out of them): no history, the host goes on.
  if (pthread_create(&thread, nullptr, entry, reinterpret_cast<void*>(std::uintptr_t{r.interval_s})) == 0)
    r.thread = thread;
}

void forget(Recorder& r) {
  r.points.clear();
  r.points.shrink_to_fit();
  r.points_dropped = 0;
  ++r.generation;
}

}  // namespace

void history_start(unsigned interval_s, bool run_now, std::uint64_t noise) {
  Recorder& r = recorder();
  std::unique_lock lock(r.mutex);
  join_thread(lock);
  IgnoreScope ignore;
  forget(r);
  r.interval_s = interval_s;
  r.noise = noise;
  if (run_now && interval_s > 0) start_thread(r);
}

void history_run() {
  Recorder& r = recorder();
  std::lock_guard lock(r.mutex);
  adopt_fork(r);
  if (!r.thread && r.interval_s > 0 && engine::active()) start_thread(r);
}

void history_stop() {
  Recorder& r = recorder();
  std::unique_lock lock(r.mutex);
  join_thread(lock);
  IgnoreScope ignore;
  forget(r);
  r.interval_s = 0;
}

void history_clear() {
  Recorder& r = recorder();
  std::lock_guard lock(r.mutex);
  IgnoreScope ignore;
  if (adopt_fork(r) && r.interval_s > 0) start_thread(r);
  forget(r);
}

void history_tick() {
  Recorder& r = recorder();
  IgnoreScope ignore;
  std::mutex* tick_mutex = nullptr;
  std::uint64_t generation = 0;
  {
    std::lock_guard lock(r.mutex);
    adopt_fork(r);
    tick_mutex = r.tick_mutex;
    generation = r.generation;
  }
  std::lock_guard tick_lock(*tick_mutex);
  Point p;
  p.point.t_ms = engine::now_ms();
  const engine::Totals traced = engine::traced();
  p.point.traced = traced.current;
  p.point.peak = traced.peak;
  for (RouteRequests& r : requests_by_route())
    p.point.route_requests.emplace_back(std::move(r.route), r.requests);
  std::sort(p.point.route_requests.begin(),
            p.point.route_requests.end());  // by name, as /history writes them
  // Every stack that ever allocated, so that the process's work sums them all; of those with
  // live blocks, the biggest are kept as they come. The tick's memory is bounded however many
  // stacks there are: a list of every live stack grew with them into the room the
  // tracker-memory cap keeps for the live table.
  struct Visit {
    std::vector<HistoryEntry>* kept;
    HistoryPoint* point;
  } visit{&r.scratch, &p.point};
  r.scratch.clear();
  r.scratch.reserve(kHistoryStacksPerPoint);
  engine::visit_stack_ids(
      [](void* ctx, std::uint32_t id, const engine::StackSums& s) {
        auto* v = static_cast<Visit*>(ctx);
        v->point->allocated += s.alloc_bytes;
        v->point->allocations += s.alloc_count;
        if (s.count <= 0 && s.bytes <= 0) return;
        const auto count = static_cast<std::uint32_t>(std::clamp<std::int64_t>(s.count, 0, UINT32_MAX));
        keep_biggest(*v->kept, {id, count, s.bytes, s.alloc_bytes, s.alloc_count}, *v->point);
      },
      &visit, true);
  // The figures of the process and of its allocator after the heap's, which are read
  // together: the first read names the allocator (dlopen and dladdr, milliseconds), time in
  // which the program goes on working, and read before them it put a server's first
  // requests inside the first point, a rise no verdict could then see.
  p.point.rss = resident_bytes();
  // Off the allocation path, but not free: glibc's mallinfo2 holds each arena's lock while it
  // sums that arena (microseconds), as a GET /stats does.
  p.point.allocator = read_allocator().figures;
  p.entries.assign(r.scratch.begin(), r.scratch.end());
  std::lock_guard lock(r.mutex);
  if (generation != r.generation || !engine::active()) return;  // cleared or stopped meanwhile
  // An idle stretch is kept as its latest point: the point before it closed the last interval
  // of work, so a night without traffic fills no window and pushes no work out of it. The
  // stretch is idle as a whole: what it allocated stays under the bound for every interval
  // it spans (a background trickle of a few hundred bytes a second folds too).
  const std::size_t n = r.points.size();
  const auto idle_since = [&](const Point& from, const Point& to) {
    return idle_between(from.point.allocated, to.point.allocated, to.point.t_ms - from.point.t_ms,
                        std::int64_t{r.interval_s} * 1000, r.noise);
  };
  if (n >= 2 && idle_since(r.points[n - 2], r.points[n - 1]) && idle_since(r.points[n - 2], p)) {
    r.points.back() = std::move(p);
    return;
  }
  r.points.push_back(std::move(p));
  if (r.points.size() > kHistoryPoints) r.points.pop_front(), ++r.points_dropped;
}

RawHistory history_raw() {
  Recorder& r = recorder();
  IgnoreScope ignore;
  std::lock_guard lock(r.mutex);
  if (adopt_fork(r) && engine::active()) start_thread(r);  // a forked child: ours
  RawHistory raw;
  raw.interval_s = r.interval_s;
  raw.points_dropped = r.points_dropped;
  raw.points.reserve(r.points.size());
  raw.entries.reserve(r.points.size());
  for (const Point& p : r.points) {
    raw.points.push_back(p.point);
    raw.entries.push_back(p.entries);
  }
  return raw;
}

}  // namespace liveheap::tracker
