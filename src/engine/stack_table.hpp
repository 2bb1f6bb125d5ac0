// Interned stacks: raw return addresses -> a small id, with live totals per stack.
// Thread-safety: find_or_insert and record/by_id are safe from any thread; lookups are
// lock-free, inserts take insert_lock_. Records are never freed, so a pointer or id stays
// valid for the life of the process (clear() writes the live totals off as freed).
// A stack's inline totals are written by one thread alone, its owner, with plain loads and
// stores (owned_totals()); every other writer adds atomically to shared slots or to the
// side totals (totals_for()).
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
// The deepest stack the table interns: a capture's frames and a route's (stack_capture.hpp).
inline constexpr std::uint32_t kMaxStackDepth = 256;
// The first stacks a table interns keep their frames raw, 8 B each, compared with a memcmp;
// the rest coded (frame_code.hpp), ~2 B each, compared as they are decoded (~11
// instructions a frame): a walk the memo does not know (a server's varied call sites,
// every Python allocation) looks its stack up by its frames, and most programs have a few
// thousand stacks, where the memory does not matter; past these (4 MiB of 25-frame
// records), memory per stack is what matters.
inline constexpr std::uint32_t kRawFrameStacks = 16384;

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

// Totals of one stack. Allocations add to alloc_*, frees to freed_*: live = alloc - freed,
// so keeping the cumulative figures costs no add more than keeping the live ones did (two
// per allocation, two per free). A copy may go negative (freed by another thread than
// allocated); the sum of a stack's copies does not.
struct StackTotals {
  std::atomic<std::int64_t> alloc_bytes;  // allocated since start-up (weighted in sampled mode)
  std::atomic<std::int64_t> alloc_count;  // blocks likewise, in 1/kCountUnit
  std::atomic<std::int64_t> freed_bytes;  // freed since start-up (or written off by clear())
  std::atomic<std::int64_t> freed_count;  // in 1/kCountUnit
};

// Which of a stack's totals an add goes to: alloc_* for an allocation, freed_* for a free.
enum class Side : std::uint8_t { alloc, freed };

// Thread slots (the engine's thread_slot()) below kOwnerSlots are one thread's each and may
// own a stack; the slot kOwnerSlots is shared by every thread past them and never owns one.
inline constexpr std::uint32_t kOwnerSlots = 256;

// Once a second thread adds to a stack, its threads add to kSharedSlots copies of the totals,
// one cache line each, so that they do not fight over one line.
inline constexpr unsigned kSharedSlots = 4;
struct alignas(64) SharedTotals {
  StackTotals totals;
};

// Most stacks are only ever used by one thread: they keep their totals inline (32 B) and
// never pay the 256 B of shared slots (which were 256 of a 25-frame stack's 512 B). Past
// the first kRawFrameStacks, frames are coded: a 25-frame stack's take 200 B raw, 30-80 B
// coded.
struct StackRecord {
  // The owner's alone, added to with plain loads and stores: the four locked adds of a
  // pair cost the Beast server 1.6 us a request (of 5.7 us that exact mode costs it).
  StackTotals totals;
  // nullptr until a thread other than the owner adds to the stack; then kSharedSlots copies,
  // never freed. Readers sum `totals`, every shared copy and the side totals.
  std::atomic<SharedTotals*> shared;
  StackId id;
  std::uint16_t depth;
  // thread_slot() + 1 of the first thread that added to the stack (0: none yet; claimed by
  // compare-exchange).
  std::atomic<std::uint16_t> owner;
  // Written before the record is published, never after: a reader of the code may load
  // the 8 bytes before it (frame_code.hpp).
  std::uint64_t hash;
  // The bytes of `code`, with kRawFrames set when they are the raw frames.
  std::uint16_t code_bytes;
  // `depth` return addresses, most recent first, raw (unaligned) or coded (frame_code.hpp):
  // read them with StackTable::frames().
  std::uint8_t code[];
  static constexpr std::uint16_t kRawFrames = 0x8000;
};
static_assert(offsetof(StackRecord, code) == 58, "the header of a record: see record_bytes()");

// Asked before the table maps more memory for a new stack: true when `bytes` more fit
// under the tracker-memory cap.
using RoomCheck = bool (*)(std::size_t bytes) noexcept;

