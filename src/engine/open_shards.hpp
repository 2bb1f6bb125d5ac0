// A sharded open-addressing map from pointer to LiveBlock, generic over how an entry packs
// the two (LiveTable keeps a compact 12-byte layout and a rare wide 16-byte one).
// Thread-safety: each shard under its own SpinLock. Entries live in mmap'd arrays (linear
// probing, backward-shift deletion: no tombstones to leak or rehash), grown by a quarter at
// 3/4 load. `Entry` provides: key() (the pointer, 0 for an empty slot), block(), and
// static make(ptr, block); a value-initialized Entry is empty.
#pragma once

#include <cstddef>
#include <cstdint>

#include "spin_lock.hpp"
#include "stack_table.hpp"

namespace liveheap::engine {

struct LiveBlock {
  std::uint64_t size = 0;  // requested bytes
  StackId stack = kNoStack;
};

template <typename Entry>
class OpenShards {
 public:
  constexpr explicit OpenShards(RoomCheck room) noexcept : room_(room) {}

  // Inserts or replaces (*found: whether it replaced; *replaced: the entry it replaced).
  // False when the shard cannot grow: nothing changed.
  // Both inlined into LiveTable's: a call per table cost ~20 instructions per allocation
  // and per free.
  [[gnu::always_inline]] bool insert(std::uintptr_t ptr, LiveBlock block, LiveBlock* replaced,
                                     bool* found) noexcept;
  [[gnu::always_inline]] bool remove(std::uintptr_t ptr, LiveBlock* removed) noexcept;
  bool contains(std::uintptr_t ptr) noexcept;
  void clear(void (*visit)(void* ctx, const LiveBlock& block), void* ctx) noexcept;
  std::uint64_t size() const noexcept;
  std::int64_t memory_bytes() const noexcept;
  void lock_for_fork() noexcept;
  void unlock_after_fork() noexcept;

 private:
  // One line: whoever takes the lock reads the rest.
  struct alignas(64) Shard {
    SpinLock lock;
    Entry* slots = nullptr;   // capacity entries
    std::size_t capacity = 0; // slots, 0 before the first insert
    std::size_t used = 0;
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
  Shard& shard_for(std::uintptr_t ptr, std::uint64_t h) noexcept {
    const std::uint64_t group = ((ptr >> kRegionShift) * 0x9e3779b97f4a7c15ull) >> (64 - kGroupBits);
    return shards_[group << kSubShardBits | h >> (64 - kSubShardBits)];  // home_slot: the rest
  }
  bool grow(Shard& shard) noexcept;
  static void erase_at(Shard& shard, std::size_t i) noexcept;
  [[gnu::always_inline]] static std::size_t find(const Shard& shard, std::uintptr_t ptr,
                                                 std::uint64_t h) noexcept;

  Shard shards_[kShards];
  RoomCheck room_ = nullptr;
};

}  // namespace liveheap::engine
