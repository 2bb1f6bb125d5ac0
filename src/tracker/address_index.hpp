// The distinct return addresses of a set of stacks, in ascending order, and each address's
// position among them: what symbolizing a snapshot needs (each address named once, then
// every frame of every stack pointed at its name). Stacks share most of their frames
// (10k stacks of ~10 frames hold ~10k distinct addresses), so the addresses are deduplicated
// in a hash table first and only the distinct ones are sorted; sorting all of them and a
// binary search per frame cost a third of a snapshot of 10k stacks.
// Thread-safety: none; one per snapshot.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace liveheap::tracker {

class AddressIndex {
 public:
  explicit AddressIndex(std::span<const std::span<const std::uintptr_t>> stacks);

  // The distinct addresses, ascending.
  const std::vector<std::uintptr_t>& sorted() const noexcept { return sorted_; }
  // Position of `address` in sorted(); `address` must be one of the stacks' addresses.
  std::uint32_t position(std::uintptr_t address) const noexcept;

 private:
  std::size_t slot_of(std::uintptr_t address) const noexcept;
  void grow(std::size_t at_least);  // doubles, to at least `at_least` slots

  std::vector<std::uintptr_t> keys_;      // open addressing, 0 = empty; a power of two long
  std::vector<std::uint32_t> positions_;  // beside keys_: the position in sorted_
  std::vector<std::uintptr_t> sorted_;
  bool has_zero_ = false;  // 0 marks an empty slot, so it is never a key
};

}  // namespace liveheap::tracker
