// The symbolizer's worker thread, its request queue and its per-address cache.
#include "symbolizer.hpp"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <new>
#include <pthread.h>
#include <thread>
#include <unistd.h>
#include <unordered_map>

#include "blocked_signals.hpp"
#include "debug_info.hpp"

namespace liveheap::symbolize {
namespace {

// Outside the worker, so that reading them never creates it.
std::atomic<std::uint64_t> g_asked{0};
std::atomic<std::uint64_t> g_resolved{0};

// Thread-safety: every member is guarded by mutex_.
class Worker {
 public:
  static Worker& instance() {
    static Worker* worker = [] {
      auto* w = new Worker;  // never destroyed: outlives static destructors
      // fork(): the parent's worker may hold the lock or wait on a condition variable; the
      // child has no such thread, and a broadcast to its waiters would hang forever there.
      pthread_atfork([] { instance().mutex_.lock(); }, [] { instance().mutex_.unlock(); },
                     [] { instance().reset_in_child(); });
      return w;
    }();
    return *worker;
  }

  void set_start_hook(std::function<void()> hook) {
    std::lock_guard lock(mutex_);
    start_hook_ = std::move(hook);
  }

  int debug_info_states() const { return debug_info_.states_made(); }

  std::vector<std::vector<Frame>> symbolize(std::span<const std::uintptr_t> addresses) {
    Request request{{addresses.begin(), addresses.end()}, {}, false};
    std::unique_lock lock(mutex_);
    ensure_thread();
    queue_.push_back(&request);
    wake_.notify_all();
    done_.wait(lock, [&] { return request.done; });
    return std::move(request.frames);
  }

 private:
  struct Request {
    std::vector<std::uintptr_t> addresses;
    std::vector<std::vector<Frame>> frames;
    bool done;
  };

  // In a child after fork: fresh synchronization (nothing waits on it here), no requests
  // (their threads are gone); the cache stays, the worker restarts on first use.
  void reset_in_child() {
    new (&mutex_) std::mutex;
    new (&wake_) std::condition_variable;
    new (&done_) std::condition_variable;
    queue_.clear();
  }

  // After fork only the forking thread exists in the child: start a new worker there.
  void ensure_thread() {
    if (thread_pid_ == getpid()) return;
    thread_pid_ = getpid();
    queue_.clear();
    const engine::BlockedSignals quiet;  // the host's signals are the host's threads'
    std::thread([this] { run(); }).detach();
  }

  void run() {
    std::function<void()> hook;
    {
      std::lock_guard lock(mutex_);
      hook = start_hook_;
    }
    if (hook) hook();
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return !queue_.empty(); });
      Request* request = queue_.front();
      queue_.pop_front();
      serve(*request, lock);
      request->done = true;
      done_.notify_all();
    }
  }

  // Resolves uncached addresses with the lock released, so cached lookups by other
  // requests never wait behind a cold one.
  void serve(Request& request, std::unique_lock<std::mutex>& lock) {
    const LoaderCounts loader = loader_counts();
    // After a dlclose, a cached address may name code that is gone (the stack walk's frame
    // rules and heaptrack's module cache are dropped the same way).
    if (loader.subs != loader_seen_.subs) cache_.clear();
    loader_seen_ = loader;
    std::vector<std::uintptr_t> missing;
    for (std::uintptr_t a : request.addresses)
      if (!cache_.contains(a)) missing.push_back(a);
    g_asked.fetch_add(request.addresses.size(), std::memory_order_relaxed);
    g_resolved.fetch_add(missing.size(), std::memory_order_relaxed);
    if (!missing.empty()) {
      lock.unlock();
      debug_info_.refresh(loader);  // the worker thread's alone: no lock needed
      std::vector<std::vector<Frame>> resolved;
      resolved.reserve(missing.size());
      for (std::uintptr_t a : missing) resolved.push_back(debug_info_.resolve(a));
      lock.lock();
      for (std::size_t i = 0; i < missing.size(); ++i)
        cache_.emplace(missing[i], std::move(resolved[i]));
    }
    request.frames.reserve(request.addresses.size());
    for (std::uintptr_t a : request.addresses) request.frames.push_back(cache_.at(a));
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::deque<Request*> queue_;
  std::unordered_map<std::uintptr_t, std::vector<Frame>> cache_;
  std::function<void()> start_hook_;
  pid_t thread_pid_ = 0;
  LoaderCounts loader_seen_;
  DebugInfo debug_info_;  // used by the worker thread only, outside the lock
};

}  // namespace

void set_worker_start_hook(std::function<void()> on_worker_start) {
  Worker::instance().set_start_hook(std::move(on_worker_start));
}

std::vector<std::vector<Frame>> symbolize(std::span<const std::uintptr_t> addresses) {
  return Worker::instance().symbolize(addresses);
}

Counts counts() noexcept {
  return {g_asked.load(std::memory_order_relaxed), g_resolved.load(std::memory_order_relaxed)};
}

int debug_info_states() { return Worker::instance().debug_info_states(); }

}  // namespace liveheap::symbolize
