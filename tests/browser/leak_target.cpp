// The browser test's patient: a program with two known leaks behind the liveheap admin
// server. One callsite grows by kRequestBytes on every tick without bound (a leak); one
// capped cache grows by kShapeBytes per tick until it holds kCacheCapacity entries, then
// replaces its oldest entry on each tick (flat: a cache that warmed up, not a leak).
//
// Usage: [LIVEHEAP_HISTORY_INTERVAL=S] leak_target [--port N] [--token T] [--tick-ms MS] [--paused]
// Prints "port N" once serving. Reads commands on stdin, one per line, answering each:
//   pause | resume | tick N (N ticks now) | free N (frees the N latest leaked buffers) | quit
// The test finds the two allocation lines by their "LEAK:" markers below.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>

#include <unistd.h>

#include "liveheap/http.hpp"
#include "liveheap/tracker.hpp"

namespace {

constexpr std::size_t kRequestBytes = 100 * 1024;
constexpr std::size_t kShapeBytes = 64 * 1024;
constexpr std::size_t kCacheCapacity = 12;
constexpr std::size_t kMaxLeaks = 1 << 16;

// Fixed arrays, not containers: their bookkeeping must not be a third growing callsite.
std::mutex tick_mutex;  // guards everything below
bool running = true;    // the timer ticks only while set ("pause" clears it)
char* leaked[kMaxLeaks];
std::size_t leaked_count = 0;
char* cache[kCacheCapacity];
std::size_t cache_inserts = 0;
std::size_t ticks = 0;

}  // namespace

// A per-request buffer nobody frees: the leak the dashboard must call "growing".
__attribute__((noinline)) void leak_request_buffer() {
  if (leaked_count == kMaxLeaks) return;
  leaked[leaked_count++] = new char[kRequestBytes];  // LEAK:grow
}

// A cache keyed by input shape, capped: it must read "plateaued" once full.
__attribute__((noinline)) void fill_shape_cache() {
  std::size_t slot = cache_inserts++ % kCacheCapacity;
  delete[] cache[slot];
  cache[slot] = new char[kShapeBytes];  // LEAK:cache
}

void tick(bool from_timer) {
  std::lock_guard lock(tick_mutex);
  if (from_timer && !running) return;  // checked under the lock: nothing ticks after "ok pause"
  leak_request_buffer();
  fill_shape_cache();
  ++ticks;
}

int main(int argc, char** argv) {
  std::uint16_t port = 0;
  std::string token;
  int tick_ms = 200;
  bool paused = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&] {
      if (i + 1 == argc) {
        std::cerr << arg << " needs a value\n";
        std::exit(2);
      }
      return std::string(argv[++i]);
    };
    if (arg == "--port") port = static_cast<std::uint16_t>(std::stoi(value()));
    else if (arg == "--token") token = value();
    else if (arg == "--tick-ms") tick_ms = std::stoi(value());
    else if (arg == "--paused") paused = true;
    else {
      std::cerr << "unknown argument " << arg << "\n";
      return 2;
    }
  }

  // Exact mode always; the history's interval from LIVEHEAP_HISTORY_INTERVAL, as a preloaded
  // program reads it (the browser test wants a point a second).
  liveheap::Options options;
  options.mode = liveheap::Mode::exact;
  if (const auto env = liveheap::options_from_environment(liveheap::Mode::exact))
    options.history_interval_s = env->history_interval_s;
  liveheap::start(options);
  liveheap::http::AdminServer server({.token = token}, "127.0.0.1", port);
  std::cout << "port " << server.port() << std::endl;

  running = !paused;
  std::thread timer([tick_ms] {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(tick_ms));
      tick(true);
    }
  });
  timer.detach();  // ends with the process

  for (std::string line; std::getline(std::cin, line);) {
    if (line.rfind("tick ", 0) == 0) {
      for (int n = std::atoi(line.c_str() + 5); n > 0; --n) tick(false);
    } else if (line.rfind("free ", 0) == 0) {  // shrinkage, for the flame graph's green
      std::lock_guard lock(tick_mutex);
      for (int n = std::atoi(line.c_str() + 5); n > 0 && leaked_count > 0; --n)
        delete[] leaked[--leaked_count];
    } else if (line == "quit") {
      return 0;
    } else if (line != "pause" && line != "resume") {
      std::cout << "error unknown command " << line << std::endl;
      continue;
    }
    std::lock_guard lock(tick_mutex);
    if (line == "pause" || line == "resume") running = line == "resume";
    std::cout << "ok " << line << " ticks=" << ticks << std::endl;
  }
  // Stdin closed (started detached from a terminal): serve until killed.
  for (;;) pause();
}
