// Per thread, the frame rules last used: a direct-mapped cache indexed by the frame's stack
// address and code address together, checked against the code address (so a stale slot is
// a miss, never a wrong rule). Hot paths put the same frames at the same stack addresses
// call after call; the code address is in the index too because several call sites take
// turns at one stack address (a dispatch over handlers), and a slot per stack address
// alone sent them to the shared cache in turn (~45 instructions a miss). Most frames of a
// repeated stack are taken from the walk cache, so this serves the few walked afresh.
// Thread-safety: part of the thread's walk state (walk_state.hpp), used by its walks only.
#pragma once

#include <cstddef>
#include <cstdint>

namespace liveheap::engine {

struct RecentRules {
  static constexpr std::size_t kSlots = 128;  // 2 KiB
  struct Slot {
    std::uintptr_t key;
    std::uint64_t rule;  // FrameRule::pack()
  };
  std::uint32_t generation;  // the rule cache's generation the slots belong to
  Slot slots[kSlots];

  Slot& at(std::uintptr_t sp, std::uintptr_t key) noexcept {
    return slots[((sp >> 4) ^ key ^ (key >> 7)) & (kSlots - 1)];
  }
};

}  // namespace liveheap::engine
