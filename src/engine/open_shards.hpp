// A sharded open-addressing map from pointer to LiveBlock, generic over how an entry packs
// the two (LiveTable keeps a compact 12-byte layout and a rare wide 16-byte one).
// Thread-safety: each shard under its own SpinLock. Entries live in mmap'd arrays (linear
// probing, backward-shift deletion: no tombstones to leak or rehash), grown by a quarter at
// 3/4 load. `Entry` provides: key() (the pointer, 0 for an empty slot), block(), and
// static make(ptr, block); a value-initialized Entry is empty.
#pragma once

#include <atomic>

#include <cstddef>
#include <cstdint>

#include "spin_lock.hpp"
#include "stack_table.hpp"

namespace liveheap::engine {

struct LiveBlock {
  std::uint64_t size = 0;  // requested bytes
  StackId stack = kNoStack;
};

// A block in one word, size << kStackIdBits | stack, for sizes up to kMaxPackedSize: the
// live table's wide entries and the young tables' slots (young_table.hpp).
inline constexpr std::uint64_t kMaxPackedSize = (std::uint64_t{1} << (64 - kStackIdBits)) - 1;
inline std::uint64_t pack_block(const LiveBlock& b) noexcept { return b.size << kStackIdBits | b.stack; }
inline LiveBlock unpack_block(std::uint64_t packed) noexcept {
  return {packed >> kStackIdBits, static_cast<StackId>(packed & kMaxStacks)};
}

template <typename Entry>
class OpenShards {
 public:
  constexpr explicit OpenShards(RoomCheck room) noexcept : room_(room) {}

  // Inserts or replaces (*found: whether it replaced; *replaced: the entry it replaced).
  // False when the shard cannot grow: nothing changed.
  // Both inlined into LiveTable's, and those into the engine's callers (below).
  [[gnu::always_inline]] bool insert(std::uintptr_t ptr, LiveBlock block, LiveBlock* replaced,
                                     bool* found) noexcept;
  [[gnu::always_inline]] bool remove(std::uintptr_t ptr, LiveBlock* removed) noexcept;
  bool contains(std::uintptr_t ptr) noexcept;
  void clear(void (*visit)(void* ctx, const LiveBlock& block), void* ctx) noexcept;
  std::uint64_t size() const noexcept;
  std::int64_t memory_bytes() const noexcept;
  void lock_for_fork() noexcept;
  void unlock_after_fork() noexcept;
  bool any_locked() const noexcept;

 private:
  // The slots of a shard without any: one empty entry, never written (an insert into it
  // grows the shard first), so that a lookup there finds an empty slot at once, with no
  // test of its own.
  static inline Entry no_slots_{};
  // One line: whoever takes the lock reads the rest.
  struct alignas(64) Shard {
    SpinLock lock;
    Entry* slots = &no_slots_;  // capacity entries (no_slots_ while capacity is 0)
    std::size_t capacity = 0;   // slots, 0 before the first insert
    std::size_t used = 0;
    // 3/4 of capacity: a new entry when `used` is there grows the shard first (linear
    // probing stays short). 0 while there are no slots, so one compare also says that.
    std::size_t grow_at = 0;
  };
  static_assert(sizeof(Shard) == 64);
  // Shards come in groups, one group per 64 MiB region of addresses: glibc gives each
  // thread its own arena (64 MiB-aligned heaps), so threads mostly lock shards of their
  // own group and their lock lines stay in their own core's cache. Within a group the
  // top bits of the block's hash pick the shard.
  static constexpr unsigned kGroupBits = 4;
  static constexpr unsigned kSubShardBits = 4;
  static constexpr unsigned kRegionShift = 26;
  static constexpr std::size_t kShards = std::size_t{1} << (kGroupBits + kSubShardBits);

  [[gnu::always_inline]] static std::uint64_t hash(std::uintptr_t ptr) noexcept;
  // Home slot of a hash in a table of `capacity` slots (any capacity, not only powers of
  // two): the multiply-high range reduction, on the bits the shard choice did not use.
  static std::size_t home_slot(std::uint64_t h, std::size_t capacity) noexcept {
    const std::uint64_t bits = h << kSubShardBits;  // the shard's own bits dropped
    return static_cast<std::size_t>((static_cast<unsigned __int128>(bits) * capacity) >> 64);
  }
  static std::size_t next_slot(std::size_t i, std::size_t capacity) noexcept {
    return ++i == capacity ? 0 : i;
  }
  // A shard's count is written under its lock but read without it by size() (/stats): both
  // sides atomic, or the read is a data race (TSan found it).
  static void set_used(std::size_t& used, std::size_t value) noexcept {
    __atomic_store_n(&used, value, __ATOMIC_RELAXED);
  }
  Shard& shard_for(std::uintptr_t ptr, std::uint64_t h) noexcept {
    const std::uint64_t group = ((ptr >> kRegionShift) * 0x9e3779b97f4a7c15ull) >> (64 - kGroupBits);
    Shard* shard = &shards_[group << kSubShardBits | h >> (64 - kSubShardBits)];  // home_slot: the rest
    // The shard's address, computed once: left to itself the compiler recomputes it from
    // its index at each use in the hooks (two instructions each).
    asm("" : "+r"(shard));
    return *shard;
  }
  bool grow(Shard& shard) noexcept;
  // An insert into a shard at grow_at (or without slots): a replacement as any other, a new
  // entry after growing. Out of line: rare, and the hooks' inlined insert stays short.
  [[gnu::noinline]] bool insert_growing(Shard& shard, std::uintptr_t ptr, std::uint64_t h, LiveBlock block,
                                        LiveBlock* replaced, bool* found) noexcept;
  // The probe: the slot holding `ptr`, or the empty slot that ends its run (where an
  // insert puts it). Without slots: no_slots_, whose one entry is empty (home_slot is 0).
  [[gnu::always_inline]] static std::size_t probe(const Shard& shard, std::uintptr_t ptr,
                                                  std::uint64_t h) noexcept;
  // Empties slot i. Inline; the backward shift of the entries after it (out of line)
  // only when its probe run goes on past it.
  [[gnu::always_inline]] static void erase_at(Shard& shard, std::size_t i) noexcept;
  // Pulls the later entries of the probe run through i back into it; returns the slot
  // left empty.
  static std::size_t shift_back(Shard& shard, std::size_t i) noexcept;