class StackTable {
 public:
  // `room`: asked before mapping memory for a new stack (nullptr: never refused);
  // `raw_stacks`: how many stacks keep their frames raw (kRawFrameStacks).
  constexpr explicit StackTable(RoomCheck room = nullptr, std::uint32_t raw_stacks = kRawFrameStacks) noexcept
      : room_(room), raw_stacks_(raw_stacks) {}

  // The id of this stack, interning it on first sight; kNoStack when out of memory or ids,
  // or (`capped`) when interning it would need memory the room check refuses.
  // `hash` must be hash_frames(frames, depth).
  StackId find_or_insert(const std::uintptr_t* frames, std::uint32_t depth, std::uint64_t hash,
                         bool capped = true) noexcept;
  StackId find_or_insert(const std::uintptr_t* frames, std::uint32_t depth, bool capped = true) noexcept {
    return find_or_insert(frames, depth, hash_frames(frames, depth), capped);
  }
  // nullptr for kNoStack or an id not yet published. Inline: two calls per traced pair.
  // kNoStack (0) needs no test of its own: ids start at 1, so the first chunk's first slot
  // is never written and reads nullptr (as does a chunk not mapped yet).
  StackRecord* record(StackId id) const noexcept {
    static_assert(kNoStack == 0);
    StackRecord** chunk = by_id_[id >> kChunkBits].load(std::memory_order_acquire);
    return chunk == nullptr ? nullptr : chunk[id & ((1u << kChunkBits) - 1)];
  }
  // The `depth` frames of `r` into `out` (room for r->depth, at most kMaxStackDepth).
  static void frames(const StackRecord* r, std::uintptr_t* out) noexcept;
  // Ids run from 1 to size().
  std::uint32_t size() const noexcept { return count_.load(std::memory_order_acquire); }
  // Adds a block's (or a sample's weighted) bytes and count to r's totals on `side`, for
  // the thread with `thread_slot`: the owner with plain loads and stores (no locked
  // instruction), anyone else atomically.
  template <Side side>
  [[gnu::always_inline]] void add(StackRecord* r, std::uint32_t thread_slot, std::int64_t bytes,
                                  std::int64_t count) noexcept {
    if (StackTotals* mine = owned_totals(r, thread_slot)) [[likely]] {
      auto& b = side == Side::alloc ? mine->alloc_bytes : mine->freed_bytes;
      auto& c = side == Side::alloc ? mine->alloc_count : mine->freed_count;
      b.store(b.load(std::memory_order_relaxed) + bytes, std::memory_order_relaxed);
      c.store(c.load(std::memory_order_relaxed) + count, std::memory_order_relaxed);
      return;
    }
    StackTotals& totals = totals_for(r, thread_slot);
    auto& b = side == Side::alloc ? totals.alloc_bytes : totals.freed_bytes;
    auto& c = side == Side::alloc ? totals.alloc_count : totals.freed_count;
    b.fetch_add(bytes, std::memory_order_relaxed);
    c.fetch_add(count, std::memory_order_relaxed);
  }
  // The record's inline totals when the thread with `thread_slot` owns the stack and it has
  // no shared slots: then that thread alone writes them, and may add with a plain load and
  // store. nullptr otherwise (add atomically to totals_for()).
  StackTotals* owned_totals(StackRecord* r, std::uint32_t thread_slot) noexcept {
    // Relaxed: a stale null only sends the owner to its inline totals, still its own.
    if (r->shared.load(std::memory_order_relaxed) == nullptr &&
        r->owner.load(std::memory_order_relaxed) == thread_slot + 1) [[likely]]
      return &r->totals;
    return nullptr;
  }
  // The totals that the thread with `thread_slot` adds to atomically: the record's own
  // while it owns the stack (or has just claimed it); once a second thread has added, the
  // shared copy for its slot; when the room check refused the shared slots, the side
  // totals. Readers sum every copy; the choice keeps threads off each other's cache lines
  // and everyone but the owner off the inline totals.
  StackTotals& totals_for(StackRecord* r, std::uint32_t thread_slot) noexcept {
    // Shared slots first: once they exist the owner moves to them too, and the record's
    // line (which lookups read) is written no more.
    SharedTotals* shared = r->shared.load(std::memory_order_acquire);
    if (shared != nullptr) [[unlikely]]
      return shared[thread_slot % kSharedSlots].totals;
    if (r->owner.load(std::memory_order_relaxed) == thread_slot + 1) [[likely]]
      return r->totals;
    return totals_for_newcomer(r, thread_slot);
  }
  // totals_for() for a thread that is not the owner: claims an unowned stack, or shares it.
  [[gnu::noinline]] StackTotals& totals_for_newcomer(StackRecord* r, std::uint32_t thread_slot) noexcept;
  // The side totals of stack `id` (record `r`): added to atomically by a thread that is not
  // the owner when the stack has no shared slots (the room check refused them), and by a
  // clear that takes a block off its stack. Mapped for 4096 ids at a time on first use (32 B
  // an id; never refused: bounded by the stacks interned). When even that mapping fails,
  // r's inline totals (atomically), where only a racing owner's add could be lost: the
  // only time `r` is read, so a clear passes the block's id and loads no record per block.
  StackTotals& side_totals(StackId id, StackRecord* r) noexcept;
  // Readers: the side totals of stack `id`, or nullptr when none of its chunk were written.
  const StackTotals* side_totals_if_any(StackId id) const noexcept {
    const StackTotals* chunk = side_[id >> kChunkBits].load(std::memory_order_acquire);
    return chunk == nullptr ? nullptr : &chunk[id & ((1u << kChunkBits) - 1)];
  }
  // The shared slots of `r`, mapped on first call (under insert_lock_, from the records'
  // arena); nullptr when the room check refuses (or out of memory): then the caller adds to
  // the side totals, which is only slower.
  SharedTotals* share(StackRecord* r) noexcept;
  // Bytes mapped for the table: records, indexes (of retired ones, their first page), the id
  // directory, the side totals.
  std::int64_t memory_bytes() const noexcept { return mapped_.load(std::memory_order_relaxed); }

