// Live blocks: pointer -> (requested size, stack id), one entry per traced block.
// Thread-safety: sharded by pointer hash, each shard under its own SpinLock, so threads
// freeing unrelated blocks rarely meet (open_shards.hpp).
//
// Entries are 12 bytes: a 48-bit pointer, a 24-bit stack id and a 24-bit size. At the
// tables' 0.6-0.75 load that is 16-20 B per live block, where 16-byte entries cost 21-27 B
// (a higher load instead would lengthen every probe of linear probing, and a probing scheme
// that stays short there, Robin Hood, moves entries on every insert). The rare block that
// does not fit (16 MiB or more, or a pointer at or above 2^48) has a wide 16-byte entry in
// a second table, looked at only while it holds any (one relaxed load).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "open_shards.hpp"
#include "stack_table.hpp"

namespace liveheap::engine {

class LiveTable {
 public:
  // `room`: asked before a shard grows (nullptr: never refused; then insert drops a block).
  constexpr explicit LiveTable(RoomCheck room = nullptr) noexcept : compact_(room), wide_(room) {}

  static constexpr std::uint64_t kMaxSize = kMaxPackedSize;

  // Inserts or replaces. A replaced entry (a stale block whose free was never seen) is
  // returned in `*replaced` so the caller can take it off its stack's totals.
  // Returns false when the table cannot grow (out of memory, or the room check refused):
  // the record is dropped.
  [[gnu::always_inline]] bool insert(std::uintptr_t ptr, LiveBlock block, LiveBlock* replaced) noexcept;
  // Removes the entry and returns it; false when `ptr` is not traced.
  [[gnu::always_inline]] bool remove(std::uintptr_t ptr, LiveBlock* removed) noexcept;
  bool contains(std::uintptr_t ptr) noexcept;

  // Empties the table, calling visit(ctx, block) for every entry removed, under its
  // shard's lock (so running totals and entries never disagree).
  void clear(void (*visit)(void* ctx, const LiveBlock& block), void* ctx) noexcept;

  std::uint64_t size() const noexcept;
  std::int64_t memory_bytes() const noexcept;
  // Blocks held in wide entries (tests look at it).
  std::uint64_t wide_size() const noexcept { return wide_.size(); }

  void lock_for_fork() noexcept;
  void unlock_after_fork() noexcept;
  bool any_locked() const noexcept;

  // 48-bit pointer | 24-bit stack | 24-bit size, unaligned (the array is what is packed).
  struct [[gnu::packed]] CompactEntry {
    static constexpr unsigned kPtrBits = 48;
    static constexpr unsigned kSizeBits = 24;
    static constexpr std::uint64_t kPtrMask = (std::uint64_t{1} << kPtrBits) - 1;
    std::uint64_t low = 0;   // ptr | stack's low 16 bits << 48
    std::uint32_t high = 0;  // stack's high 8 bits | size << 8
    static bool fits(std::uintptr_t ptr, const LiveBlock& b) noexcept {
      return ptr <= kPtrMask && b.size < (std::uint64_t{1} << kSizeBits);
    }
    std::uintptr_t key() const noexcept { return low & kPtrMask; }
    LiveBlock block() const noexcept {
      return {high >> 8, static_cast<StackId>(low >> kPtrBits | std::uint64_t{high & 0xff} << 16)};
    }
    static CompactEntry make(std::uintptr_t ptr, const LiveBlock& b) noexcept {
      return {ptr | std::uint64_t{b.stack & 0xffff} << kPtrBits,
              static_cast<std::uint32_t>((b.stack >> 16 & 0xff) | b.size << 8)};
    }
  };
  static_assert(sizeof(CompactEntry) == 12);
  static_assert(kStackIdBits == 24, "CompactEntry holds 24-bit stack ids");

  // The wide entry: the whole pointer, pack_block() (sizes capped at kMaxSize).
  struct WideEntry {
    std::uintptr_t ptr = 0;
    std::uint64_t packed = 0;
    std::uintptr_t key() const noexcept { return ptr; }
    LiveBlock block() const noexcept { return unpack_block(packed); }
    static WideEntry make(std::uintptr_t ptr, const LiveBlock& b) noexcept {
      return {ptr, pack_block({b.size > kMaxSize ? kMaxSize : b.size, b.stack})};
    }
  };

 private:
  bool has_wide() const noexcept { return wide_used_.load(std::memory_order_relaxed) != 0; }
  // The rare block that needs a wide entry; a stale wide entry of `ptr` taken out.
  [[gnu::noinline]] bool insert_wide(std::uintptr_t ptr, LiveBlock block, LiveBlock* replaced) noexcept;
  [[gnu::noinline]] bool remove_wide(std::uintptr_t ptr, LiveBlock* removed) noexcept;

  OpenShards<CompactEntry> compact_;
  OpenShards<WideEntry> wide_;
  // Entries in wide_, kept apart so that the common case looks at one relaxed counter.
  std::atomic<std::int64_t> wide_used_{0};
};

// A block lives in exactly one of the two tables: which one follows from its pointer and
// size, so an insert also takes a stale entry of the same pointer out of the other.
// Inline, for the compact table; the wide one's work is out of line (live_table.cpp).
// The out-of-line calls get blocks of their own, copied out: `*replaced`'s address never
// leaves the inlined code, so the caller's block stays in registers.
inline bool LiveTable::insert(std::uintptr_t ptr, LiveBlock block, LiveBlock* replaced) noexcept {
  if (!CompactEntry::fits(ptr, block)) [[unlikely]] {
    LiveBlock wide_replaced;
    const bool inserted = insert_wide(ptr, block, &wide_replaced);
    *replaced = wide_replaced;
    return inserted;
  }
  bool found = false;
  if (!compact_.insert(ptr, block, replaced, &found)) return false;
  if (!found && has_wide()) [[unlikely]] {
    LiveBlock stale;
    if (remove_wide(ptr, &stale)) *replaced = stale;
  }
  return true;
}

inline bool LiveTable::remove(std::uintptr_t ptr, LiveBlock* removed) noexcept {
  if (compact_.remove(ptr, removed)) [[likely]]
    return true;
  if (!has_wide()) return false;
  LiveBlock wide_removed;
  if (!remove_wide(ptr, &wide_removed)) return false;
  *removed = wide_removed;
  return true;
}

}  // namespace liveheap::engine
