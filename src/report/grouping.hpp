// Grouping traces by key (tracemalloc's Snapshot._group_by), with the string work done once
// per distinct frame so that the work per trace is integer work.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "frame_memo.hpp"
#include "liveheap/snapshot.hpp"

namespace liveheap::report {

struct Totals {
  std::int64_t size = 0;
  std::int64_t count = 0;
  std::int64_t alloc_size = 0;  // Trace::alloc_size summed (the history's work per key)
  std::int64_t alloc_count = 0;
};

// Numbers the groups of one or more snapshots under one key. Groups are told apart by a
// string id made once per distinct frame, so frames with equal keys share a group whether
// they differ by address or come from different snapshots (different frame tables).
// Thread-safety: none; lives for one report.
class GroupIndex {
 public:
  // Throws std::invalid_argument for `cumulative` with KeyType::traceback.
  GroupIndex(KeyType key, bool cumulative);

  // The traces' sizes and counts added up per group number (with `cumulative`, each trace
  // counts once in the group of each of its frames). Numbers are handed out in order of
  // first sight, so several sum() calls share them; each group keeps the key its first
  // trace showed.
  std::vector<Totals> sum(const std::vector<Trace>& traces);

  std::size_t size() const noexcept { return keys_.size(); }
  // What reports show for `group` (see Statistic::traceback), moved out.
  Traceback take_key(std::size_t group) { return std::move(keys_[group]); }

 private:
  struct FrameNumbersHash {
    std::size_t operator()(const std::vector<std::uint32_t>& frames) const noexcept;
  };

  std::uint32_t group_of_frame(const Traceback& tb, std::size_t i);
  std::uint32_t group_of_empty();
  std::uint32_t group_of_route(const Traceback& tb);
  std::uint32_t group_of_stack(const Traceback& tb);
  template <typename MakeKey>
  std::uint32_t group_of_id(const std::string& id, MakeKey&& make_key);

  KeyType key_;
  bool cumulative_;
  UserFrames user_frames_;
  // line/file/function: a frame's group; traceback: a frame's number in frame_ids_.
  FrameMemo<std::uint32_t> of_frame_;
  std::unordered_map<std::string, std::uint32_t> group_ids_;
  std::unordered_map<std::string, std::uint32_t> frame_ids_;  // traceback key only
  std::unordered_map<std::vector<std::uint32_t>, std::uint32_t, FrameNumbersHash> stacks_;
  std::vector<std::uint32_t> stack_;         // scratch for group_of_stack
  std::string id_;                           // scratch: the frame id being looked up
  std::vector<Traceback> keys_;              // by group number
  std::vector<std::uint64_t> last_counted_;  // cumulative: the trace that last counted in a group
  std::uint64_t trace_number_ = 0;
};

// What tells one group from another under `key` (not `traceback`): frames with the same id
// are counted in the same statistic.
std::string group_id(const Frame& frame, KeyType key);

// Whether each trace passes `filters` (as Snapshot::filter_traces keeps it).
std::vector<bool> passes_filters(const std::vector<Trace>& traces, const std::vector<Filter>& filters);

}  // namespace liveheap::report
