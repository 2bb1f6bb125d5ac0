// What a value holds on the heap, counted by the sample itself: the truth that liveheap's
// exact-mode diff is held to. Written for g++'s libstdc++, whose node types it names.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <string>
#include <vector>

namespace leaky {

// Heap bytes and heap blocks, added up.
struct HeapUse {
  std::int64_t bytes = 0;
  std::int64_t blocks = 0;

  HeapUse& operator+=(const HeapUse& other) {
    bytes += other.bytes;
    blocks += other.blocks;
    return *this;
  }
  friend HeapUse operator+(HeapUse a, const HeapUse& b) { return a += b; }
  friend HeapUse operator-(const HeapUse& a) { return {-a.bytes, -a.blocks}; }
  friend HeapUse operator*(const HeapUse& a, std::size_t n) {
    return {a.bytes * static_cast<std::int64_t>(n), a.blocks * static_cast<std::int64_t>(n)};
  }
  friend bool operator==(const HeapUse&, const HeapUse&) = default;
};

// One block of `bytes` (operator new's argument), or nothing for zero.
inline HeapUse block(std::size_t bytes) {
  return {static_cast<std::int64_t>(bytes), bytes == 0 ? 0 : 1};
}

// A string's buffer: none while it fits in the string itself (short-string optimization),
// else capacity + 1 for the terminating zero.
inline HeapUse heap_use(const std::string& s) {
  static const std::size_t kInPlace = std::string().capacity();
  return s.capacity() > kInPlace ? block(s.capacity() + 1) : HeapUse{};
}

// A vector's buffer (its elements' own heap is the caller's to add).
template <class T>
HeapUse heap_use(const std::vector<T>& v) {
  return block(v.capacity() * sizeof(T));
}

// The node a std::list allocates per element, and a std::map per entry.
template <class T>
HeapUse list_node() {
  return block(sizeof(std::_List_node<T>));
}
template <class Map>
HeapUse map_node() {
  return block(sizeof(std::_Rb_tree_node<typename Map::value_type>));
}
// An unordered_map node whose key hash is cached (as for std::string keys): the next
// pointer, the entry, the hash.
template <class UnorderedMap>
HeapUse hash_node() {
  return block(sizeof(void*) + sizeof(typename UnorderedMap::value_type) + sizeof(std::size_t));
}

}  // namespace leaky
