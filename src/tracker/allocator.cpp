// Names the allocator that serves malloc and asks it, through its own API, for its figures
// and to give memory back. Its functions are looked up in the object that serves malloc, so
// a jemalloc linked into one library never answers for glibc's heap, and the reverse.
#include "liveheap/allocator.hpp"

#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <new>

#include "fork_repairs.hpp"
#include "fork_safe_once.hpp"
#include "liveheap/tracker.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace {

// dlopen handle of the allocator's object (never closed: it serves this process's malloc).
struct Allocator {
  std::string name = "unknown";
  std::string file;
  void* handle = nullptr;

  template <typename Fn>
  Fn symbol(const char* name) const noexcept {
    return handle == nullptr ? nullptr : reinterpret_cast<Fn>(dlsym(handle, name));
  }
};

using Mallctl = int (*)(const char*, void*, std::size_t*, void*, std::size_t);
using TcProperty = int (*)(const char*, std::size_t*);
using TcRelease = void (*)();
using MiProcessInfo = void (*)(std::size_t*, std::size_t*, std::size_t*, std::size_t*, std::size_t*,
                               std::size_t*, std::size_t*, std::size_t*);
using MiCollect = void (*)(bool);

Allocator find_allocator() noexcept {
  Allocator a;
  a.file = allocator_file();
  a.handle = a.file.empty() ? nullptr : dlopen(a.file.c_str(), RTLD_NOLOAD | RTLD_LAZY);
  if (a.handle == nullptr) a.handle = dlopen(nullptr, RTLD_LAZY);  // linked into the program
  if (a.symbol<Mallctl>("mallctl") != nullptr) a.name = "jemalloc";
  else if (a.symbol<TcProperty>("MallocExtension_GetNumericProperty") != nullptr) a.name = "tcmalloc";
  else if (a.symbol<MiProcessInfo>("mi_process_info") != nullptr) a.name = "mimalloc";
  else if (a.file.find("/libc.so") != std::string::npos || a.file.starts_with("libc.so")) a.name = "glibc";
  return a;
}

Allocator* new_allocator() { return new Allocator(find_allocator()); }

// Named on the history thread's first tick (dlopen and dladdr take milliseconds): a host that
// forks meanwhile must not leave its child waiting for that naming forever.
const Allocator& allocator() noexcept { return engine::fork_safe_once<Allocator, new_allocator>(); }

void jemalloc_figures(const Allocator& a, AllocatorInfo& info) {
  const auto mallctl = a.symbol<Mallctl>("mallctl");
  std::uint64_t epoch = 1;
  std::size_t epoch_size = sizeof epoch;
  mallctl("epoch", &epoch, &epoch_size, &epoch, epoch_size);  // refresh the statistics
  for (const char* name : {"allocated", "active", "resident", "retained", "mapped", "metadata"}) {
    std::size_t value = 0;
    std::size_t size = sizeof value;
    const std::string key = std::string("stats.") + name;
    if (mallctl(key.c_str(), &value, &size, nullptr, 0) == 0)
      info.figures.emplace_back(name, static_cast<std::int64_t>(value));
  }
}

void tcmalloc_figures(const Allocator& a, AllocatorInfo& info) {
  const auto property = a.symbol<TcProperty>("MallocExtension_GetNumericProperty");
  const std::pair<const char*, const char*> names[] = {
      {"current_allocated_bytes", "generic.current_allocated_bytes"},
      {"heap_size", "generic.heap_size"},
      {"pageheap_free_bytes", "tcmalloc.pageheap_free_bytes"},
      {"pageheap_unmapped_bytes", "tcmalloc.pageheap_unmapped_bytes"}};
  for (const auto& [name, key] : names) {
    std::size_t value = 0;
    if (property(key, &value) != 0) info.figures.emplace_back(name, static_cast<std::int64_t>(value));
  }
}

void mimalloc_figures(const Allocator& a, AllocatorInfo& info) {
  std::size_t elapsed = 0, user = 0, system = 0, rss = 0, peak_rss = 0, commit = 0, peak_commit = 0,
              faults = 0;
  a.symbol<MiProcessInfo>("mi_process_info")(&elapsed, &user, &system, &rss, &peak_rss, &commit, &peak_commit,
                                             &faults);
  info.figures = {{"current_rss", static_cast<std::int64_t>(rss)},
                  {"peak_rss", static_cast<std::int64_t>(peak_rss)},
                  {"current_commit", static_cast<std::int64_t>(commit)},
                  {"peak_commit", static_cast<std::int64_t>(peak_commit)}};
}

// glibc's mallinfo2() counts every free chunk of every arena while it holds that arena's
// lock, and the host's malloc waits meanwhile: 12 ms for a heap with 100,000 free chunks,
// 130 ms with 1,000,000 (measured on the project's machine). The history thread and every
// /stats and /metrics ask for these figures, so a fresh read is made at most once per
// kQuietFactor times what the last one took (the arenas locked for at most 0.1% of the
// time); in between, the last figures are served with their age.
constexpr int kQuietFactor = 1000;

