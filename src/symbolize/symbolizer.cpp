// The symbolizer's worker thread, its request queue and its per-address cache.
#include "symbolizer.hpp"

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <dlfcn.h>
#include <mutex>
#include <new>
#include <pthread.h>
#include <thread>
#include <unistd.h>
#include <unordered_map>

#include <backtrace.h>
#include <boost/core/demangle.hpp>
#include <boost/stacktrace/frame.hpp>

namespace liveheap::symbolize {
namespace {

std::string base_name(const char* path) {
  std::string_view p(path == nullptr ? "" : path);
  const auto slash = p.rfind('/');
  return std::string(slash == std::string_view::npos ? p : p.substr(slash + 1));
}

// libbacktrace, as bundled by Boost.Stacktrace's backtrace backend: Boost's frame API
// reports only the outermost function of an inlined chain (a lambda inlined into
// std::thread would show as std_thread.h), so the chain itself comes from pcinfo.
// Used on the worker thread only (state created without thread support).
backtrace_state* debug_info() {
  static backtrace_state* state =
      backtrace_create_state(nullptr, 0, [](void*, const char*, int) {}, nullptr);
  return state;
}

struct InlineFrame {
  std::string function;
  std::string file;
  unsigned line;
};

// Innermost first: the inlined functions, then the function the code physically is in.
std::vector<InlineFrame> inline_chain(std::uintptr_t pc) {
  std::vector<InlineFrame> chain;
  backtrace_state* state = debug_info();
  if (state == nullptr) return chain;
  backtrace_pcinfo(
      state, pc,
      [](void* data, std::uintptr_t, const char* file, int line, const char* function) {
        if (file == nullptr && function == nullptr) return 0;
        static_cast<std::vector<InlineFrame>*>(data)->push_back(
            {function == nullptr ? "" : boost::core::demangle(function), file == nullptr ? "" : file,
             static_cast<unsigned>(line < 0 ? 0 : line)});
        return 0;
      },
      [](void*, const char*, int) {}, &chain);
  return chain;
}

std::vector<Frame> resolve(std::uintptr_t address) {
  Frame f;
  f.address = address;
  Dl_info info{};
  std::uintptr_t offset = address;
  if (dladdr(reinterpret_cast<void*>(address), &info) != 0) {
    f.module = info.dli_fname == nullptr ? "" : info.dli_fname;
    offset = address - reinterpret_cast<std::uintptr_t>(info.dli_fbase);
  }
  // A return address points after the call; the call's own line is one byte before.
  std::vector<Frame> frames;
  for (InlineFrame& in : inline_chain(address - 1)) {
    Frame frame = f;
    frame.function = std::move(in.function);
    frame.file = std::move(in.file);
    frame.line = in.line;
    frames.push_back(std::move(frame));
  }
  // The function the code is in: its qualified name from the symbol table (Boost.Stacktrace;
  // DWARF names are unqualified), else module+offset when there is no symbol at all.
  f.function = boost::stacktrace::frame(reinterpret_cast<void*>(address - 1)).name();
  if (f.function.empty() && !frames.empty()) f.function = frames.back().function;
  if (f.function.empty()) {
    char text[32];
    std::snprintf(text, sizeof text, "+0x%zx", static_cast<std::size_t>(offset));
    f.function = base_name(f.module.empty() ? "?" : f.module.c_str()) + text;
  }
  if (frames.empty()) return {f};
  frames.back().function = f.function;
  return frames;
}

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
    std::vector<std::uintptr_t> missing;
    for (std::uintptr_t a : request.addresses)
      if (!cache_.contains(a)) missing.push_back(a);
    if (!missing.empty()) {
      lock.unlock();
      std::vector<std::vector<Frame>> resolved;
      resolved.reserve(missing.size());
      for (std::uintptr_t a : missing) resolved.push_back(resolve(a));
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
};

}  // namespace

void set_worker_start_hook(std::function<void()> on_worker_start) {
  Worker::instance().set_start_hook(std::move(on_worker_start));
}

std::vector<std::vector<Frame>> symbolize(std::span<const std::uintptr_t> addresses) {
  return Worker::instance().symbolize(addresses);
}

}  // namespace liveheap::symbolize
