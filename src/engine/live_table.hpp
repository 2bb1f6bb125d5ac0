// Live blocks: pointer -> (requested size, stack id), one entry per traced block.
// Thread-safety: sharded by pointer hash, each shard under its own SpinLock, so threads
// freeing unrelated blocks rarely meet. Entries are 16 bytes in mmap'd open-addressing
// arrays (linear probing, backward-shift deletion: no tombstones to leak or rehash),
// grown by a quarter at 3/4 load.
#pragma once

#include <cstddef>
#include <cstdint>

#include "spin_lock.hpp"
#include "stack_table.hpp"

namespace liveheap::engine {

struct LiveBlock {
  std::uint64_t size = 0;  // requested bytes (capped at 2^40 - 1)
  StackId stack = kNoStack;
};

class LiveTable {
 public:
  // `room`: asked before a shard grows (nullptr: never refused; then insert drops a block).
  constexpr explicit LiveTable(RoomCheck room = nullptr) noexcept : room_(room) {}

  static constexpr unsigned kSizeBits = 64 - kStackIdBits;
  static constexpr std::uint64_t kMaxSize = (std::uint64_t{1} << kSizeBits) - 1;

  // Inserts or replaces. A replaced entry (a stale block whose free was never seen) is
  // returned in `*replaced` so the caller can take it off its stack's totals.
  // Returns false when the table cannot grow (out of memory, or the room check refused):
  // the record is dropped.
  bool insert(std::uintptr_t ptr, LiveBlock block, LiveBlock* replaced) noexcept;
  // Removes the entry and returns it; false when `ptr` is not traced.
  bool remove(std::uintptr_t ptr, LiveBlock* removed) noexcept;
  bool contains(std::uintptr_t ptr) noexcept;

  // Empties the table, calling visit(ctx, block) for every entry removed, under its
  // shard's lock (so running totals and entries never disagree).
  void clear(void (*visit)(void* ctx, const LiveBlock& block), void* ctx) noexcept;

  std::uint64_t size() const noexcept;
  std::int64_t memory_bytes() const noexcept;

  void lock_for_fork() noexcept;
  void unlock_after_fork() noexcept;

 private:
  struct Entry {
    std::uintptr_t ptr;    // 0 = empty slot
    std::uint64_t packed;  // size << kStackIdBits | stack
  };
  struct alignas(64) Shard {
    SpinLock lock;
    Entry* slots = nullptr;   // capacity entries
    std::size_t capacity = 0; // slots, 0 before the first insert
    std::size_t used = 0;
  };
  // Shards come in groups, one group per 64 MiB region of addresses: glibc gives each
  // thread its own arena (64 MiB-aligned heaps), so threads mostly lock shards of their
  // own group and their lock lines stay in their own core's cache. Within a group the
  // top bits of the block's hash pick the shard.
  static constexpr unsigned kGroupBits = 4;
  static constexpr unsigned kSubShardBits = 4;
  static constexpr unsigned kRegionShift = 26;
  static constexpr std::size_t kShards = std::size_t{1} << (kGroupBits + kSubShardBits);

  static std::uint64_t hash(std::uintptr_t ptr) noexcept;
  static Shard& shard_for(Shard* shards, std::uintptr_t ptr, std::uint64_t h) noexcept {
    const std::uint64_t group = ((ptr >> kRegionShift) * 0x9e3779b97f4a7c15ull) >> (64 - kGroupBits);
    return shards[group << kSubShardBits | h >> (64 - kSubShardBits)];  // home_slot: the rest
  }
  bool grow(Shard& shard) noexcept;
  static void erase_at(Shard& shard, std::size_t i) noexcept;
  static std::size_t find(const Shard& shard, std::uintptr_t ptr, std::uint64_t h) noexcept;

  Shard shards_[kShards];
  RoomCheck room_ = nullptr;
};

}  // namespace liveheap::engine
