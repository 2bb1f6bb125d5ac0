// The sharded pointer table behind exact tracking: compact entries, and wide ones apart.
#include "live_table.hpp"

#include "pages.hpp"

namespace liveheap::engine {
namespace {

constexpr std::size_t kInitialBytes = 4096;  // one page of entries
constexpr std::size_t kNotFound = ~std::size_t{0};

// Home slot of a hash in a table of `capacity` slots (any capacity, not only powers of
// two): the multiply-high range reduction, on the bits the shard choice did not use.
std::size_t home_slot(std::uint64_t h, std::size_t capacity) noexcept {
  const std::uint64_t bits = h << 4;  // OpenShards::kSubShardBits: the shard's own bits dropped
  return static_cast<std::size_t>((static_cast<unsigned __int128>(bits) * capacity) >> 64);
}

std::size_t next_slot(std::size_t i, std::size_t capacity) noexcept {
  return ++i == capacity ? 0 : i;
}

// A shard's count is written under its lock but read without it by size() (/stats): both
// sides atomic, or the read is a data race (TSan found it).
void set_used(std::size_t& used, std::size_t value) noexcept {
  __atomic_store_n(&used, value, __ATOMIC_RELAXED);
}

}  // namespace

template <typename Entry>
[[gnu::always_inline]] inline std::uint64_t OpenShards<Entry>::hash(std::uintptr_t ptr) noexcept {
  // Blocks are 16-byte aligned; Fibonacci hashing spreads consecutive ones.
  std::uint64_t x = static_cast<std::uint64_t>(ptr >> 4) * 0x9e3779b97f4a7c15ull;
  return x ^ (x >> 32);
}

template <typename Entry>
[[gnu::always_inline]] inline std::size_t OpenShards<Entry>::find(const Shard& shard, std::uintptr_t ptr, std::uint64_t h) noexcept {
  if (shard.capacity == 0) return kNotFound;
  for (std::size_t i = home_slot(h, shard.capacity);; i = next_slot(i, shard.capacity)) {
    const std::uintptr_t key = shard.slots[i].key();
    if (key == ptr) return i;
    if (key == 0) return kNotFound;
  }
}

template <typename Entry>
bool OpenShards<Entry>::grow(Shard& shard) noexcept {
  // Growing by 1/4 (to whole pages) keeps the load between 0.6 and 0.75 once past the
  // first page (doubling would swing down to 0.375).
  std::size_t capacity = shard.capacity == 0 ? kInitialBytes / sizeof(Entry)
                                             : shard.capacity + shard.capacity / 4;
  capacity = (capacity * sizeof(Entry) + 4095) / 4096 * 4096 / sizeof(Entry);
  // The old array is unmapped only after the new one is filled: both count.
  if (room_ != nullptr && !room_(capacity * sizeof(Entry))) return false;
  auto* slots = static_cast<Entry*>(map_pages(capacity * sizeof(Entry)));
  if (slots == nullptr) return false;
  for (std::size_t j = 0; j < shard.capacity; ++j) {
    const Entry& e = shard.slots[j];
    if (e.key() == 0) continue;
    std::size_t i = home_slot(hash(e.key()), capacity);
    while (slots[i].key() != 0) i = next_slot(i, capacity);
    slots[i] = e;
  }
  unmap_pages(shard.slots, shard.capacity * sizeof(Entry));
  shard.slots = slots;
  shard.capacity = capacity;
  return true;
}

template <typename Entry>
[[gnu::always_inline]] inline bool OpenShards<Entry>::insert(std::uintptr_t ptr, LiveBlock block, LiveBlock* replaced,
                               bool* found) noexcept {
  const std::uint64_t h = hash(ptr);
  Shard& shard = shard_for(ptr, h);
  SpinGuard guard(shard.lock);
  // One probe run: it ends at the entry, or at the empty slot the entry goes to.
  std::size_t i = 0;
  if (shard.capacity != 0) {
    i = home_slot(h, shard.capacity);
    for (std::uintptr_t key; (key = shard.slots[i].key()) != 0; i = next_slot(i, shard.capacity)) {
      if (key == ptr) {
        *replaced = shard.slots[i].block();
        *found = true;
        shard.slots[i] = Entry::make(ptr, block);
        return true;
      }
    }
  }
  *replaced = LiveBlock{};
  *found = false;
  // Grow at 3/4 load: linear probing stays short.
  if ((shard.used + 1) * 4 > shard.capacity * 3) {
    if (!grow(shard)) return false;
    i = home_slot(h, shard.capacity);
    while (shard.slots[i].key() != 0) i = next_slot(i, shard.capacity);
  }
  shard.slots[i] = Entry::make(ptr, block);
  set_used(shard.used, shard.used + 1);
  return true;
}

template <typename Entry>
void OpenShards<Entry>::erase_at(Shard& shard, std::size_t i) noexcept {
  // Backward-shift deletion: pull later entries of the probe run into the hole.
  const std::size_t capacity = shard.capacity;
  for (std::size_t j = next_slot(i, capacity); shard.slots[j].key() != 0; j = next_slot(j, capacity)) {
    const std::size_t home = home_slot(hash(shard.slots[j].key()), capacity);
    // Move j into the hole at i unless its home lies cyclically in (i, j].
    const bool home_in_range = i <= j ? (i < home && home <= j) : (i < home || home <= j);
    if (!home_in_range) {
      shard.slots[i] = shard.slots[j];
      i = j;
    }
  }
  shard.slots[i] = Entry{};
  set_used(shard.used, shard.used - 1);
}

template <typename Entry>
[[gnu::always_inline]] inline bool OpenShards<Entry>::remove(std::uintptr_t ptr, LiveBlock* removed) noexcept {
  const std::uint64_t h = hash(ptr);
  Shard& shard = shard_for(ptr, h);
  SpinGuard guard(shard.lock);
  const std::size_t i = find(shard, ptr, h);
  if (i == kNotFound) return false;
  *removed = shard.slots[i].block();
  erase_at(shard, i);
  return true;
}

template <typename Entry>
bool OpenShards<Entry>::contains(std::uintptr_t ptr) noexcept {
  const std::uint64_t h = hash(ptr);
  Shard& shard = shard_for(ptr, h);
  SpinGuard guard(shard.lock);
  return find(shard, ptr, h) != kNotFound;
}

template <typename Entry>
void OpenShards<Entry>::clear(void (*visit)(void* ctx, const LiveBlock& block), void* ctx) noexcept {
  for (Shard& shard : shards_) {
    SpinGuard guard(shard.lock);
    for (std::size_t j = 0; j < shard.capacity; ++j) {
      if (shard.slots[j].key() == 0) continue;
      if (visit != nullptr) visit(ctx, shard.slots[j].block());
    }
    unmap_pages(shard.slots, shard.capacity * sizeof(Entry));
    shard.slots = nullptr;
    shard.capacity = 0;
    set_used(shard.used, 0);
  }
}

template <typename Entry>
std::uint64_t OpenShards<Entry>::size() const noexcept {
  std::uint64_t n = 0;
  for (const Shard& shard : shards_) n += __atomic_load_n(&shard.used, __ATOMIC_RELAXED);
  return n;
}

template <typename Entry>
std::int64_t OpenShards<Entry>::memory_bytes() const noexcept {
  std::int64_t n = 0;
  for (const Shard& shard : shards_)
    n += static_cast<std::int64_t>(__atomic_load_n(&shard.capacity, __ATOMIC_RELAXED) *
                                   sizeof(Entry));
  return n;
}

template <typename Entry>
void OpenShards<Entry>::lock_for_fork() noexcept {
  for (Shard& shard : shards_) shard.lock.lock();
}

template <typename Entry>
void OpenShards<Entry>::unlock_after_fork() noexcept {
  for (Shard& shard : shards_) shard.lock.unlock();
}

template class OpenShards<LiveTable::CompactEntry>;
template class OpenShards<LiveTable::WideEntry>;

// A block lives in exactly one of the two tables: which one follows from its pointer and
// size, so an insert also takes a stale entry of the same pointer out of the other.
bool LiveTable::insert(std::uintptr_t ptr, LiveBlock block, LiveBlock* replaced) noexcept {
  bool found = false;
  if (CompactEntry::fits(ptr, block)) [[likely]] {
    if (!compact_.insert(ptr, block, replaced, &found)) return false;
    if (!found && has_wide() && wide_.remove(ptr, replaced))
      wide_used_.fetch_sub(1, std::memory_order_relaxed);
    return true;
  }
  if (!wide_.insert(ptr, block, replaced, &found)) return false;
  if (!found) {
    wide_used_.fetch_add(1, std::memory_order_relaxed);
    compact_.remove(ptr, replaced);
  }
  return true;
}

bool LiveTable::remove(std::uintptr_t ptr, LiveBlock* removed) noexcept {
  if (compact_.remove(ptr, removed)) [[likely]]
    return true;
  if (!has_wide() || !wide_.remove(ptr, removed)) return false;
  wide_used_.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

bool LiveTable::contains(std::uintptr_t ptr) noexcept {
  return compact_.contains(ptr) || (has_wide() && wide_.contains(ptr));
}

void LiveTable::clear(void (*visit)(void* ctx, const LiveBlock& block), void* ctx) noexcept {
  compact_.clear(visit, ctx);
  // Counted off rather than stored as 0: a wide insert racing with the clear stays visible.
  struct Counting {
    void (*visit)(void* ctx, const LiveBlock& block);
    void* ctx;
    std::int64_t removed;
  } counting{visit, ctx, 0};
  wide_.clear(
      [](void* c, const LiveBlock& b) {
        auto* counting = static_cast<Counting*>(c);
        ++counting->removed;
        if (counting->visit != nullptr) counting->visit(counting->ctx, b);
      },
      &counting);
  wide_used_.fetch_sub(counting.removed, std::memory_order_relaxed);
}

std::uint64_t LiveTable::size() const noexcept { return compact_.size() + wide_.size(); }

std::int64_t LiveTable::memory_bytes() const noexcept {
  return compact_.memory_bytes() + wide_.memory_bytes();
}

void LiveTable::lock_for_fork() noexcept {
  compact_.lock_for_fork();
  wide_.lock_for_fork();
}

void LiveTable::unlock_after_fork() noexcept {
  wide_.unlock_after_fork();
  compact_.unlock_after_fork();
}

}  // namespace liveheap::engine
