// The verdict's end-to-end target: serves "requests" (one every 10 ms) until it reads "idle" on
// stdin, then allocates nothing until stdin closes. Each request exercises the shapes the
// verdict must tell apart, each at its own line:
//   leak     a 4 KiB block leaked by every request (sampled at 16 KiB, its estimate must
//            outgrow 5 standard errors over the recent window: ~1.2 MiB at 4 MiB);
//   bursty   a 64 KiB block leaked by one request in 250;
//   lru      an LRU of 512 entries of 4 KiB, a new key every request (fills in ~5 s, then
//            evicts one entry for each it inserts);
//   cache    a cache of 64 entries of 32 KiB that holds all its keys: a miss every 8th
//            request while it fills (~5 s), then only hits (a oneDNN primitive cache's shape);
//   startup  2 MiB made before the first request and kept.
// Prints "LINES leak=N bursty=N lru=N cache=N startup=N" at start and "IDLE" once it stopped.
// Not reformatted: an allocation and the __LINE__ that names it share a line or a fixed offset.
// clang-format off
#include <poll.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>

namespace {

struct Lines {
  int leak = 0, bursty = 0, lru = 0, cache = 0, startup = 0;
} g_lines;

struct Leaked {
  Leaked* next;
  char payload[4088];
};
Leaked* g_leaked = nullptr;
void* g_bursts = nullptr;
std::deque<void*> g_lru;
std::array<void*, 64> g_cache{};
void* g_startup = nullptr;

// Touches a block so that the allocation cannot be elided.
void* touched(void* block, std::size_t size) {
  std::memset(block, 1, size);
  asm volatile("" : : "r"(block) : "memory");
  return block;
}

[[gnu::noinline]] void leak_one() {
  auto* node = static_cast<Leaked*>(std::malloc(sizeof(Leaked))); g_lines.leak = __LINE__;
  node->next = g_leaked;
  g_leaked = node;
}

[[gnu::noinline]] void leak_burst() {
  void** block = static_cast<void**>(std::malloc(64 * 1024)); g_lines.bursty = __LINE__;
  *block = g_bursts;
  g_bursts = block;
}

[[gnu::noinline]] void lru_insert() {
  g_lru.push_back(touched(std::malloc(4096), 4096)); g_lines.lru = __LINE__;
  if (g_lru.size() > 512) std::free(g_lru.front()), g_lru.pop_front();
}

[[gnu::noinline]] void cache_lookup(std::size_t key) {
  if (g_cache[key] == nullptr) { g_cache[key] = touched(std::malloc(32 * 1024), 32 * 1024); } g_lines.cache = __LINE__;
}

[[gnu::noinline]] void make_startup_state() {
  g_startup = touched(std::malloc(2 << 20), 2 << 20); g_lines.startup = __LINE__;
}

[[gnu::noinline]] void serve_one(std::size_t request) {
  void* buffer = touched(std::malloc(64 * 1024), 64 * 1024);
  std::free(buffer);
  leak_one();
  if (request % 250 == 0) leak_burst();
  lru_insert();
  cache_lookup((request / 8) % g_cache.size());
}

// A line from stdin if one is ready within `timeout_ms`; "" otherwise, "EOF" at its end.
std::string read_command(int timeout_ms) {
  pollfd in{0, POLLIN, 0};
  if (::poll(&in, 1, timeout_ms) <= 0) return "";
  char buffer[64];
  const ssize_t n = ::read(0, buffer, sizeof buffer);
  if (n <= 0) return "EOF";
  return std::string(buffer, static_cast<std::size_t>(n));
}

}  // namespace

int main() {
  make_startup_state();
  std::size_t request = 0;
  serve_one(request++);  // every line is known from here on
  std::printf("LINES leak=%d bursty=%d lru=%d cache=%d startup=%d\n", g_lines.leak, g_lines.bursty,
              g_lines.lru, g_lines.cache, g_lines.startup);
  std::fflush(stdout);
  for (;;) {  // a request every 10 ms
    const std::string command = read_command(10);
    if (command == "EOF") return 0;
    if (command.starts_with("idle")) break;
    serve_one(request++);
  }
  std::printf("IDLE\n");
  std::fflush(stdout);
  while (read_command(-1) != "EOF") {
  }
  return 0;
}
