#include "decoded_stacks.hpp"

#include "engine.hpp"

namespace liveheap::tracker {

bool DecodedStacks::add(std::uint32_t id) {
  std::uintptr_t frames[engine::kMaxStackFrames];
  const std::uint32_t depth = engine::stack_frames(id, frames);
  if (depth == 0) return false;
  frames_.insert(frames_.end(), frames, frames + depth);
  ends_.push_back(frames_.size());
  return true;
}

std::vector<std::span<const std::uintptr_t>> DecodedStacks::spans() const {
  std::vector<std::span<const std::uintptr_t>> out;
  out.reserve(ends_.size());
  std::size_t start = 0;
  for (const std::size_t end : ends_) {
    out.emplace_back(frames_.data() + start, end - start);
    start = end;
  }
  return out;
}

}  // namespace liveheap::tracker
