// Keeps 3 blocks of 1000 bytes at a known line and checks that the installed library's
// snapshot finds exactly them there: the public API links and works from outside, with
// liveheap::liveheap alone (no nlohmann_json: the core headers must not include it).
// Not reformatted: an allocation and the __LINE__ that names it share a line or a fixed offset.
// clang-format off
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <liveheap/tracker.hpp>

#ifdef NLOHMANN_JSON_VERSION_MAJOR
#error "liveheap/tracker.hpp brought nlohmann_json in; only liveheap/json.hpp may"
#endif

int main() {
  liveheap::Options options;
  options.mode = liveheap::Mode::exact;
  liveheap::start(options);
  std::vector<void*> kept;
  kept.reserve(3);
  const unsigned line = __LINE__ + 1;
  for (int i = 0; i < 3; ++i) kept.push_back(std::malloc(1000));
  const liveheap::Snapshot snapshot = liveheap::take_snapshot();
  long bytes = 0, blocks = 0;
  for (const auto& stat : snapshot.statistics(liveheap::KeyType::line)) {
    if (stat.traceback.empty()) continue;
    const liveheap::Frame& frame = stat.traceback.front();
    if (frame.file.ends_with("consumer/main.cpp") && frame.line == line) {
      bytes += stat.size;
      blocks += stat.count;
    }
  }
  std::printf("main.cpp:%u size=%ld count=%ld\n", line, bytes, blocks);
  for (void* p : kept) std::free(p);
  return bytes == 3000 && blocks == 3 ? 0 : 1;
}
