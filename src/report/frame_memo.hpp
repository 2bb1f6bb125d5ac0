// Work that depends on one frame only, done once per distinct frame instead of once per
// traceback: a snapshot's tracebacks share one frame table (see Traceback).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "liveheap/snapshot.hpp"

namespace liveheap::report {

// One value per distinct frame, i.e. per (frame table, index in it), computed on first use.
// Thread-safety: none; lives for one report. It keeps every table it has seen alive: a
// table freed while it lived could be replaced by another at the same address, whose
// frames would then get the old table's values (a key looked up once, then dropped).
template <typename T>
class FrameMemo {
 public:
  // The value of frame i of `tb`: `compute(tb, i)` the first time its table entry is seen.
  template <typename Compute>
  const T& get(const Traceback& tb, std::size_t i, Compute&& compute) {
    std::optional<T>& slot = slots_of(tb.table())[tb.indices()[i]];
    if (!slot) slot.emplace(compute(tb, i));
    return *slot;
  }

 private:
  struct Table {
    std::shared_ptr<const Traceback::FrameTable> pinned;  // so its address stays its own
    std::vector<std::optional<T>> slots;
  };

  std::vector<std::optional<T>>& slots_of(const std::shared_ptr<const Traceback::FrameTable>& table) {
    if (table.get() != last_table_) {  // tracebacks of one snapshot come with one table
      Table& entry = tables_[table.get()];
      if (!entry.pinned) entry.pinned = table;
      entry.slots.resize(table->size());
      last_table_ = table.get();
      last_slots_ = &entry.slots;
    }
    return *last_slots_;
  }

  std::unordered_map<const Traceback::FrameTable*, Table> tables_;
  const Traceback::FrameTable* last_table_ = nullptr;
  std::vector<std::optional<T>>* last_slots_ = nullptr;
};

// user_frame_index() with is_plumbing() decided once per distinct frame.
class UserFrames {
 public:
  std::size_t index(const Traceback& tb) {
    for (std::size_t i = 0; i < tb.size(); ++i)
      if (!plumbing_.get(tb, i, [](const Traceback& t, std::size_t j) { return is_plumbing(t[j]); }))
        return i;
    return 0;
  }

 private:
  FrameMemo<bool> plumbing_;
};

// Filter::matches(traceback) in terms of two questions a caller may memoize: which frame
// is the user's (user_frame(tb)), and does frame i match (frame_matches(i)).
template <typename UserFrame, typename FrameMatches>
bool traceback_matches(const Filter& filter, const Traceback& tb, UserFrame&& user_frame,
                       FrameMatches&& frame_matches) {
  if (tb.empty()) return false;
  if (!filter.all_frames) return frame_matches(user_frame(tb));
  for (std::size_t i = 0; i < tb.size(); ++i)
    if (frame_matches(i)) return true;
  return false;
}

}  // namespace liveheap::report
