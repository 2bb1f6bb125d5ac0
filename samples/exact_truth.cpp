// The exact-truth program: allocates known bytes at known lines and says what it did, so a
// test can check liveheap's answer against the truth. Runs unmodified under LD_PRELOAD.
//
//   exact_truth            allocate, print the sites, exit
//   exact_truth --phases   print BASELINE-READY, wait for a line on stdin, allocate, print
//                          ALLOCATED and one "SITE <file>:<line> <bytes> <count>" per site
//                          (a transient site has 0 0), then wait for a line and exit.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Site {
  int line;
  long bytes;
  long count;
};

std::vector<Site> g_sites;
std::vector<void*> g_keep;
char* g_array = nullptr;

int g_thread_line = 0;
[[gnu::noinline]] void thread_body() {
  g_keep.push_back(nullptr);  // reserved: no allocation
  g_keep.back() = std::malloc(3333); g_thread_line = __LINE__;
}

[[gnu::noinline]] void allocate_known() {
  for (int i = 0; i < 8; ++i) {
    g_keep.push_back(std::malloc(1000)); if (i == 0) g_sites.push_back({__LINE__, 8000, 8});
  }
  g_keep.push_back(std::calloc(10, 123)); g_sites.push_back({__LINE__, 1230, 1});
  g_array = new char[4096]; g_sites.push_back({__LINE__, 4096, 1});
  void* grown = std::malloc(10);
  grown = std::realloc(grown, 200000); g_sites.push_back({__LINE__, 200000, 1});
  g_keep.push_back(grown);
  void* aligned = nullptr;
  if (posix_memalign(&aligned, 256, 777) == 0) { g_keep.push_back(aligned); } g_sites.push_back({__LINE__, 777, 1});
  for (int i = 0; i < 100; ++i) {
    void* transient = std::malloc(50000); std::memset(transient, 1, 8); std::free(transient);
  }
  g_sites.push_back({__LINE__ - 2, 0, 0});
  std::thread(thread_body).join();
  g_sites.push_back({g_thread_line, 3333, 1});
}

}  // namespace

int main(int argc, char** argv) {
  // stdin's buffer is static: glibc would malloc it at the first read, which may come after
  // READY (a baseline taken then would count those 4 KiB as the program's growth).
  static char stdin_buffer[BUFSIZ];
  std::setvbuf(stdin, stdin_buffer, _IOFBF, sizeof stdin_buffer);
  const bool phases = argc > 1 && std::string(argv[1]) == "--phases";
  g_sites.reserve(64);  // so recording the sites allocates nothing at them
  g_keep.reserve(64);
  std::string line;
  if (phases) {
    std::printf("BASELINE-READY\n");
    std::fflush(stdout);
    if (!std::getline(std::cin, line)) return 1;
  }
  allocate_known();
  std::printf("ALLOCATED\n");
  for (const Site& s : g_sites)
    std::printf("SITE %s:%d %ld %ld\n", __FILE__, s.line, s.bytes, s.count);
  std::fflush(stdout);
  if (phases) std::getline(std::cin, line);
  for (void* p : g_keep) std::free(p);
  delete[] g_array;
  return 0;
}
