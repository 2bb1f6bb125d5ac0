// The frame rule cache's writers: insert, grow and clear, all under its lock.
#include "frame_rule_cache.hpp"

#include "pages.hpp"

namespace liveheap::engine {
namespace {

constexpr std::size_t kInitialCapacity = 4096;              // 64 KiB: a server's hot return addresses
constexpr std::size_t kMaxCapacity = std::size_t{1} << 20;  // 16 MiB; beyond, rules go uncached

}  // namespace

void FrameRuleCache::put(Table* t, std::uintptr_t key, std::uintptr_t tag, std::uint64_t bits) noexcept {
  std::size_t i = slot_of(key, t->mask);
  const std::uintptr_t tagged = key ^ tag;
  while (t->slots[i].key.load(std::memory_order_relaxed) != 0) {
    if (t->slots[i].key.load(std::memory_order_relaxed) == tagged) return;
    i = (i + 1) & t->mask;
  }
  // The rule before the key: a reader that sees the key sees its rule. The fence orders a
  // clear's key stores (made before the lock this writer holds) before the rule: a reader
  // that loads this rule in place of the one it matched then sees its key gone.
  std::atomic_thread_fence(std::memory_order_release);
  t->slots[i].rule.store(bits, std::memory_order_relaxed);
  t->slots[i].key.store(tagged, std::memory_order_release);
  t->used.fetch_add(1, std::memory_order_relaxed);
}

bool FrameRuleCache::grow() noexcept {
  Table* old = table_.load(std::memory_order_relaxed);
  const std::size_t capacity = old == nullptr ? kInitialCapacity : (old->mask + 1) * 2;
  if (capacity > kMaxCapacity) return false;
  auto* t = static_cast<Table*>(map_pages(sizeof(Table) + capacity * sizeof(Slot)));
  if (t == nullptr) return false;
  t->mask = capacity - 1;
  t->retired = old;
  if (old != nullptr) {
    const std::uintptr_t tag = tag_of(generation_.load(std::memory_order_relaxed));
    for (std::size_t i = 0; i <= old->mask; ++i) {
      // Keys keep their tag: a table grows within one generation.
      const std::uintptr_t tagged = old->slots[i].key.load(std::memory_order_relaxed);
      const std::uint64_t bits = old->slots[i].rule.load(std::memory_order_relaxed);
      if (tagged != 0 && bits != 0) put(t, tagged ^ tag, tag, bits);
    }
  }
  table_.store(t, std::memory_order_release);
  return true;
}

void FrameRuleCache::insert(std::uintptr_t key, FrameRule rule, std::uint32_t generation) noexcept {
  if (key == 0 || rule.kind == FrameRule::Kind::none || !lock_.try_lock()) return;
  if (generation == generation_.load(std::memory_order_relaxed)) {
    // Grown at half full; a table that cannot grow takes keys up to three quarters (a
    // lookup's probe must always reach an empty slot).
    const auto filled_above = [](const Table* t, std::size_t num, std::size_t den) {
      return (t->used.load(std::memory_order_relaxed) + 1) * den > (t->mask + 1) * num;
    };
    Table* t = table_.load(std::memory_order_relaxed);
    if (t == nullptr || filled_above(t, 1, 2)) grow();
    t = table_.load(std::memory_order_relaxed);
    if (t != nullptr && !filled_above(t, 3, 4)) put(t, key, tag_of(generation), rule.pack());
  }
  lock_.unlock();
}

void FrameRuleCache::clear() noexcept {
  SpinGuard guard(lock_);
  generation_.fetch_add(1, std::memory_order_release);
  Table* t = table_.load(std::memory_order_relaxed);
  if (t == nullptr) return;
  // Keys first, then (after a release fence) rules: a reader that loads a rule written
  // after this point re-reads a key that is no longer the one it matched (see lookup).
  for (std::size_t i = 0; i <= t->mask; ++i) t->slots[i].key.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  for (std::size_t i = 0; i <= t->mask; ++i) t->slots[i].rule.store(0, std::memory_order_relaxed);
  t->used.store(0, std::memory_order_relaxed);
}

std::size_t FrameRuleCache::size() const noexcept {
  const Table* t = table_.load(std::memory_order_acquire);
  return t == nullptr ? 0 : t->used.load(std::memory_order_relaxed);
}

}  // namespace liveheap::engine
