// A thread's young blocks (young_table.hpp): what runs off the owner's allocation path.
#include "young_table.hpp"

namespace liveheap::engine {

LiveBlock YoungTable::evict(Slot& slot, std::uintptr_t k, std::uintptr_t ptr, MoveFn move) noexcept {
  const std::uint64_t value = slot.value.load(std::memory_order_relaxed);
  if (k == ptr) {
    if (slot.key.compare_exchange_strong(k, kEmpty, std::memory_order_acq_rel)) return unpack_block(value);
    return {};
  }
  // Marked, so that a thread freeing it meanwhile waits and then looks in the live table;
  // the mark goes when the caller writes the new key. (A failed exchange: freed meanwhile.)
  if (slot.key.compare_exchange_strong(k, k | kMoving, std::memory_order_acq_rel))
    move(k, unpack_block(value));
  return {};
}

YoungTable::Claim YoungTable::claim(std::uintptr_t ptr, LiveBlock* removed) noexcept {
  Slot& slot = slots_[index(ptr)];
  std::uintptr_t k = slot.key.load(std::memory_order_acquire);
  if (k == (ptr | kMoving)) return Claim::moving;
  if (k != ptr) return Claim::absent;
  const std::uint64_t value = slot.value.load(std::memory_order_relaxed);
  if (slot.key.compare_exchange_strong(k, kEmpty, std::memory_order_acq_rel)) {
    *removed = unpack_block(value);
    return Claim::claimed;
  }
  return k == (ptr | kMoving) ? Claim::moving : Claim::absent;  // the owner began to move it
}

void YoungTable::clear(void (*visit)(void* ctx, const LiveBlock& block), void* ctx) noexcept {
  for (Slot& slot : slots_) {
    std::uintptr_t k = slot.key.load(std::memory_order_acquire);
    // A moving block is on its way into the live table, whose clear takes it (or, when
    // that clear passed its shard already, leaves it there and counted).
    if (k == kEmpty || (k & kMoving) != 0) continue;
    const std::uint64_t value = slot.value.load(std::memory_order_relaxed);
    if (slot.key.compare_exchange_strong(k, kEmpty, std::memory_order_acq_rel))
      visit(ctx, unpack_block(value));
  }
}

void YoungTable::repair_after_fork(bool (*in_live)(std::uintptr_t ptr)) noexcept {
  // The fork held the live table's locks: the move's insert there was made or not begun,
  // and where it was not, the slot's value is still the moving block's.
  for (Slot& slot : slots_) {
    const std::uintptr_t k = slot.key.load(std::memory_order_relaxed);
    if ((k & kMoving) == 0) continue;
    const std::uintptr_t ptr = k & ~kMoving;
    slot.key.store(in_live(ptr) ? kEmpty : ptr, std::memory_order_relaxed);
  }
}

std::uint64_t YoungTable::size() const noexcept {
  std::uint64_t n = 0;
  for (const Slot& slot : slots_) n += slot.key.load(std::memory_order_relaxed) != kEmpty;
  return n;
}

}  // namespace liveheap::engine