  // fork(): the child must not inherit a lock held by a thread that no longer exists.
  void lock_for_fork() noexcept { insert_lock_.lock(); }
  void unlock_after_fork() noexcept { insert_lock_.unlock(); }
  bool any_locked() const noexcept { return insert_lock_.is_locked(); }

 private:
  struct Index {
    std::size_t capacity;          // power of two
    Index* retired;                // older, smaller index (its header kept: readers may hold it)
    std::atomic<StackId> slots[];  // kNoStack: empty (4 B a slot where a pointer took 8)
  };
  static constexpr unsigned kChunkBits = 12;  // ids per directory chunk: 4096
  static constexpr std::size_t kChunks = (std::size_t{1} << kStackIdBits) >> kChunkBits;

  StackRecord* find(const Index* index, std::uint64_t hash, const std::uintptr_t* frames,
                    std::uint32_t depth) const noexcept;
  StackRecord* allocate_record(std::size_t bytes) noexcept;
  // `bytes` (a multiple of 8) from the arena aligned to `align`; nullptr when out of memory.
  void* allocate(std::size_t bytes, std::size_t align) noexcept;
  // The padding before `bytes` aligned to `align` in what is left of the arena, or kNoRoom
  // when they do not fit there (a new chunk would be mapped).
  static constexpr std::size_t kNoRoom = ~std::size_t{0};
  std::size_t arena_pad(std::size_t align, std::size_t bytes) const noexcept;
  // What interning one more stack of `record_bytes` would map now (0: nothing).
  std::size_t bytes_to_map(std::size_t record_bytes) const noexcept;
  static std::size_t index_bytes(std::size_t capacity) noexcept;
  void* map(std::size_t bytes) noexcept;
  bool grow_index() noexcept;
  // The pages of a retired index past its header, given back (readers may hold it).
  void release_retired(Index* old) noexcept;
  bool publish(StackRecord* record) noexcept;

  std::atomic<Index*> index_{nullptr};
  std::atomic<std::uint32_t> count_{0};
  std::atomic<StackRecord**> by_id_[kChunks] = {};  // guarded by insert_lock_ for writes
  std::atomic<StackTotals*> side_[kChunks] = {};    // side_totals(): compare-exchange
  alignas(64) SpinLock insert_lock_;
  // Bump arena for records and shared slots, guarded by insert_lock_.
  char* arena_ = nullptr;
  std::size_t arena_left_ = 0;
  RoomCheck room_ = nullptr;
  std::uint32_t raw_stacks_ = kRawFrameStacks;
  std::atomic<std::int64_t> mapped_{0};
};

}  // namespace liveheap::engine
