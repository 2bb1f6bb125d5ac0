// Interned stacks' frames, decoded from the engine's records (which keep them coded) into
// one array: what a report symbolizes. 8 B a frame for as long as the report runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace liveheap::tracker {

class DecodedStacks {
 public:
  // Appends the frames of stack `id`; false (nothing appended) for an id not interned.
  bool add(std::uint32_t id);
  std::size_t size() const noexcept { return ends_.size(); }
  // One span per stack added, in order; valid until the next add().
  std::vector<std::span<const std::uintptr_t>> spans() const;

 private:
  std::vector<std::uintptr_t> frames_;
  std::vector<std::size_t> ends_;  // where each stack's frames end in frames_
};

}  // namespace liveheap::tracker
