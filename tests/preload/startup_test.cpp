// What a preloaded process maps as it starts: the preload library alone (libc only), and
// nothing else of liveheap's, unless a variable needs the full library (docs/ARCHITECTURE.md,
// "Start-up"). The process here is cat reading its own maps at once: short-lived, as most
// preloaded processes are.
#include <array>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

namespace {

// The maps of `cat /proc/self/maps` run with LD_PRELOAD=the preload library and `env`.
std::string maps_under(const std::string& env) {
  const std::string command =
      "env LD_PRELOAD=" LIVEHEAP_PRELOAD_PATH " " + env + " cat /proc/self/maps 2>/dev/null";
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  std::array<char, 4096> buffer;
  while (std::size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe)) out.append(buffer.data(), n);
  pclose(pipe);
  return out;
}

bool maps(const std::string& all, const char* library) { return all.find(library) != std::string::npos; }

TEST(PreloadStartup, AProcessThatAsksNothingMapsThePreloadLibraryAlone) {
  for (const char* env : {"LIVEHEAP_MODE=off", "LIVEHEAP_MODE=sampled", "LIVEHEAP_MODE=exact",
                          "LIVEHEAP_MODE=sampled LIVEHEAP_FRAMES=64 LIVEHEAP_SAMPLE_INTERVAL=65536 "
                          "LIVEHEAP_MAX_TRACKER_MEMORY=256MiB LIVEHEAP_HISTORY_INTERVAL=5",
                          // The early endpoint: registered on its own thread, nothing loaded
                          // (tracing off: with it on, a cat slowed past 100 ms would load the
                          // full library for its recorders, as it should).
                          "LIVEHEAP_MODE=off LIVEHEAP_ADDR=127.0.0.1:0", "LIVEHEAP_MODE=off LIVEHEAP_ADDR=0",
                          "LIVEHEAP_MODE=off LIVEHEAP_ADDR='[::1]:0'"}) {
    const std::string all = maps_under(env);
    EXPECT_TRUE(maps(all, "/libliveheap_preload.so")) << env << "\n" << all;
    for (const char* absent : {"libliveheap_preload_full.so", "libstdc++", "libm.so", "libgcc_s", "libunwind",
                               "libboost", "libz.so"})
      EXPECT_FALSE(maps(all, absent)) << env << " mapped " << absent << "\n" << all;
  }
}

TEST(PreloadStartup, AVariableOnlyTheFullLibraryReadsLoadsItAtStart) {
  for (const char* env : {"LIVEHEAP_PLUMBING=function:arena_*", "LIVEHEAP_MODE=bogus",
                          "LIVEHEAP_ADDR=localhost:0", "LIVEHEAP_ADDR=127.0.0.1:0 LIVEHEAP_TOKEN=t0ken"}) {
    const std::string all = maps_under(env);
    EXPECT_TRUE(maps(all, "/libliveheap_preload_full.so")) << env << "\n" << all;
  }
}

}  // namespace
