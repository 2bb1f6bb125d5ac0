// Many distinct stacks: a recursion `--depth` calls deep that branches at random
// among three call sites at every level, so nearly every allocation has a stack of its
// own. It allocates `--allocs` blocks of `--size` bytes and keeps 5 of every 9 (900,000
// allocations: 500,000 live 64-byte blocks, a 32 MB heap, ~900,000 distinct stacks).
// Runs unmodified under LD_PRELOAD; it never links liveheap.
//
//   many_stacks [options]            allocate, then print what liveheap's tables cost per
//                                    distinct stack (read through dlsym when preloaded)
//   many_stacks --phases [options]   print READY, wait for a line on stdin, allocate, print
//                                    "ALLOCATED <live blocks> <live bytes> <allocations>",
//                                    wait for stdin to close, free everything and exit
//
// Options: --allocs N (900000), --depth D (20), --size BYTES (64), --seed S (1),
// --keep K (5): blocks kept of every 9 allocated (9: none freed).
// Between READY and ALLOCATED the program allocates nothing but the blocks it reports.
#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "liveheap/tracker.hpp"  // types only: the functions are looked up with dlsym

namespace {

std::uint64_t g_rng = 1;
std::size_t g_size = 64;

std::uint64_t next_random() {
  // splitmix64: repeatable for a seed.
  std::uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Three call sites per level, each followed by code of its own so that the compiler can
// neither merge them nor turn them into tail calls: three return addresses per level.
[[gnu::noinline]] void* descend(int depth) {
  if (depth == 0) return std::malloc(g_size);
  void* p;
  switch (next_random() % 3) {
    case 0: p = descend(depth - 1); asm volatile("nop" ::: "memory"); break;
    case 1: p = descend(depth - 1); asm volatile("nop\n nop" ::: "memory"); break;
    default: p = descend(depth - 1); asm volatile("nop\n nop\n nop" ::: "memory"); break;
  }
  return p;
}

std::uint64_t parse(const char* text) { return std::strtoull(text, nullptr, 10); }

long rss_bytes() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(f);
  return resident * sysconf(_SC_PAGESIZE);
}

// One line on stdout, allocating nothing.
void say(const char* line) {
  if (write(1, line, std::strlen(line)) < 0 || write(1, "\n", 1) < 0) std::_Exit(2);
}

// What liveheap's tables hold, looked up with dlsym: the public functions when the full
// library is loaded (LIVEHEAP_ADDR and a variable only it reads, or a first report), else
// the preload library's own engine functions (tracker_memory() is engine::own_memory()),
// which have no cap figures.
struct TrackerFigures {
  bool found = false;
  bool cap_known = false;
  std::int64_t memory = 0;
  std::uint64_t stacks = 0;
  std::int64_t stack_table_bytes = 0;
  std::int64_t live_table_bytes = 0;
  liveheap::EngineStats stats{};  // when cap_known
};

template <typename Fn>
Fn look_up(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

TrackerFigures read_tracker_figures() {
  TrackerFigures f;
  // The mangled names of liveheap::tracker_memory() and engine_stats() (inline namespace v1).
  const auto tracker_memory = look_up<std::int64_t (*)()>("_ZN8liveheap2v114tracker_memoryEv");
  const auto engine_stats = look_up<liveheap::EngineStats (*)()>("_ZN8liveheap2v112engine_statsEv");
  if (tracker_memory != nullptr && engine_stats != nullptr) {
    f.stats = engine_stats();
    f.found = f.cap_known = true;
    f.memory = tracker_memory();
    f.stacks = f.stats.stacks;
    f.stack_table_bytes = f.stats.stack_table_bytes;
    f.live_table_bytes = f.stats.live_table_bytes;
    return f;
  }
  const auto own_memory = look_up<std::int64_t (*)()>("_ZN8liveheap6engine10own_memoryEv");
  const auto stack_count = look_up<std::uint64_t (*)()>("_ZN8liveheap6engine11stack_countEv");
  const auto stack_table = look_up<std::int64_t (*)()>("_ZN8liveheap6engine17stack_table_bytesEv");
  const auto live_table = look_up<std::int64_t (*)()>("_ZN8liveheap6engine16live_table_bytesEv");
  if (own_memory == nullptr || stack_count == nullptr || stack_table == nullptr || live_table == nullptr) return f;
  f.found = true;
  f.memory = own_memory();
  f.stacks = stack_count();
  f.stack_table_bytes = stack_table();
  f.live_table_bytes = live_table();
  return f;
}

// Reads stdin up to and including a newline (or EOF): no allocation.
bool wait_line() {
  char c = 0;
  for (;;) {
    const ssize_t n = read(0, &c, 1);
    if (n <= 0) return false;
    if (c == '\n') return true;
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool phases = false;
  std::uint64_t allocs = 900000;
  int depth = 20;
  std::uint64_t keep_of_9 = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : "0";
    if (arg == "--phases") phases = true;
    else if (arg == "--allocs") allocs = parse(value), ++i;
    else if (arg == "--depth") depth = static_cast<int>(parse(value)), ++i;
    else if (arg == "--size") g_size = parse(value), ++i;
    else if (arg == "--seed") g_rng = parse(value), ++i;
    else if (arg == "--keep") keep_of_9 = parse(value), ++i;
    else {
      std::fprintf(stderr, "many_stacks: unknown argument %s\n", arg.c_str());
      return 2;
    }
  }
  // Reserved before READY: nothing between READY and ALLOCATED allocates but the blocks.
  auto** keep = static_cast<void**>(std::malloc(allocs * sizeof(void*) + 1));
  std::memset(keep, 0, allocs * sizeof(void*));
  char line[160];

  const TrackerFigures before = read_tracker_figures();
  const long rss_before = rss_bytes();

  if (phases) {
    say("READY");
    if (!wait_line()) return 1;
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::uint64_t live = 0;
  for (std::uint64_t i = 0; i < allocs; ++i) {
    keep[i] = descend(depth);
    if (i % 9 < 9 - keep_of_9) {  // freed again at once: their stacks stay interned
      std::free(keep[i]);
      keep[i] = nullptr;
    } else {
      ++live;
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (phases) {
    std::snprintf(line, sizeof line, "ALLOCATED %llu %llu %llu",
                  static_cast<unsigned long long>(live),
                  static_cast<unsigned long long>(live * g_size),
                  static_cast<unsigned long long>(allocs));
    say(line);
    while (wait_line()) {
    }
  } else {
    std::snprintf(line, sizeof line, "%llu allocations, %llu live blocks of %zu B, depth %d: %.2f s",
                  static_cast<unsigned long long>(allocs), static_cast<unsigned long long>(live),
                  g_size, depth, seconds);
    say(line);
    std::snprintf(line, sizeof line, "rss: %.1f MiB -> %.1f MiB", rss_before / 1048576.0,
                  rss_bytes() / 1048576.0);
    say(line);
    const TrackerFigures after = read_tracker_figures();
    if (after.found) {
      const std::uint64_t stacks = after.stacks - before.stacks;
      std::snprintf(line, sizeof line,
                    "distinct stacks: %llu new (%llu in all); tracker memory: %.1f MiB -> %.1f MiB",
                    static_cast<unsigned long long>(stacks), static_cast<unsigned long long>(after.stacks),
                    before.memory / 1048576.0, after.memory / 1048576.0);
      say(line);
      std::snprintf(line, sizeof line, "tracker memory per new distinct stack: %.1f B",
                    stacks == 0 ? 0.0 : static_cast<double>(after.memory - before.memory) / stacks);
      say(line);
      std::snprintf(line, sizeof line,
                    "of which: stack table %.1f MiB (%.1f B per stack), live-block table %.1f MiB",
                    after.stack_table_bytes / 1048576.0,
                    after.stacks == 0 ? 0.0 : static_cast<double>(after.stack_table_bytes) / after.stacks,
                    after.live_table_bytes / 1048576.0);
      say(line);
      if (after.cap_known) {
        const liveheap::EngineStats& s = after.stats;
        std::snprintf(line, sizeof line,
                      "cap %.1f MiB%s: %llu allocations (%lld B) folded, %llu dropped (%lld B)",
                      s.cap.max_bytes / 1048576.0, s.cap.reached ? " reached" : "",
                      static_cast<unsigned long long>(s.cap.folded_blocks),
                      static_cast<long long>(s.cap.folded_bytes),
                      static_cast<unsigned long long>(s.cap.dropped_blocks),
                      static_cast<long long>(s.cap.dropped_bytes));
        say(line);
      }
    } else {
      say("(liveheap is not preloaded: no tracker figures)");
    }
  }
  for (std::uint64_t i = 0; i < allocs; ++i) std::free(keep[i]);
  std::free(keep);
  return 0;
}
