// A thread's young blocks: the traced blocks it allocated last, kept out of the shared live
// table (live_table.hpp) until another of its blocks needs their slot. Most of a server's
// blocks are freed by the thread that made them within a few hundred of its allocations (a
// Beast request's: 92 % within 128), so most allocations and frees touch one slot of their
// own thread's table: no probe run, no shard, no lock taken.
//
// Direct-mapped: a block has one slot (its address's hash). An allocation whose slot holds
// another block moves that one into the live table (evict()); a free looks at its block's
// slot, then in the live table.
//
// Thread-safety: the owner thread alone writes a key that is not 0. Any thread may claim a
// block by a compare-exchange of its key to 0: the owner's free, another thread's free of
// the block, a clear; the value is read before and is the block's when the exchange
// succeeds (the owner writes a slot's value only after its key stopped being that block's).
// A block on its way into the live table carries kMoving in its key: another thread that
// frees it waits for the mark to go, then finds it there. The owner's own frees (and its
// signal handlers') never wait: they do not find a moving block in its slot, and a handler
// that frees the very block its interrupted thread is moving finds it in neither place and
// leaves it counted (free() in a handler is not async-signal-safe in the first place).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "open_shards.hpp"  // LiveBlock

namespace liveheap::engine {

class YoungTable {
 public:
  static constexpr unsigned kSlotBits = 10;
  static constexpr std::uint32_t kSlots = 1u << kSlotBits;

  // What the owner does with a block its table's slot held (evict()).
  using MoveFn = void (*)(std::uintptr_t ptr, const LiveBlock& block);
  // What claim() found.
  enum class Claim { claimed, absent, moving };

  // Owner: records `ptr`; the block its slot held goes to move() first (a stale entry of
  // `ptr` itself, whose free was never seen, is handed back in *replaced instead). False
  // when a block this large does not fit an entry: the caller records it elsewhere.
  [[gnu::always_inline]] bool insert(std::uintptr_t ptr, LiveBlock block, LiveBlock* replaced,
                                     MoveFn move) noexcept;
  // Owner: takes `ptr` out of its slot; false when it is not there.
  [[gnu::always_inline]] bool remove_own(std::uintptr_t ptr, LiveBlock* removed) noexcept {
    return take(ptr, removed);
  }
  // Any thread: takes `ptr` out of another thread's table.
  Claim claim(std::uintptr_t ptr, LiveBlock* removed) noexcept;
  // Any thread: takes every block out, visit(ctx, block) for each.
  void clear(void (*visit)(void* ctx, const LiveBlock& block), void* ctx) noexcept;
  // A fork's child, where the thread that was moving a block is gone: a moving block goes
  // back into its slot unless the live table has it (in_live).
  void repair_after_fork(bool (*in_live)(std::uintptr_t ptr)) noexcept;
  // Blocks held now (a scan: for /stats).
  std::uint64_t size() const noexcept;

 private:
  static constexpr std::uintptr_t kEmpty = 0;
  // Set in a key while its block moves (user-space addresses are below 2^63).
  static constexpr std::uintptr_t kMoving = std::uintptr_t{1} << 63;
  struct Slot {
    std::atomic<std::uintptr_t> key;
    // pack_block(), written before the key; read before a claim, and the
    // block's when the claim succeeds (an atomic: the owner may be rewriting it then).
    std::atomic<std::uint64_t> value;
  };
  static std::uint32_t index(std::uintptr_t ptr) noexcept {
    return static_cast<std::uint32_t>(((ptr >> 4) * 0x9e3779b97f4a7c15ull) >> (64 - kSlotBits));
  }
  // Claims `ptr` in its slot: true (and *removed) when the exchange took it.
  [[gnu::always_inline]] bool take(std::uintptr_t ptr, LiveBlock* removed) noexcept {
    Slot& slot = slots_[index(ptr)];
    std::uintptr_t k = slot.key.load(std::memory_order_acquire);
    if (k != ptr) return false;
    const std::uint64_t value = slot.value.load(std::memory_order_relaxed);
    if (!slot.key.compare_exchange_strong(k, kEmpty, std::memory_order_acq_rel)) return false;
    *removed = unpack_block(value);
    return true;
  }
  // The owner makes room in `slot` (holding `k`) for `ptr`; returns a stale entry of `ptr`
  // taken out (else an empty block). Out of line: most slots are empty. By value: a block
  // handed back through a pointer would keep the caller's in memory on every allocation.
  [[gnu::noinline]] LiveBlock evict(Slot& slot, std::uintptr_t k, std::uintptr_t ptr, MoveFn move) noexcept;

  Slot slots_[kSlots];
};

inline bool YoungTable::insert(std::uintptr_t ptr, LiveBlock block, LiveBlock* replaced,
                               MoveFn move) noexcept {
  if (block.size > kMaxPackedSize) [[unlikely]]
    return false;
  Slot& slot = slots_[index(ptr)];
  LiveBlock stale;
  if (const std::uintptr_t k = slot.key.load(std::memory_order_relaxed); k != kEmpty) [[unlikely]]
    stale = evict(slot, k, ptr, move);
  *replaced = stale;
  slot.value.store(pack_block(block), std::memory_order_relaxed);
  slot.key.store(ptr, std::memory_order_release);
  return true;
}

}  // namespace liveheap::engine
