// Interned stacks: raw return addresses -> a small id, with live totals per stack.
// Thread-safety: find_or_insert and record/by_id are safe from any thread; lookups are
// lock-free, inserts take insert_lock_. Records are never freed, so a pointer or id stays
// valid for the life of the process (clear() writes the live totals off as freed).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "spin_lock.hpp"

namespace liveheap::engine {

using StackId = std::uint32_t;
inline constexpr StackId kNoStack = 0;
inline constexpr unsigned kStackIdBits = 24;
inline constexpr StackId kMaxStacks = (1u << kStackIdBits) - 1;

// The hash of a stack, one frame at a time from the outermost: a multiply-rotate per frame,
// one full mix at the end (a full mix per frame cost ~400 instructions per 25-frame stack).
// Outermost first, so that the state after a stack's outer frames is the same whatever was
// called below them: the stack walk keeps it per frame and reuses it for a later stack with
// the same outer part (walk_cache.hpp). Internal to the process, never stored.
class StackHash {
 public:
  StackHash() noexcept = default;
  static StackHash resume(std::uint64_t state) noexcept {
    StackHash h;
    h.h_ = state;
    return h;
  }
  std::uint64_t state() const noexcept { return h_; }

  void add(std::uintptr_t frame) noexcept {
    h_ = (h_ ^ frame) * 0x100000001b3ull;
    h_ = (h_ << 23) | (h_ >> 41);
  }
  std::uint64_t finish(std::uint32_t depth) const noexcept {
    // splitmix64's finalizer: every input bit reaches every output bit.
    std::uint64_t x = h_ ^ depth;
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
  }

 private:
  std::uint64_t h_ = 0x9e3779b97f4a7c15ull;
};

// StackHash over `depth` frames (frames[depth - 1], the outermost, first); shared by the
// table, the stack walk and their tests.
std::uint64_t hash_frames(const std::uintptr_t* frames, std::uint32_t depth) noexcept;

// Totals of one stack, one cache line each: threads allocating from the same stack add to
// different slots, and never to the line that lookups read the key from. Allocations add
// to alloc_*, frees to freed_*: live = alloc - freed, so keeping the cumulative figures
// costs no atomic add more than keeping the live ones did (two per allocation, two per
// free). A slot may go negative (freed by another thread than allocated); sums do not.
inline constexpr unsigned kTotalSlots = 4;
struct alignas(64) StackTotals {
  std::atomic<std::int64_t> alloc_bytes;  // allocated since start-up (weighted in sampled mode)
  std::atomic<std::int64_t> alloc_count;  // blocks likewise, in 1/kCountUnit
  std::atomic<std::int64_t> freed_bytes;  // freed since start-up (or written off by clear())
  std::atomic<std::int64_t> freed_count;  // in 1/kCountUnit
};

struct StackRecord {
  StackTotals totals[kTotalSlots];  // summed by readers; see slot_for_this_thread()
  std::uint64_t hash;
  StackId id;
  std::uint32_t depth;
  std::uintptr_t frames[];  // `depth` return addresses, most recent first
};

// Asked before the table maps more memory for a new stack: true when `bytes` more fit
// under the tracker-memory cap.
using RoomCheck = bool (*)(std::size_t bytes) noexcept;

class StackTable {
 public:
  // `room`: asked before mapping memory for a new stack (nullptr: never refused).
  constexpr explicit StackTable(RoomCheck room = nullptr) noexcept : room_(room) {}

  // The id of this stack, interning it on first sight; kNoStack when out of memory or ids,
  // or (`capped`) when interning it would need memory the room check refuses.
  // `hash` must be hash_frames(frames, depth).
  StackId find_or_insert(const std::uintptr_t* frames, std::uint32_t depth,
                         std::uint64_t hash, bool capped = true) noexcept;
  StackId find_or_insert(const std::uintptr_t* frames, std::uint32_t depth,
                         bool capped = true) noexcept {
    return find_or_insert(frames, depth, hash_frames(frames, depth), capped);
  }
  // nullptr for kNoStack or an id not yet published.
  StackRecord* record(StackId id) const noexcept;
  // Ids run from 1 to size().
  std::uint32_t size() const noexcept { return count_.load(std::memory_order_acquire); }
  // Bytes mapped for the table: records, indexes (retired ones too), the id directory.
  std::int64_t memory_bytes() const noexcept { return mapped_.load(std::memory_order_relaxed); }

  // fork(): the child must not inherit a lock held by a thread that no longer exists.
  void lock_for_fork() noexcept { insert_lock_.lock(); }
  void unlock_after_fork() noexcept { insert_lock_.unlock(); }

 private:
  struct Index {
    std::size_t capacity;  // power of two
    Index* retired;        // older, smaller index (kept: readers may still hold it)
    std::atomic<StackRecord*> slots[];
  };
  static constexpr unsigned kChunkBits = 12;  // ids per directory chunk: 4096
  static constexpr std::size_t kChunks = (std::size_t{1} << kStackIdBits) >> kChunkBits;

  StackRecord* find(const Index* index, std::uint64_t hash, const std::uintptr_t* frames,
                    std::uint32_t depth) const noexcept;
  StackRecord* allocate_record(std::uint32_t depth) noexcept;
  // What interning one more stack of `depth` frames would map now (0: nothing).
  std::size_t bytes_to_map(std::uint32_t depth) const noexcept;
  static std::size_t index_bytes(std::size_t capacity) noexcept;
  void* map(std::size_t bytes) noexcept;
  bool grow_index() noexcept;
  bool publish(StackRecord* record) noexcept;

  std::atomic<Index*> index_{nullptr};
  std::atomic<std::uint32_t> count_{0};
  std::atomic<StackRecord**> by_id_[kChunks] = {};  // guarded by insert_lock_ for writes
  SpinLock insert_lock_;
  // Bump arena for records, guarded by insert_lock_.
  char* arena_ = nullptr;
  std::size_t arena_left_ = 0;
  RoomCheck room_ = nullptr;
  std::atomic<std::int64_t> mapped_{0};
};

}  // namespace liveheap::engine
