// The sharded pointer table behind exact tracking.
#include "live_table.hpp"

#include "pages.hpp"

namespace liveheap::engine {
namespace {

constexpr std::size_t kInitialCapacity = 256;  // one page of entries
constexpr std::size_t kNotFound = ~std::size_t{0};

// Home slot of a hash in a table of `capacity` slots (any capacity, not only powers of
// two): the multiply-high range reduction, on the bits the shard choice did not use.
std::size_t home_slot(std::uint64_t h, std::size_t capacity) noexcept {
  const std::uint64_t bits = h << 4;  // LiveTable::kSubShardBits: the shard's own bits dropped
  return static_cast<std::size_t>((static_cast<unsigned __int128>(bits) * capacity) >> 64);
}

std::size_t next_slot(std::size_t i, std::size_t capacity) noexcept {
  return ++i == capacity ? 0 : i;
}

std::uint64_t pack(LiveBlock b) noexcept {
  const std::uint64_t size = b.size > LiveTable::kMaxSize ? LiveTable::kMaxSize : b.size;
  return size << kStackIdBits | b.stack;
}

LiveBlock unpack(std::uint64_t packed) noexcept {
  return {packed >> kStackIdBits, static_cast<StackId>(packed & kMaxStacks)};
}

// A shard's count is written under its lock but read without it by size() (/stats): both
// sides atomic, or the read is a data race (TSan found it).
void set_used(std::size_t& used, std::size_t value) noexcept {
  __atomic_store_n(&used, value, __ATOMIC_RELAXED);
}

}  // namespace

std::uint64_t LiveTable::hash(std::uintptr_t ptr) noexcept {
  // Blocks are 16-byte aligned; Fibonacci hashing spreads consecutive ones.
  std::uint64_t x = static_cast<std::uint64_t>(ptr >> 4) * 0x9e3779b97f4a7c15ull;
  return x ^ (x >> 32);
}

std::size_t LiveTable::find(const Shard& shard, std::uintptr_t ptr, std::uint64_t h) noexcept {
  if (shard.capacity == 0) return kNotFound;
  for (std::size_t i = home_slot(h, shard.capacity);; i = next_slot(i, shard.capacity)) {
    if (shard.slots[i].ptr == ptr) return i;
    if (shard.slots[i].ptr == 0) return kNotFound;
  }
}

bool LiveTable::grow(Shard& shard) noexcept {
  // Growing by 1/4 (to whole pages) keeps the load between 0.6 and 0.75 once past the
  // first page: 21-27 bytes of table per live block (doubling would swing to 64).
  std::size_t capacity = shard.capacity == 0 ? kInitialCapacity : shard.capacity + shard.capacity / 4;
  capacity = (capacity * sizeof(Entry) + 4095) / 4096 * 4096 / sizeof(Entry);
  // The old array is unmapped only after the new one is filled: both count.
  if (room_ != nullptr && !room_(capacity * sizeof(Entry))) return false;
  auto* slots = static_cast<Entry*>(map_pages(capacity * sizeof(Entry)));
  if (slots == nullptr) return false;
  for (std::size_t j = 0; j < shard.capacity; ++j) {
    const Entry& e = shard.slots[j];
    if (e.ptr == 0) continue;
    std::size_t i = home_slot(hash(e.ptr), capacity);
    while (slots[i].ptr != 0) i = next_slot(i, capacity);
    slots[i] = e;
  }
  unmap_pages(shard.slots, shard.capacity * sizeof(Entry));
  shard.slots = slots;
  shard.capacity = capacity;
  return true;
}

bool LiveTable::insert(std::uintptr_t ptr, LiveBlock block, LiveBlock* replaced) noexcept {
  const std::uint64_t h = hash(ptr);
  Shard& shard = shard_for(shards_, ptr, h);
  SpinGuard guard(shard.lock);
  if (const std::size_t i = find(shard, ptr, h); i != kNotFound) {
    *replaced = unpack(shard.slots[i].packed);
    shard.slots[i].packed = pack(block);
    return true;
  }
  *replaced = LiveBlock{};
  // Grow at 3/4 load: linear probing stays short.
  if ((shard.used + 1) * 4 > shard.capacity * 3 && !grow(shard)) return false;
  std::size_t i = home_slot(h, shard.capacity);
  while (shard.slots[i].ptr != 0) i = next_slot(i, shard.capacity);
  shard.slots[i] = {ptr, pack(block)};
  set_used(shard.used, shard.used + 1);
  return true;
}

void LiveTable::erase_at(Shard& shard, std::size_t i) noexcept {
  // Backward-shift deletion: pull later entries of the probe run into the hole.
  const std::size_t capacity = shard.capacity;
  for (std::size_t j = next_slot(i, capacity); shard.slots[j].ptr != 0; j = next_slot(j, capacity)) {
    const std::size_t home = home_slot(hash(shard.slots[j].ptr), capacity);
    // Move j into the hole at i unless its home lies cyclically in (i, j].
    const bool home_in_range = i <= j ? (i < home && home <= j) : (i < home || home <= j);
    if (!home_in_range) {
      shard.slots[i] = shard.slots[j];
      i = j;
    }
  }
  shard.slots[i] = Entry{0, 0};
  set_used(shard.used, shard.used - 1);
}

bool LiveTable::remove(std::uintptr_t ptr, LiveBlock* removed) noexcept {
  const std::uint64_t h = hash(ptr);
  Shard& shard = shard_for(shards_, ptr, h);
  SpinGuard guard(shard.lock);
  const std::size_t i = find(shard, ptr, h);
  if (i == kNotFound) return false;
  *removed = unpack(shard.slots[i].packed);
  erase_at(shard, i);
  return true;
}

bool LiveTable::contains(std::uintptr_t ptr) noexcept {
  const std::uint64_t h = hash(ptr);
  Shard& shard = shard_for(shards_, ptr, h);
  SpinGuard guard(shard.lock);
  return find(shard, ptr, h) != kNotFound;
}

void LiveTable::clear(void (*visit)(void* ctx, const LiveBlock& block), void* ctx) noexcept {
  for (Shard& shard : shards_) {
    SpinGuard guard(shard.lock);
    for (std::size_t j = 0; j < shard.capacity; ++j) {
      if (shard.slots[j].ptr == 0) continue;
      if (visit != nullptr) visit(ctx, unpack(shard.slots[j].packed));
    }
    unmap_pages(shard.slots, shard.capacity * sizeof(Entry));
    shard.slots = nullptr;
    shard.capacity = 0;
    set_used(shard.used, 0);
  }
}

std::uint64_t LiveTable::size() const noexcept {
  std::uint64_t n = 0;
  for (const Shard& shard : shards_) n += __atomic_load_n(&shard.used, __ATOMIC_RELAXED);
  return n;
}

std::int64_t LiveTable::memory_bytes() const noexcept {
  std::int64_t n = 0;
  for (const Shard& shard : shards_)
    n += static_cast<std::int64_t>(__atomic_load_n(&shard.capacity, __ATOMIC_RELAXED) *
                                   sizeof(Entry));
  return n;
}

void LiveTable::lock_for_fork() noexcept {
  for (Shard& shard : shards_) shard.lock.lock();
}

void LiveTable::unlock_after_fork() noexcept {
  for (Shard& shard : shards_) shard.lock.unlock();
}

}  // namespace liveheap::engine
