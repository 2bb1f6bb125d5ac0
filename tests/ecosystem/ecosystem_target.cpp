// The process the ecosystem tests profile: exact tracing (or what LIVEHEAP_MODE and
// LIVEHEAP_SAMPLE_INTERVAL say, when set), an AdminServer on a free port, and known
// allocations at known lines, made when stdin says so.
//   prints "port N", then for each command line: "step1" -> leaks A and B and a transient
//   loop; "step2" -> leak C; "many" -> 20,000 blocks of 4 KiB kept and 50,000 of 1 KiB
//   allocated and freed (enough for sampled mode's estimates); "strings" -> 5 strings kept,
//   each allocated through std::string's own code (allocation plumbing); "request" -> 4
//   blocks of 2500 B kept by a request of route "POST /upload". Each answers
//   "<name> LINE BYTES COUNT" lines, then "ok".
// Not reformatted: an allocation and the __LINE__ that names it share a line or a fixed offset.
// clang-format off
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "liveheap/http.hpp"
#include "liveheap/request_scope.hpp"
#include "liveheap/tracker.hpp"

namespace {

std::vector<void*> g_kept;
std::vector<std::string> g_strings;

void report(const char* name, int line, long bytes, long count) {
  std::cout << name << " " << line << " " << bytes << " " << count << std::endl;
}

[[gnu::noinline]] void step1() {
  g_kept.reserve(64);
  int line = 0;
  for (int i = 0; i < 5; ++i) {
    g_kept.push_back(std::malloc(1000)); line = __LINE__;
  }
  report("leak_a", line, 5000, 5);
  g_kept.push_back(new char[3000]); report("leak_b", __LINE__, 3000, 1);
  for (int i = 0; i < 123; ++i) {
    void* p = std::malloc(64); line = __LINE__; std::memset(p, 1, 8); std::free(p);
  }
  report("transient", line, 123 * 64, 123);
}

[[gnu::noinline]] void step2() {
  int line = 0;
  for (int i = 0; i < 7; ++i) {
    g_kept.push_back(std::malloc(2048)); line = __LINE__;
  }
  report("leak_c", line, 7 * 2048, 7);
}

// Many blocks at two lines: what sampled estimates are checked against.
[[gnu::noinline]] void many() {
  constexpr long kKept = 20000;
  constexpr long kChurn = 50000;
  g_kept.reserve(g_kept.size() + kKept);  // the vector's own growth stays off these lines
  int line = 0;
  for (long i = 0; i < kKept; ++i) {
    g_kept.push_back(std::malloc(4096)); line = __LINE__;
  }
  report("kept", line, kKept * 4096, kKept);
  for (long i = 0; i < kChurn; ++i) {
    void* p = std::malloc(1024); line = __LINE__; std::memset(p, 1, 8); std::free(p);
  }
  report("churn", line, kChurn * 1024, kChurn);
}

// Memory that std::string's code asks for: the stack's leaf is the allocator's plumbing.
[[gnu::noinline]] void strings() {
  g_strings.reserve(g_strings.size() + 5);  // the vector's own growth stays off the line
  int line = 0;
  for (int i = 0; i < 5; ++i) {
    g_strings.emplace_back(3000, 'x'); line = __LINE__;
  }
  report("strings", line, 5 * 3001, 5);
}

// One request of a route, which keeps what it allocates.
[[gnu::noinline]] void request() {
  g_kept.reserve(g_kept.size() + 4);
  liveheap::RequestScope scope("POST /upload");
  int line = 0;
  for (int i = 0; i < 4; ++i) {
    g_kept.push_back(std::malloc(2500)); line = __LINE__;
  }
  report("upload", line, 4 * 2500, 4);
}

}  // namespace

int main() {
  liveheap::Options options{liveheap::Mode::exact, 64};
  if (std::getenv("LIVEHEAP_MODE") != nullptr) options = liveheap::options_from_environment(liveheap::Mode::exact).value();
  liveheap::start(options);
  liveheap::http::AdminServer server({}, "127.0.0.1", 0);
  std::cout << "port " << server.port() << std::endl;
  std::string command;
  while (std::getline(std::cin, command)) {
    if (command == "step1") step1();
    else if (command == "step2") step2();
    else if (command == "many") many();
    else if (command == "strings") strings();
    else if (command == "request") request();
    std::cout << "ok" << std::endl;
  }
  return 0;
}
