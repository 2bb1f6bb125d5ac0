// AddressIndex against the obvious way (sort, unique, binary search) on stacks that share
// most of their frames, as a snapshot's do.
#include "address_index.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace {

using liveheap::tracker::AddressIndex;

void expect_as_sort_and_search(const std::vector<std::vector<std::uintptr_t>>& stacks) {
  std::vector<std::span<const std::uintptr_t>> spans(stacks.begin(), stacks.end());
  const AddressIndex index(spans);
  std::vector<std::uintptr_t> all;
  for (const auto& s : stacks) all.insert(all.end(), s.begin(), s.end());
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  ASSERT_EQ(index.sorted(), all);
  for (const auto& s : stacks)
    for (std::uintptr_t a : s)
      ASSERT_EQ(index.position(a), std::lower_bound(all.begin(), all.end(), a) - all.begin()) << a;
}

TEST(AddressIndex, IsTheSortedDistinctAddressesAndTheirPositions) {
  std::mt19937_64 random(7);
  // 20,000 stacks of 1-40 frames drawn from 3,000 return addresses (and the table's
  // growth from its first 1,024 slots on the way).
  std::vector<std::uintptr_t> code(3000);
  for (std::uintptr_t& a : code) a = 0x400000 + (random() % 0x10000000);
  std::vector<std::vector<std::uintptr_t>> stacks(20000);
  for (auto& s : stacks) {
    s.resize(1 + random() % 40);
    for (std::uintptr_t& a : s) a = code[random() % code.size()];
  }
  expect_as_sort_and_search(stacks);
}

TEST(AddressIndex, KeepsZeroAndTheOverCapFrame) {
  // 0 is the table's empty mark, so it is kept apart; 1 is kOverCapFrame.
  expect_as_sort_and_search({{0, 1, 0x401000}, {0x401000, 0}, {1}});
  expect_as_sort_and_search({{0x401000, 0x402000}, {0}});
  expect_as_sort_and_search({});
  expect_as_sort_and_search({{}, {5}});
}

}  // namespace