struct GlibcRead {
  struct mallinfo2 figures {};
  std::int64_t age_ms = 0;
  double cost_ms = 0;
};

using Clock = std::chrono::steady_clock;
struct GlibcReads {
  std::mutex mutex;  // one reader at a time: two would stall malloc twice
  struct mallinfo2 last {};
  Clock::time_point read_at, next_read;
  double cost_ms = 0;
  bool read_once = false;
};
GlibcReads g_glibc;

// Its lock is held across fork(), and made afresh in the child (from the engine's repairs,
// which every fork runs: see engine/fork_repairs.hpp), so that a child never inherits it
// locked by a thread it does not have. Registered at load, before any thread reads.
[[gnu::constructor]] void register_fork_handlers() noexcept {
  pthread_atfork([] { g_glibc.mutex.lock(); }, [] { g_glibc.mutex.unlock(); }, nullptr);
  engine::on_fork_child([] { new (&g_glibc.mutex) std::mutex; });
}

GlibcReads& glibc_reads() noexcept { return g_glibc; }

double thread_cpu_ms() noexcept {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

GlibcRead read_glibc() noexcept {
  GlibcReads& reads = glibc_reads();
  std::lock_guard lock(reads.mutex);
  const Clock::time_point now = Clock::now();
  if (!reads.read_once || now >= reads.next_read) {
    // The read's cost is this thread's CPU time: the time it was descheduled on a loaded
    // machine is not work, and counted it would leave the figures stale for minutes.
    const double cpu_before = thread_cpu_ms();
    reads.last = ::mallinfo2();
    const Clock::time_point done = Clock::now();
    reads.cost_ms = std::max(0.0, thread_cpu_ms() - cpu_before);
    reads.read_at = done;
    reads.next_read = done + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double, std::milli>(reads.cost_ms * kQuietFactor));
    reads.read_once = true;
  }
  const auto age = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - reads.read_at);
  return {reads.last, age.count(), reads.cost_ms};
}

void glibc_figures(AllocatorInfo& info) {
  const GlibcRead read = read_glibc();
  const struct mallinfo2& m = read.figures;
  info.figures_age_ms = read.age_ms;
  info.read_ms = read.cost_ms;
  info.figures = {{"arena", static_cast<std::int64_t>(m.arena)},
                  {"hblkhd", static_cast<std::int64_t>(m.hblkhd)},
                  {"uordblks", static_cast<std::int64_t>(m.uordblks)},
                  {"fordblks", static_cast<std::int64_t>(m.fordblks)},
                  {"keepcost", static_cast<std::int64_t>(m.keepcost)}};
}

}  // namespace

AllocatorInfo read_allocator() noexcept {
  try {
    const Allocator& a = allocator();
    AllocatorInfo info{a.name, a.file, {}};
    if (a.name == "jemalloc") jemalloc_figures(a, info);
    else if (a.name == "tcmalloc") tcmalloc_figures(a, info);
    else if (a.name == "mimalloc") mimalloc_figures(a, info);
    else if (a.name == "glibc") glibc_figures(info);
    return info;
  } catch (...) {  // out of memory while naming figures: say what is known
    return {};
  }
}

const std::string& allocator_name() noexcept { return allocator().name; }

std::string release_free_memory() {
  const Allocator& a = allocator();
  if (a.name == "jemalloc") {
    // MALLCTL_ARENAS_ALL is 4096: "arena.4096.purge" purges every arena.
    const bool ok = a.symbol<Mallctl>("mallctl")("arena.4096.purge", nullptr, nullptr, nullptr, 0) == 0;
    return ok ? "jemalloc: purged every arena" : "jemalloc: purge refused";
  }
  if (a.name == "tcmalloc") {
    if (auto release = a.symbol<TcRelease>("MallocExtension_ReleaseFreeMemory")) {
      release();
      return "tcmalloc: ReleaseFreeMemory()";
    }
    return "tcmalloc: no ReleaseFreeMemory";
  }
  if (a.name == "mimalloc") {
    if (auto collect = a.symbol<MiCollect>("mi_collect")) {
      collect(true);
      return "mimalloc: mi_collect(true)";
    }
    return "mimalloc: no mi_collect";
  }
  // glibc, and the fallback for an allocator we do not know.
  const bool released = ::malloc_trim(0) != 0;
  {
    // The figures changed, and whoever trims looks at them next: the next read is fresh.
    GlibcReads& reads = glibc_reads();
    std::lock_guard lock(reads.mutex);
    reads.read_once = false;
  }
  return std::string("malloc_trim(0) ") + (released ? "released memory" : "released nothing");
}

LIVEHEAP_NAMESPACE_END
