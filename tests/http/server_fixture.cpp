// Allocations at a known line for the http tests to find in reports.
// Not reformatted: an allocation and the __LINE__ that names it share a line or a fixed offset.
// clang-format off
#include "server_fixture.hpp"

namespace http_test {
namespace {

[[gnu::noinline]] void allocate_at_known_line(std::vector<void*>& blocks, int count,
                                              std::size_t size) {
  for (int i = 0; i < count; ++i)
    blocks[static_cast<std::size_t>(i)] = std::malloc(size);
}
constexpr int kMallocLine = __LINE__ - 2;

}  // namespace

const int kKnownLine = kMallocLine;

KnownAllocations::KnownAllocations(int count, std::size_t size)
    : blocks(static_cast<std::size_t>(count)) {
  allocate_at_known_line(blocks, count, size);
}

KnownAllocations::~KnownAllocations() {
  for (void* block : blocks) std::free(block);
}

nlohmann::json find_known(const nlohmann::json& report) {
  for (const nlohmann::json& stat : report.at("stats")) {
    const std::string file = stat.value("file", "");
    if (stat.value("line", 0) == kKnownLine && file.ends_with(kKnownFile)) return stat;
  }
  return nullptr;
}

// A block kept `depth` calls deep: each depth is a stack of its own.
[[gnu::noinline]] void* keep_at_depth(int depth) {
  if (depth > 0) {
    void* block = keep_at_depth(depth - 1);
    asm volatile("" ::: "memory");  // not a tail call: each level stays a frame
    return block;
  }
  return std::malloc(64);
}

}  // namespace http_test
