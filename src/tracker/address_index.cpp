// AddressIndex: deduplicate in a hash table, then sort only the distinct addresses.
#include "address_index.hpp"

#include <algorithm>

namespace liveheap::tracker {
namespace {

std::size_t hash(std::uintptr_t address) noexcept {
  const std::uint64_t x = address * 0x9e3779b97f4a7c15ull;  // Fibonacci hashing: the high
  return static_cast<std::size_t>(x ^ (x >> 29));           // bits mixed into the masked ones
}

}  // namespace

std::size_t AddressIndex::slot_of(std::uintptr_t address) const noexcept {
  const std::size_t mask = keys_.size() - 1;
  std::size_t i = hash(address) & mask;
  while (keys_[i] != 0 && keys_[i] != address) i = (i + 1) & mask;
  return i;
}

void AddressIndex::grow(std::size_t at_least) {
  std::vector<std::uintptr_t> old = std::move(keys_);
  std::size_t capacity = old.empty() ? 1024 : old.size() * 2;
  while (capacity < at_least) capacity *= 2;
  keys_.assign(capacity, 0);
  for (std::uintptr_t a : old)
    if (a != 0) keys_[slot_of(a)] = a;
}

AddressIndex::AddressIndex(std::span<const std::span<const std::uintptr_t>> stacks) {
  // Sized for about one distinct address per stack (a snapshot's stacks mostly differ in
  // their innermost frame) at half load: most snapshots never rehash.
  grow(2 * stacks.size());
  for (std::span<const std::uintptr_t> frames : stacks) {
    for (std::uintptr_t a : frames) {
      if (a == 0) {  // the table's empty mark: kept apart (0 sorts first)
        if (!has_zero_) sorted_.push_back(0);
        has_zero_ = true;
        continue;
      }
      const std::size_t i = slot_of(a);
      if (keys_[i] != 0) continue;
      keys_[i] = a;
      sorted_.push_back(a);
      if ((sorted_.size() + 1) * 2 > keys_.size()) grow(0);  // at most half full: short probes
    }
  }
  std::sort(sorted_.begin(), sorted_.end());
  positions_.assign(keys_.size(), 0);
  for (std::size_t k = has_zero_ ? 1 : 0; k < sorted_.size(); ++k)
    positions_[slot_of(sorted_[k])] = static_cast<std::uint32_t>(k);
}

std::uint32_t AddressIndex::position(std::uintptr_t address) const noexcept {
  return address == 0 ? 0 : positions_[slot_of(address)];
}

}  // namespace liveheap::tracker
