// Interning of stacks in mmap'd memory: lock-free reads, serialized inserts.
#include "stack_table.hpp"

#include <new>

#include "frame_code.hpp"
#include "pages.hpp"

namespace liveheap::engine {
namespace {

constexpr std::size_t kInitialIndexCapacity = 4096;
constexpr std::size_t kArenaChunk = 1 << 20;

// Rounded to 8 B only: the inline totals are one thread's (others get SharedTotals), so a
// record needs no line of its own. 25 frames: 58 + 30 to 80 B of code (200 B raw).
std::size_t record_bytes(std::size_t code_bytes) noexcept {
  return (offsetof(StackRecord, code) + code_bytes + 7) & ~std::size_t{7};
}
bool raw_frames(const StackRecord* r) noexcept { return (r->code_bytes & StackRecord::kRawFrames) != 0; }
const std::uint8_t* code_end(const StackRecord* r) noexcept { return r->code + r->code_bytes; }

// Out of line: inlined, its loop's registers made every lookup of a raw record save and
// restore six.
[[gnu::noinline]] bool has_coded_frames(const StackRecord* r, const std::uintptr_t* frames,
                                        std::uint32_t depth) noexcept {
  return same_frames(code_end(r), frames, depth);
}

bool has_frames(const StackRecord* r, const std::uintptr_t* frames, std::uint32_t depth) noexcept {
  if (raw_frames(r)) return __builtin_memcmp(r->code, frames, depth * sizeof(std::uintptr_t)) == 0;
  return has_coded_frames(r, frames, depth);
}
constexpr std::size_t kSharedBytes = sizeof(SharedTotals) * kSharedSlots;

std::size_t align_up(std::size_t n, std::size_t align) noexcept { return (n + align - 1) & ~(align - 1); }

}  // namespace

std::uint64_t hash_frames(const std::uintptr_t* frames, std::uint32_t depth) noexcept {
  StackHash hash;
  for (std::uint32_t i = depth; i-- > 0;) hash.add(frames[i]);
  return hash.finish(depth);
}

StackRecord* StackTable::find(const Index* index, std::uint64_t hash, const std::uintptr_t* frames,
                              std::uint32_t depth) const noexcept {
  if (index == nullptr) return nullptr;
  const std::size_t mask = index->capacity - 1;
  for (std::size_t i = hash & mask;; i = (i + 1) & mask) {
    const StackId id = index->slots[i].load(std::memory_order_acquire);
    if (id == kNoStack) return nullptr;
    // Published before its slot, its directory chunk before it: no checks for null.
    StackRecord* r = by_id_[id >> kChunkBits].load(std::memory_order_acquire)[id & ((1u << kChunkBits) - 1)];
    if (r->hash == hash && r->depth == depth && has_frames(r, frames, depth)) return r;
  }
}

StackId StackTable::find_or_insert(const std::uintptr_t* frames, std::uint32_t depth, std::uint64_t hash,
                                   bool capped) noexcept {
  if (StackRecord* r = find(index_.load(std::memory_order_acquire), hash, frames, depth)) return r->id;

  if (depth > kMaxStackDepth) return kNoStack;  // deeper than any capture
  SpinGuard guard(insert_lock_);
  const bool raw = count_.load(std::memory_order_relaxed) < raw_stacks_;
  const std::size_t code_bytes = raw ? depth * sizeof(std::uintptr_t) : coded_bytes(frames, depth);
  // Another thread may have inserted it, or grown the index, since the lock-free look.
  if (StackRecord* r = find(index_.load(std::memory_order_relaxed), hash, frames, depth)) return r->id;
  if (capped && room_ != nullptr) {
    // Asked before anything is mapped, so a refused stack costs nothing.
    const std::size_t bytes = bytes_to_map(record_bytes(code_bytes));
    if (bytes != 0 && !room_(bytes)) return kNoStack;
  }
  StackRecord* r = allocate_record(record_bytes(code_bytes));
  if (r == nullptr) return kNoStack;
  r->hash = hash;
  r->depth = static_cast<std::uint16_t>(depth);
  if (raw) {
    r->code_bytes = static_cast<std::uint16_t>(code_bytes | StackRecord::kRawFrames);
    __builtin_memcpy(r->code, frames, code_bytes);
  } else {
    r->code_bytes = static_cast<std::uint16_t>(code_bytes);
    encode_frames(frames, depth, r->code + code_bytes);
  }
  if (!publish(r)) return kNoStack;  // the arena bytes stay: rare, and cheaper than undoing
  return r->id;
}

std::size_t StackTable::index_bytes(std::size_t capacity) noexcept {
  return sizeof(Index) + capacity * sizeof(std::atomic<StackId>);
}

void* StackTable::map(std::size_t bytes) noexcept {
  void* p = map_pages(bytes);
  if (p != nullptr)
    mapped_.fetch_add(static_cast<std::int64_t>((bytes + 4095) & ~std::size_t{4095}),
                      std::memory_order_relaxed);
  return p;
}

void StackTable::frames(const StackRecord* r, std::uintptr_t* out) noexcept {
  if (raw_frames(r)) __builtin_memcpy(out, r->code, r->depth * sizeof(std::uintptr_t));
  else decode_frames(code_end(r), r->depth, out);
}

std::size_t StackTable::bytes_to_map(std::size_t record_bytes) const noexcept {
  std::size_t bytes = 0;
  if (arena_pad(alignof(StackRecord), record_bytes) == kNoRoom) bytes += kArenaChunk;
  const std::uint32_t n = count_.load(std::memory_order_relaxed);
  const StackId id = n + 1;
  if (id <= kMaxStacks && by_id_[id >> kChunkBits].load(std::memory_order_relaxed) == nullptr)
    bytes += sizeof(StackRecord*) << kChunkBits;
  const Index* index = index_.load(std::memory_order_relaxed);
  if (index == nullptr) bytes += index_bytes(kInitialIndexCapacity);
  else if ((n + 1) * 2 > index->capacity) bytes += index_bytes(index->capacity * 2);
  return bytes;
}

std::size_t StackTable::arena_pad(std::size_t align, std::size_t bytes) const noexcept {
  // The arena is page-aligned and every piece a multiple of 8: padding only for align > 8.
  const std::size_t pad =
      align_up(reinterpret_cast<std::uintptr_t>(arena_), align) - reinterpret_cast<std::uintptr_t>(arena_);
  return arena_ == nullptr || pad + bytes > arena_left_ ? kNoRoom : pad;
}

void* StackTable::allocate(std::size_t bytes, std::size_t align) noexcept {
  const std::size_t pad = arena_pad(align, bytes);
  if (pad == kNoRoom) {
    arena_ = static_cast<char*>(map(kArenaChunk));
    if (arena_ == nullptr) {
      arena_left_ = 0;
      return nullptr;
    }
    arena_left_ = kArenaChunk;
    return allocate(bytes, align);
  }
  void* p = arena_ + pad;
  arena_ += pad + bytes;
  arena_left_ -= pad + bytes;
  return p;
}

StackRecord* StackTable::allocate_record(std::size_t bytes) noexcept {
  void* p = allocate(bytes, alignof(StackRecord));
  return p == nullptr ? nullptr : new (p) StackRecord{};
}

StackTotals& StackTable::totals_for_newcomer(StackRecord* r, std::uint32_t thread_slot) noexcept {
  std::uint16_t owner = 0;
  // The slot shared by the threads past kOwnerSlots never owns: its threads would each
  // take themselves for the owner.
  if (thread_slot < kOwnerSlots &&
      r->owner.compare_exchange_strong(owner, static_cast<std::uint16_t>(thread_slot + 1),
                                       std::memory_order_relaxed))
    return r->totals;
  // A second thread: give the stack shared slots (or, refused, the side totals).
  SharedTotals* shared = share(r);
  return shared != nullptr ? shared[thread_slot % kSharedSlots].totals : side_totals(r->id, r);
}

StackTotals& StackTable::side_totals(StackId id, StackRecord* r) noexcept {
  std::atomic<StackTotals*>& slot = side_[id >> kChunkBits];
  StackTotals* chunk = slot.load(std::memory_order_acquire);
  if (chunk == nullptr) [[unlikely]] {
    // Published by compare-exchange, not under insert_lock_: a clear calls this under a
    // live-table shard's lock, and fork() takes insert_lock_ before the shards' locks.
    constexpr std::size_t kBytes = sizeof(StackTotals) << kChunkBits;
    auto* mine = static_cast<StackTotals*>(map_pages(kBytes));
    if (mine == nullptr) return r->totals;
    if (slot.compare_exchange_strong(chunk, mine, std::memory_order_acq_rel)) {
      mapped_.fetch_add(static_cast<std::int64_t>(kBytes), std::memory_order_relaxed);
      chunk = mine;
    } else {
      unmap_pages(mine, kBytes);  // a racer's is in place: `chunk`
    }
  }
  return chunk[id & ((1u << kChunkBits) - 1)];
}

SharedTotals* StackTable::share(StackRecord* r) noexcept {
  SpinGuard guard(insert_lock_);
  if (SharedTotals* shared = r->shared.load(std::memory_order_relaxed)) return shared;  // a racer's
  if (room_ != nullptr && arena_pad(alignof(SharedTotals), kSharedBytes) == kNoRoom && !room_(kArenaChunk))
    return nullptr;
  void* p = allocate(kSharedBytes, alignof(SharedTotals));
  if (p == nullptr) return nullptr;
  auto* shared = static_cast<SharedTotals*>(p);
  for (unsigned i = 0; i < kSharedSlots; ++i) new (&shared[i]) SharedTotals{};
  r->shared.store(shared, std::memory_order_release);
  return shared;
}

bool StackTable::grow_index() noexcept {
  Index* old = index_.load(std::memory_order_relaxed);
  const std::size_t capacity = old == nullptr ? kInitialIndexCapacity : old->capacity * 2;
  auto* index = static_cast<Index*>(map(index_bytes(capacity)));
  if (index == nullptr) return false;
  index->capacity = capacity;
  index->retired = old;
  const std::size_t mask = capacity - 1;
  for (StackId id = 1; id <= count_.load(std::memory_order_relaxed); ++id) {
    StackRecord* r = record(id);
    std::size_t i = r->hash & mask;
    while (index->slots[i].load(std::memory_order_relaxed) != kNoStack) i = (i + 1) & mask;
    index->slots[i].store(id, std::memory_order_relaxed);
  }
  index_.store(index, std::memory_order_release);
  if (old != nullptr) release_retired(old);
  return true;
}

void StackTable::release_retired(Index* old) noexcept {
  // Its slots read zero from now on: a reader still probing it finds nothing there and
  // looks again in the current index, under the insert lock. The first page (the header,
  // which readers read once before they probe) stays.
  const std::size_t bytes = (index_bytes(old->capacity) + 4095) & ~std::size_t{4095};
  if (bytes <= 4096) return;
  release_pages(reinterpret_cast<char*>(old) + 4096, bytes - 4096);
  mapped_.fetch_sub(static_cast<std::int64_t>(bytes - 4096), std::memory_order_relaxed);
}

bool StackTable::publish(StackRecord* r) noexcept {
  const std::uint32_t n = count_.load(std::memory_order_relaxed);
  if (n >= kMaxStacks) return false;
  const StackId id = n + 1;
  std::atomic<StackRecord**>& chunk_slot = by_id_[id >> kChunkBits];
  StackRecord** chunk = chunk_slot.load(std::memory_order_relaxed);
  if (chunk == nullptr) {
    chunk = static_cast<StackRecord**>(map(sizeof(StackRecord*) << kChunkBits));
    if (chunk == nullptr) return false;
    chunk_slot.store(chunk, std::memory_order_release);
  }
  Index* index = index_.load(std::memory_order_relaxed);
  if (index == nullptr || (n + 1) * 2 > index->capacity) {
    if (!grow_index()) return false;
    index = index_.load(std::memory_order_relaxed);
  }
  r->id = id;
  chunk[id & ((1u << kChunkBits) - 1)] = r;
  count_.store(id, std::memory_order_release);
  const std::size_t mask = index->capacity - 1;
  std::size_t i = r->hash & mask;
  while (index->slots[i].load(std::memory_order_relaxed) != kNoStack) i = (i + 1) & mask;
  index->slots[i].store(id, std::memory_order_release);
  return true;
}

}  // namespace liveheap::engine
