// The report vocabulary: Frame, Traceback, Trace, Statistic, StatisticDiff, Filter, Snapshot.
// Pure values modelled on CPython's tracemalloc; no engine needed to build or test them.
// Thread-safety: immutable values once built; share them freely between threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace liveheap {

// How allocations were tracked when a snapshot was taken.
enum class Mode { off, exact, sampled };

// "off", "exact", "sampled".
std::string_view to_string(Mode mode) noexcept;
// Throws std::invalid_argument naming the bad value.
Mode parse_mode(std::string_view text);

// One symbolized stack frame. Frames without debug info keep file empty, line 0, and the
// function falls back to "module+0xoffset".
struct Frame {
  std::string function;    // demangled, may be empty
  std::string file;        // source file, may be empty
  unsigned line = 0;       // 0 when unknown
  std::string module;      // shared object or executable path
  std::uintptr_t address = 0;  // return address as captured

  friend bool operator==(const Frame&, const Frame&) = default;
  friend auto operator<=>(const Frame&, const Frame&) = default;
};

// Most recent call first: traceback[0] is the innermost frame (often operator new).
using Traceback = std::vector<Frame>;

// Everything still allocated from one stack: the unit a snapshot is made of.
struct Trace {
  Traceback traceback;
  std::int64_t size = 0;   // live bytes (an unbiased estimate in sampled mode)
  std::int64_t count = 0;  // live blocks (an estimate in sampled mode)
};

// How statistics group traces (tracemalloc's key_type, plus `function`).
enum class KeyType { file, line, function, traceback };
std::string_view to_string(KeyType key) noexcept;
// Accepts "file", "line", "function", "traceback"; throws std::invalid_argument otherwise.
KeyType parse_key_type(std::string_view text);

// True for frames that are allocation plumbing rather than the user's code: the allocator,
// operator new, std::allocator and container internals, liveheap itself. The `line`,
// `file` and `function` keys describe the first frame for which this is false.
bool is_plumbing(const Frame& frame) noexcept;
// Index of the first non-plumbing frame; 0 if every frame is plumbing (or none exist).
std::size_t user_frame_index(const Traceback& traceback) noexcept;

// One group of a snapshot. `traceback` is the group's key: for `line` a single frame
// (the user's), for `file`/`function` a single frame with only that field meaningful,
// for `traceback` the whole stack.
struct Statistic {
  Traceback traceback;
  std::int64_t size = 0;
  std::int64_t count = 0;
};

// One group of a comparison between two snapshots (new minus old).
struct StatisticDiff {
  Traceback traceback;
  std::int64_t size = 0;
  std::int64_t size_diff = 0;
  std::int64_t count = 0;
  std::int64_t count_diff = 0;
};

// Include or exclude traces by a glob on a frame's file or function (tracemalloc.Filter).
// A trace passes the filters when it matches at least one inclusive filter (if any exist)
// and no exclusive one. Without all_frames only the user frame is tested.
struct Filter {
  enum class Field { file, function };
  bool inclusive = true;
  std::string pattern;  // fnmatch-style: * ? [set] [!set]; validated on construction
  Field field = Field::file;
  bool all_frames = false;

  // Throws std::invalid_argument for a malformed glob (e.g. an unclosed '[').
  Filter(bool inclusive, std::string pattern, Field field = Field::file, bool all_frames = false);
  bool matches(const Frame& frame) const noexcept;
  bool matches(const Traceback& traceback) const noexcept;
};

// Facts about how a snapshot was made, carried into every report.
struct SnapshotInfo {
  Mode mode = Mode::exact;
  std::uint64_t sample_interval = 0;  // bytes; 0 unless mode is sampled
  unsigned max_frames = 0;            // stack depth kept
  std::int64_t taken_at_ms = 0;       // unix time in milliseconds
  std::int64_t traced_current = 0;    // traced bytes when taken
  std::int64_t traced_peak = 0;
  std::int64_t tracker_memory = 0;    // the tracker's own bytes, never part of the traces
};

// The heap at one moment, one Trace per distinct stack.
class Snapshot {
 public:
  Snapshot() = default;
  Snapshot(std::vector<Trace> traces, SnapshotInfo info);

  const std::vector<Trace>& traces() const noexcept { return traces_; }
  const SnapshotInfo& info() const noexcept { return info_; }
  std::int64_t total_size() const noexcept;
  std::int64_t total_count() const noexcept;

  // A new snapshot keeping only the traces that pass `filters` (see Filter).
  Snapshot filter_traces(const std::vector<Filter>& filters) const;

  // Grouped by `key`, sorted as tracemalloc does: size, count, key, all descending.
  // With `cumulative`, every frame of a trace counts it (not for KeyType::traceback).
  std::vector<Statistic> statistics(KeyType key, bool cumulative = false) const;

  // This snapshot against an older one, new and vanished keys included; sorted as
  // tracemalloc does: |size_diff|, size, |count_diff|, count, key, all descending.
  std::vector<StatisticDiff> compare_to(const Snapshot& old, KeyType key,
                                        bool cumulative = false) const;

 private:
  std::vector<Trace> traces_;
  SnapshotInfo info_;
};

}  // namespace liveheap
