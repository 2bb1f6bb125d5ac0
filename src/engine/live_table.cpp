// The sharded pointer table behind exact tracking: compact entries, and wide ones apart.
#include "live_table.hpp"

#include "pages.hpp"

namespace liveheap::engine {
namespace {

constexpr std::size_t kInitialBytes = 4096;  // one page of entries

}  // namespace

template <typename Entry>
bool OpenShards<Entry>::grow(Shard& shard) noexcept {
  // Growing by 1/4 (to whole pages) keeps the load between 0.6 and 0.75 once past the
  // first page (doubling would swing down to 0.375).
  std::size_t capacity =
      shard.capacity == 0 ? kInitialBytes / sizeof(Entry) : shard.capacity + shard.capacity / 4;
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
  unmap_pages(shard.slots, shard.capacity * sizeof(Entry));  // none for no_slots_
  grown_.store(true, std::memory_order_release);             // before the slots: see clear()
  shard.slots = slots;
  shard.capacity = capacity;
  shard.grow_at = capacity * 3 / 4;
  return true;
}

template <typename Entry>
bool OpenShards<Entry>::insert_growing(Shard& shard, std::uintptr_t ptr, std::uint64_t h, LiveBlock block,
                                       LiveBlock* replaced, bool* found) noexcept {
  std::size_t i = probe(shard, ptr, h);
  *found = shard.slots[i].key() != 0;
  if (*found) {
    *replaced = shard.slots[i].block();
  } else {
    *replaced = LiveBlock{};
    if (!grow(shard)) return false;
    i = probe(shard, ptr, h);
    set_used(shard.used, shard.used + 1);
  }
  shard.slots[i] = Entry::make(ptr, block);
  return true;
}

template <typename Entry>
std::size_t OpenShards<Entry>::shift_back(Shard& shard, std::size_t i) noexcept {
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
  return i;
}

template <typename Entry>
bool OpenShards<Entry>::contains(std::uintptr_t ptr) noexcept {
  const std::uint64_t h = hash(ptr);
  Shard& shard = shard_for(ptr, h);
  SpinGuard guard(shard.lock);
  return shard.slots[probe(shard, ptr, h)].key() != 0;
}

template <typename Entry>
void OpenShards<Entry>::clear(void (*visit)(void* ctx, const LiveBlock& block), void* ctx) noexcept {
  // Nothing was ever inserted: an insert racing with this clear is one made after it.
  if (!grown_.load(std::memory_order_acquire)) return;
  for (Shard& shard : shards_) {
    SpinGuard guard(shard.lock);
    for (std::size_t j = 0; j < shard.capacity; ++j) {
      if (shard.slots[j].key() == 0) continue;
      if (visit != nullptr) visit(ctx, shard.slots[j].block());
    }
    unmap_pages(shard.slots, shard.capacity * sizeof(Entry));
    shard.slots = &no_slots_;
    shard.capacity = 0;
    shard.grow_at = 0;
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
    n += static_cast<std::int64_t>(__atomic_load_n(&shard.capacity, __ATOMIC_RELAXED) * sizeof(Entry));
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

template <typename Entry>
bool OpenShards<Entry>::any_locked() const noexcept {
  for (const Shard& shard : shards_)
    if (shard.lock.is_locked()) return true;
  return false;
}

template class OpenShards<LiveTable::CompactEntry>;
template class OpenShards<LiveTable::WideEntry>;

bool LiveTable::insert_wide(std::uintptr_t ptr, LiveBlock block, LiveBlock* replaced) noexcept {
  bool found = false;
  if (!wide_.insert(ptr, block, replaced, &found)) return false;
  if (!found) {
    wide_used_.fetch_add(1, std::memory_order_relaxed);
    compact_.remove(ptr, replaced);
  }
  return true;
}

bool LiveTable::remove_wide(std::uintptr_t ptr, LiveBlock* removed) noexcept {
  if (!wide_.remove(ptr, removed)) return false;
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

bool LiveTable::any_locked() const noexcept { return compact_.any_locked() || wide_.any_locked(); }

void LiveTable::unlock_after_fork() noexcept {
  wide_.unlock_after_fork();
  compact_.unlock_after_fork();
}

}  // namespace liveheap::engine
