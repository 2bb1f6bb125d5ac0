// The malloc/free-heavy workload of the overhead benchmark. Deliberately NOT linked to
// liveheap: overhead_bench runs this one binary bare and under each LD_PRELOAD (liveheap
// off/sampled/exact, heaptrack, jemalloc), so every row times exactly the same code.
//
//   alloc_loop [--threads N] [--pairs M] [--depth D] [--sites 1|2|4] [--route NAME]
//
// Each thread descends D non-inlined frames (default 18: with thread start-up, the loop
// and the call site, malloc is called 25 frames deep, the depth of the performance
// targets in docs/ARCHITECTURE.md), then
// replaces blocks of 16-512 B in small rings from 4 call sites chosen at random, half
// malloc/free and half operator new/delete (liveheap hooks both). One replacement (an
// allocation and a free) is a "pair". --sites 1 takes every pair from the first site (a
// malloc): every allocation from one stack, what exact mode's caches see at their best;
// --sites 2 from the first two.
// With --route, each thread runs inside a request of that route (liveheap_request_begin,
// looked up at run time: the cost of tagging allocations with their request).
// Prints `ns_per_pair=` (wall clock) and `cpu_ns_per_pair=` (the thread's CPU time: what
// other processes on a shared machine cannot inflate), each the mean over threads of each
// thread's time per pair; and, on jemalloc, `jemalloc_prof=0|1` (was its profiler on?).
#include <dlfcn.h>
#include <time.h>

#include <algorithm>
#include <barrier>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <numeric>
#include <thread>
#include <vector>

namespace {

constexpr int kSites = 4;
constexpr unsigned kRing = 64;  // live blocks per site: a small working set, like a server's

struct Work {
  std::uint64_t rng = 0;      // xorshift state: sizes, sites and slots vary every pair
  std::uint64_t site_mask = kSites - 1;  // --sites - 1
  long pairs = 0;
  void* rings[kSites][kRing] = {};
  volatile std::uintptr_t sink = 0;  // keeps the frames and the block writes observable
};

std::uint64_t next_random(Work& w) {
  w.rng ^= w.rng << 13;
  w.rng ^= w.rng >> 7;
  w.rng ^= w.rng << 17;
  return w.rng;
}

// One call site: even sites use malloc/free, odd ones operator new/delete.
template <int Site>
[[gnu::noinline]] void replace_block(Work& w, unsigned slot, std::size_t size) {
  void* fresh;
  if constexpr (Site % 2 == 0) fresh = std::malloc(size);
  else fresh = ::operator new(size);
  static_cast<volatile char*>(fresh)[0] = static_cast<char>(size);  // touch it, as real code does
  void*& old = w.rings[Site][slot];
  if constexpr (Site % 2 == 0) std::free(old);
  else ::operator delete(old);
  old = fresh;
}

[[gnu::noinline]] void run_pairs(Work& w, long pairs) {
  for (long i = 0; i < pairs; ++i) {
    const std::uint64_t r = next_random(w);
    const std::size_t size = 16 + (r >> 8) % 497;  // 16..512 B
    const unsigned slot = static_cast<unsigned>(r >> 32) % kRing;
    switch (r & w.site_mask) {
      case 0: replace_block<0>(w, slot, size); break;
      case 1: replace_block<1>(w, slot, size); break;
      case 2: replace_block<2>(w, slot, size); break;
      default: replace_block<3>(w, slot, size); break;
    }
  }
}

// The write after the recursive call keeps every frame on the stack (no tail call, no loop).
[[gnu::noinline]] void descend(Work& w, int depth, long pairs) {
  if (depth > 0) {
    descend(w, depth - 1, pairs);
    w.sink = w.sink + static_cast<std::uintptr_t>(depth);
    return;
  }
  run_pairs(w, pairs);
}

void free_rings(Work& w) {
  for (int s = 0; s < kSites; ++s)
    for (void* p : w.rings[s]) (s % 2 == 0) ? std::free(p) : ::operator delete(p);
}

double now_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

long parse_long(const char* flag, const char* text) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < 0) {
    std::fprintf(stderr, "alloc_loop: %s wants a non-negative integer, got '%s'\n", flag, text);
    std::exit(2);
  }
  return value;
}

