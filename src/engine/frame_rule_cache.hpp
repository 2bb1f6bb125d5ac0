// Frame rules by code address, shared by every thread, so each return address's CFI is
// read once per process rather than once per allocation.
// Thread-safety: lookup() is lock-free and may run on any thread at any time; insert()
// takes a try-lock and skips caching when it is busy (it runs inside malloc, where waiting
// on a lock a signal handler's interrupted thread holds could deadlock); clear() blocks.
// Slots are (key, rule) pairs of two words: a reader loads the key, the rule, then the key
// again, so a slot cleared and refilled under it is seen as a miss, never as another
// key's rule. A slot's key carries the low bits of the generation it was filled in (a
// slot is filled once per generation): a slot cleared, filled with another key and then
// with this key again while a reader sat between its loads holds another tag.
// Grown tables are retired, not unmapped: a reader may still be inside one.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "frame_rules.hpp"
#include "spin_lock.hpp"

namespace liveheap::engine {

class FrameRuleCache {
 public:
  // A reader's view of the current table, for keys of `generation()` (read before).
  struct View {
    const void* table;
    std::uintptr_t tag;  // the generation's tag, xored into keys
  };
  View view(std::uint32_t generation) const noexcept {
    return {table_.load(std::memory_order_acquire), tag_of(generation)};
  }
  View view() const noexcept { return view(generation()); }

  // The packed rule cached for `key` (a return address minus one, or an exact pc), or 0.
  static std::uint64_t lookup(View view, std::uintptr_t key) noexcept {
    const auto* t = static_cast<const Table*>(view.table);
    if (t == nullptr) return 0;
    const std::uintptr_t tagged = key ^ view.tag;
    for (std::size_t i = slot_of(key, t->mask);; i = (i + 1) & t->mask) {
      const Slot& s = t->slots[i];
      const std::uintptr_t k = s.key.load(std::memory_order_acquire);
      if (k == tagged) {
        const std::uint64_t bits = s.rule.load(std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_acquire);
        return s.key.load(std::memory_order_relaxed) == tagged ? bits : 0;
      }
      if (k == 0) return 0;
    }
  }

  // Read before computing a rule and handed to insert(): a rule computed from code that
  // was unloaded meanwhile is not cached.
  std::uint32_t generation() const noexcept { return generation_.load(std::memory_order_acquire); }
  void insert(std::uintptr_t key, FrameRule rule, std::uint32_t generation) noexcept;
  // Forgets every rule (code was unloaded; a new object may load at the same addresses).
  void clear() noexcept;

  std::size_t size() const noexcept;

  void lock_for_fork() noexcept { lock_.lock(); }
  void unlock_after_fork() noexcept { lock_.unlock(); }
  bool any_locked() const noexcept { return lock_.is_locked(); }

 private:
  struct Slot {
    std::atomic<std::uintptr_t> key;  // 0: empty
    std::atomic<std::uint64_t> rule;  // FrameRule::pack(); 0 while being filled or cleared
  };
  struct Table {
    std::size_t mask;               // capacity - 1 (a power of two)
    std::atomic<std::size_t> used;  // written under lock_
    Table* retired;                 // the smaller table this one replaced
    Slot slots[];
  };
  // Code addresses vary in their low bits; folding in the page number separates objects.
  // (A shift and an xor: a multiply here sat on the walk's critical path, ~2 cycles/frame.)
  static std::size_t slot_of(std::uintptr_t key, std::size_t mask) noexcept {
    return static_cast<std::size_t>(key ^ (key >> 12)) & mask;
  }
  // Above the 47 bits of a user-space code address; a reader would have to sit between
  // two loads for 2^16 clears (each an unloaded object) to meet its tag again.
  static std::uintptr_t tag_of(std::uint32_t generation) noexcept {
    return static_cast<std::uintptr_t>(generation & 0xffff) << 48;
  }
  bool grow() noexcept;  // under lock_
  static void put(Table* t, std::uintptr_t key, std::uintptr_t tag, std::uint64_t bits) noexcept;

  std::atomic<Table*> table_{nullptr};
  std::atomic<std::uint32_t> generation_{0};
  alignas(64) SpinLock lock_;
};

}  // namespace liveheap::engine