  Shard shards_[kShards];
  RoomCheck room_ = nullptr;
  // Whether any shard ever had slots: a clear of a table never used (the live table in
  // sampled mode, or at the first start) touches none of its 16 KiB of shard lines.
  std::atomic<bool> grown_{false};
};

// The probe and the insert and remove of a pointer, here so that they inline into the
// engine's allocation and free paths (a call to each cost ~20 instructions of saved
// registers per allocation and per free); growing and the backward shift of a deletion stay
// out of line (live_table.cpp, for the two entry layouts).
template <typename Entry>
[[gnu::always_inline]] inline std::uint64_t OpenShards<Entry>::hash(std::uintptr_t ptr) noexcept {
  // Blocks are 16-byte aligned; Fibonacci hashing spreads consecutive ones.
  std::uint64_t x = static_cast<std::uint64_t>(ptr >> 4) * 0x9e3779b97f4a7c15ull;
  return x ^ (x >> 32);
}

template <typename Entry>
[[gnu::always_inline]] inline std::size_t OpenShards<Entry>::probe(const Shard& shard, std::uintptr_t ptr,
                                                                   std::uint64_t h) noexcept {
  std::size_t i = home_slot(h, shard.capacity);
  for (std::uintptr_t key; (key = shard.slots[i].key()) != 0 && key != ptr;) i = next_slot(i, shard.capacity);
  return i;
}

template <typename Entry>
[[gnu::always_inline]] inline bool OpenShards<Entry>::insert(std::uintptr_t ptr, LiveBlock block,
                                                             LiveBlock* replaced, bool* found) noexcept {
  const std::uint64_t h = hash(ptr);
  Shard& shard = shard_for(ptr, h);
  SpinGuard guard(shard.lock);
  if (shard.used >= shard.grow_at) [[unlikely]] {
    // Blocks of its own, copied out: the caller's never leave registers (as LiveTable's
    // wide calls).
    LiveBlock growing_replaced;
    bool growing_found = false;
    const bool inserted = insert_growing(shard, ptr, h, block, &growing_replaced, &growing_found);
    *replaced = growing_replaced;
    *found = growing_found;
    return inserted;
  }
  // One probe run: it ends at the entry, or at the empty slot the entry goes to.
  const std::size_t i = probe(shard, ptr, h);
  *found = shard.slots[i].key() != 0;
  *replaced = *found ? shard.slots[i].block() : LiveBlock{};
  shard.slots[i] = Entry::make(ptr, block);
  if (!*found) set_used(shard.used, shard.used + 1);
  return true;
}

template <typename Entry>
[[gnu::always_inline]] inline bool OpenShards<Entry>::remove(std::uintptr_t ptr,
                                                             LiveBlock* removed) noexcept {
  const std::uint64_t h = hash(ptr);
  Shard& shard = shard_for(ptr, h);
  SpinGuard guard(shard.lock);
  // probe()'s loop with its two ends as two exits: a free asking probe() and then testing
  // the slot it returned takes 1.1 instructions a pair more (callgrind).
  std::size_t i = home_slot(h, shard.capacity);
  for (std::uintptr_t key; (key = shard.slots[i].key()) != ptr; i = next_slot(i, shard.capacity))
    if (key == 0) return false;
  *removed = shard.slots[i].block();
  erase_at(shard, i);
  return true;
}

template <typename Entry>
[[gnu::always_inline]] inline void OpenShards<Entry>::erase_at(Shard& shard, std::size_t i) noexcept {
  // The entry after it empty (its probe run ends here): nothing to shift, no call.
  if (shard.slots[next_slot(i, shard.capacity)].key() != 0) i = shift_back(shard, i);
  shard.slots[i] = Entry{};
  set_used(shard.used, shard.used - 1);
}

}  // namespace liveheap::engine
