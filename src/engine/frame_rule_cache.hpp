// Frame rules by code address, shared by every thread, so each return address's CFI is
// read once per process rather than once per allocation.
// Thread-safety: lookup() is lock-free and may run on any thread at any time; insert()
// takes a try-lock and skips caching when it is busy (it runs inside malloc, where waiting
// on a lock a signal handler's interrupted thread holds could deadlock); clear() blocks.
// Slots are (key, rule) pairs of two words: a reader loads the key, the rule, then the key
// again, so a slot cleared and refilled under it is seen as a miss, never as another
// key's rule. Grown tables are retired, not unmapped: a reader may still be inside one.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "frame_rules.hpp"
#include "spin_lock.hpp"

namespace liveheap::engine {

class FrameRuleCache {
 public:
  // A reader's view of the current table, held for one stack walk.
  struct View {
    const void* table;
  };
  View view() const noexcept { return {table_.load(std::memory_order_acquire)}; }

  // The packed rule cached for `key` (a return address minus one, or an exact pc), or 0.
  static std::uint64_t lookup(View view, std::uintptr_t key) noexcept {
    const auto* t = static_cast<const Table*>(view.table);
    if (t == nullptr) return 0;
    for (std::size_t i = slot_of(key, t->mask);; i = (i + 1) & t->mask) {
      const Slot& s = t->slots[i];
      const std::uintptr_t k = s.key.load(std::memory_order_acquire);
      if (k == key) {
        const std::uint64_t bits = s.rule.load(std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_acquire);
        return s.key.load(std::memory_order_relaxed) == key ? bits : 0;
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

 private:
  struct Slot {
    std::atomic<std::uintptr_t> key;  // 0: empty
    std::atomic<std::uint64_t> rule;  // FrameRule::pack(); 0 while being filled or cleared
  };
  struct Table {
    std::size_t mask;  // capacity - 1 (a power of two)
    std::atomic<std::size_t> used;  // written under lock_
    Table* retired;    // the smaller table this one replaced
    Slot slots[];
  };
  // Code addresses vary in their low bits; folding in the page number separates objects.
  // (A shift and an xor: a multiply here sat on the walk's critical path, ~2 cycles/frame.)
  static std::size_t slot_of(std::uintptr_t key, std::size_t mask) noexcept {
    return static_cast<std::size_t>(key ^ (key >> 12)) & mask;
  }
  bool grow() noexcept;  // under lock_
  static void put(Table* t, std::uintptr_t key, std::uint64_t bits) noexcept;

  std::atomic<Table*> table_{nullptr};
  std::atomic<std::uint32_t> generation_{0};
  SpinLock lock_;
};

}  // namespace liveheap::engine
