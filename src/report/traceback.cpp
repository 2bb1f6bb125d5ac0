// Traceback: a stack as indices into a frame table shared with its snapshot.
#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

#include "liveheap/snapshot.hpp"

LIVEHEAP_NAMESPACE_BEGIN

Traceback::Traceback(std::initializer_list<Frame> frames) : Traceback(std::vector<Frame>(frames)) {}

Traceback::Traceback(std::vector<Frame> frames) : indices_(frames.size()) {
  std::iota(indices_.begin(), indices_.end(), std::uint32_t{0});
  if (!frames.empty()) table_ = std::make_shared<const FrameTable>(std::move(frames));
}

Traceback::Traceback(std::shared_ptr<const FrameTable> table, std::vector<std::uint32_t> indices)
    : table_(std::move(table)), indices_(std::move(indices)) {
  const std::size_t frames = table_ ? table_->size() : 0;
  for (std::uint32_t i : indices_)
    if (i >= frames)
      throw std::out_of_range("traceback frame index " + std::to_string(i) + " is outside its table of " +
                              std::to_string(frames) + " frames");
  if (indices_.empty()) table_.reset();  // nothing to keep alive
}

const Frame& Traceback::at(size_type i) const {
  if (i >= size())
    throw std::out_of_range("traceback frame " + std::to_string(i) + " of " + std::to_string(size()));
  return (*this)[i];
}

Traceback Traceback::slice(size_type first, size_type count) const {
  if (first > size() || count > size() - first)
    throw std::out_of_range("traceback slice [" + std::to_string(first) + ", +" + std::to_string(count) +
                            ") of " + std::to_string(size()) + " frames");
  Traceback part;
  part.indices_.assign(indices_.begin() + static_cast<difference_type>(first),
                       indices_.begin() + static_cast<difference_type>(first + count));
  if (count != 0) part.table_ = table_;
  return part;
}

bool operator==(const Traceback& a, const Traceback& b) noexcept {
  if (a.table_ == b.table_ && a.indices_ == b.indices_) return true;  // no string compared
  return std::equal(a.begin(), a.end(), b.begin(), b.end());
}

LIVEHEAP_NAMESPACE_END