// jemalloc answers mallctl("opt.prof"); glibc has no mallctl. Looked up at run time so this
// binary needs no jemalloc to build.
void report_jemalloc_profiling() {
  using Mallctl = int (*)(const char*, void*, std::size_t*, void*, std::size_t);
  const auto mallctl = reinterpret_cast<Mallctl>(dlsym(RTLD_DEFAULT, "mallctl"));
  if (mallctl == nullptr) return;
  bool on = false;
  std::size_t length = sizeof on;
  if (mallctl("opt.prof", &on, &length, nullptr, 0) != 0) on = false;
  std::printf("jemalloc_prof=%d\n", on ? 1 : 0);
}

// Opens a request of `route` on this thread, when liveheap's C API is loaded.
void begin_request(const char* route) {
  using Begin = void (*)(const char*);
  if (route == nullptr) return;
  if (const auto begin = reinterpret_cast<Begin>(dlsym(RTLD_DEFAULT, "liveheap_request_begin")))
    begin(route);
}

}  // namespace

int main(int argc, char** argv) {
  long threads = 1, pairs = 2'000'000, depth = 18, sites = kSites;
  const char* route = nullptr;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--threads") == 0) threads = parse_long(argv[i], argv[i + 1]);
    else if (std::strcmp(argv[i], "--pairs") == 0) pairs = parse_long(argv[i], argv[i + 1]);
    else if (std::strcmp(argv[i], "--depth") == 0) depth = parse_long(argv[i], argv[i + 1]);
    else if (std::strcmp(argv[i], "--sites") == 0) sites = parse_long(argv[i], argv[i + 1]);
    else if (std::strcmp(argv[i], "--route") == 0) route = argv[i + 1];
    else {
      std::fprintf(stderr,
                   "usage: alloc_loop [--threads N] [--pairs M] [--depth D] [--sites 1|2|4] "
                   "[--route NAME]\n");
      return 2;
    }
  }
  if (sites != 1 && sites != 2 && sites != kSites) {
    std::fprintf(stderr, "alloc_loop: --sites wants 1, 2 or 4, got %ld\n", sites);
    return 2;
  }
  if (threads < 1) threads = 1;

  std::vector<double> wall_ns(static_cast<std::size_t>(threads));
  std::vector<double> cpu_ns(static_cast<std::size_t>(threads));
  std::barrier start_line(threads);
  std::vector<std::thread> workers;
  for (long t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      begin_request(route);
      Work w;
      w.rng = 0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(t + 1);
      w.site_mask = static_cast<std::uint64_t>(sites - 1);
      descend(w, static_cast<int>(depth), pairs / 10);  // warm-up: first stacks, heap pages
      start_line.arrive_and_wait();
      const double wall_begin = now_ns(CLOCK_MONOTONIC);
      const double cpu_begin = now_ns(CLOCK_THREAD_CPUTIME_ID);
      descend(w, static_cast<int>(depth), pairs);
      cpu_ns[static_cast<std::size_t>(t)] = now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu_begin;
      wall_ns[static_cast<std::size_t>(t)] = now_ns(CLOCK_MONOTONIC) - wall_begin;
      free_rings(w);
    });
  }
  for (std::thread& w : workers) w.join();

  const double per_pair = static_cast<double>(threads) * static_cast<double>(std::max(pairs, 1L));
  std::printf("ns_per_pair=%.2f\ncpu_ns_per_pair=%.2f\n",
              std::accumulate(wall_ns.begin(), wall_ns.end(), 0.0) / per_pair,
              std::accumulate(cpu_ns.begin(), cpu_ns.end(), 0.0) / per_pair);
  report_jemalloc_profiling();
  return 0;
}
