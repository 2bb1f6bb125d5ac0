// A least-recently-used cache with a fixed capacity: std::list for the order, an
// unordered_map for the lookup. Bounded by design, so its memory plateaus.
// Thread-safety: none; the caller serializes every call.
#pragma once

#include <cstddef>
#include <list>
#include <unordered_map>
#include <utility>

namespace leaky {

template <class Key, class Value>
class LruCache {
 public:
  using Entry = std::pair<Key, Value>;
  using Index = std::unordered_map<Key, typename std::list<Entry>::iterator>;

  // Sizes the index for `capacity` entries now, so inserting never rehashes.
  explicit LruCache(std::size_t capacity) : capacity_(capacity) { index_.reserve(capacity); }

  std::size_t capacity() const noexcept { return capacity_; }
  std::size_t size() const noexcept { return order_.size(); }

  // The value for `key`, now the most recently used; nullptr when absent.
  Value* find(const Key& key) {
    const auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return &it->second->second;
  }

  // Adds `key` (absent) as the most recently used, first evicting the least recently used
  // entry when full. Returns the new value.
  Value& insert(Key key, Value value) {
    if (order_.size() == capacity_) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
    order_.emplace_front(std::move(key), std::move(value));
    index_.emplace(order_.front().first, order_.begin());
    return order_.front().second;
  }

 private:
  std::size_t capacity_;
  std::list<Entry> order_;  // most recently used first
  Index index_;
};

}  // namespace leaky
