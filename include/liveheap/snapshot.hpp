// The report vocabulary: Frame, Traceback, Trace, Statistic, StatisticDiff, Filter, Snapshot.
// Pure values modelled on CPython's tracemalloc; no engine needed to build or test them.
// Thread-safety: immutable values once built; share them freely between threads.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "liveheap/export.hpp"

LIVEHEAP_API_BEGIN

// How allocations were tracked when a snapshot was taken.
enum class Mode { off, exact, sampled };

// "off", "exact", "sampled".
std::string_view to_string(Mode mode) noexcept;
// Throws std::invalid_argument naming the bad value.
Mode parse_mode(std::string_view text);

// One symbolized stack frame. Frames without debug info keep file empty, line 0, and the
// function falls back to "module+0xoffset".
struct Frame {
  std::string function;        // demangled, may be empty
  std::string file;            // source file, may be empty
  unsigned line = 0;           // 0 when unknown
  std::string module;          // shared object or executable path
  std::uintptr_t address = 0;  // return address as captured

  friend bool operator==(const Frame&, const Frame&) = default;
  friend auto operator<=>(const Frame&, const Frame&) = default;
};

// A stack, most recent call first: traceback[0] is the innermost frame (often operator new).
// An immutable value whose frames live in a table shared with the snapshot it came from
// (as CPython's tracemalloc interns frames): a traceback is that table plus the indices of
// its frames in it, so copying one copies a pointer and integers, never a Frame, and a
// snapshot of 10k stacks holds each distinct frame once.
// Thread-safety: immutable (the table too); copies may be read and destroyed on any thread.
class Traceback {
 public:
  using FrameTable = std::vector<Frame>;
  class const_iterator;
  using iterator = const_iterator;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;
  using reverse_iterator = const_reverse_iterator;
  using value_type = Frame;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using reference = const Frame&;
  using const_reference = const Frame&;

  Traceback() = default;
  // Frames of its own, in a table of their own.
  Traceback(std::initializer_list<Frame> frames);
  Traceback(std::vector<Frame> frames);
  // The frames (*table)[indices[0]], (*table)[indices[1]], ...: shares `table`.
  // Throws std::out_of_range for an index outside the table.
  Traceback(std::shared_ptr<const FrameTable> table, std::vector<std::uint32_t> indices);

  size_type size() const noexcept { return indices_.size(); }
  bool empty() const noexcept { return indices_.empty(); }
  const Frame& operator[](size_type i) const noexcept { return (*table_)[indices_[i]]; }
  const Frame& at(size_type i) const;  // throws std::out_of_range
  const Frame& front() const noexcept { return (*this)[0]; }
  const Frame& back() const noexcept { return (*this)[size() - 1]; }
  const_iterator begin() const noexcept;
  const_iterator end() const noexcept;
  const_reverse_iterator rbegin() const noexcept;
  const_reverse_iterator rend() const noexcept;

  // Frames [first, first + count) sharing this table: a one-frame key copies no string.
  // Throws std::out_of_range when the range is not inside this traceback.
  Traceback slice(size_type first, size_type count) const;

  // The shared table and where each frame sits in it, so that work that depends only on a
  // frame can be done once per distinct frame (table, index), not once per traceback.
  const std::shared_ptr<const FrameTable>& table() const noexcept { return table_; }
  const std::vector<std::uint32_t>& indices() const noexcept { return indices_; }

  // Frame by frame: equal frames from two different tables are equal.
  friend bool operator==(const Traceback& a, const Traceback& b) noexcept;

 private:
  std::shared_ptr<const FrameTable> table_;  // null only while there are no frames
  std::vector<std::uint32_t> indices_;
};

// Yields the frames in order, as const Frame& (a random-access iterator over the indices).
class Traceback::const_iterator {
 public:
  using iterator_concept = std::random_access_iterator_tag;
  using iterator_category = std::random_access_iterator_tag;
  using value_type = Frame;
  using difference_type = std::ptrdiff_t;
  using pointer = const Frame*;
  using reference = const Frame&;

  const_iterator() = default;
  reference operator*() const noexcept { return frames_[*index_]; }
  pointer operator->() const noexcept { return &frames_[*index_]; }
  reference operator[](difference_type n) const noexcept { return frames_[index_[n]]; }
  const_iterator& operator++() noexcept {
    ++index_;
    return *this;
  }
  const_iterator operator++(int) noexcept {
    const_iterator old = *this;
    ++index_;
    return old;
  }
  const_iterator& operator--() noexcept {
    --index_;
    return *this;
  }
  const_iterator operator--(int) noexcept {
    const_iterator old = *this;
    --index_;
    return old;
  }
  const_iterator& operator+=(difference_type n) noexcept {
    index_ += n;
    return *this;
  }
  const_iterator& operator-=(difference_type n) noexcept {
    index_ -= n;
    return *this;
  }
  friend const_iterator operator+(const_iterator it, difference_type n) noexcept { return it += n; }
  friend const_iterator operator+(difference_type n, const_iterator it) noexcept { return it += n; }
  friend const_iterator operator-(const_iterator it, difference_type n) noexcept { return it -= n; }
  friend difference_type operator-(const_iterator a, const_iterator b) noexcept {
    return a.index_ - b.index_;
  }
  friend bool operator==(const_iterator a, const_iterator b) noexcept { return a.index_ == b.index_; }
  friend auto operator<=>(const_iterator a, const_iterator b) noexcept { return a.index_ <=> b.index_; }

 private:
  friend class Traceback;
  const_iterator(const Frame* frames, const std::uint32_t* index) noexcept : frames_(frames), index_(index) {}
  const Frame* frames_ = nullptr;
  const std::uint32_t* index_ = nullptr;
};

inline Traceback::const_iterator Traceback::begin() const noexcept {
  return {table_ ? table_->data() : nullptr, indices_.data()};
}
inline Traceback::const_iterator Traceback::end() const noexcept {
  return begin() + static_cast<difference_type>(indices_.size());
}
inline Traceback::const_reverse_iterator Traceback::rbegin() const noexcept {
  return const_reverse_iterator(end());
}
inline Traceback::const_reverse_iterator Traceback::rend() const noexcept {
  return const_reverse_iterator(begin());
}

// Everything still allocated from one stack: the unit a snapshot is made of.
struct Trace {
  Traceback traceback;
  std::int64_t size = 0;   // live bytes (an unbiased estimate in sampled mode)
  std::int64_t count = 0;  // live blocks (an estimate in sampled mode)
  // Allocated from this stack since the process started, freed or not (estimates in
  // sampled mode): filled by the tracker, 0 in snapshots built or loaded elsewhere.
  std::int64_t alloc_size = 0;
  std::int64_t alloc_count = 0;
};

// How statistics group traces (tracemalloc's key_type, plus `function`, and `route`: the
// request that allocated, route_of()).
enum class KeyType { file, line, function, traceback, route };
// Every key, in the order a message lists them: the one list of the keys' names.
inline constexpr KeyType kKeyTypes[] = {KeyType::line, KeyType::file, KeyType::function, KeyType::traceback,
                                        KeyType::route};
std::string_view to_string(KeyType key) noexcept;
// Accepts each of kKeyTypes' names ("line", "file", ...); throws std::invalid_argument
// otherwise.
KeyType parse_key_type(std::string_view text);
// kKeyTypes' names for a message: "line, file, function, traceback or route" (`last`
// before the last one).
std::string key_type_names(std::string_view last = " or ");

// The route of the request that allocated a trace's blocks (liveheap/request_scope.hpp,
// liveheap/liveheap.h) is its stack's outermost frame: a frame of module kRouteModule whose
// function is the route's name. A stack allocated outside any request has none: its route
// reads kNoRequest.
inline constexpr std::string_view kRouteModule = "[request route]";
inline constexpr std::string_view kNoRequest = "(no request)";
bool is_route_frame(const Frame& frame) noexcept;
// A frame of Python code in a process running CPython: its file, line and qualified
// function as tracemalloc names them, and module kPythonModule. Such frames take the
// place of the interpreter's evaluator frames in a stack (docs/ARCHITECTURE.md).
inline constexpr std::string_view kPythonModule = "[python]";
bool is_python_frame(const Frame& frame) noexcept;
// The route's name, or kNoRequest.
std::string_view route_of(const Traceback& traceback) noexcept;
// The frame a route is shown by (key=route's key; what route_of reads).
Frame route_frame(std::string_view route);
// Whether `route` matches any of `globs` (fnmatch-style, the routes' route= parameter);
// true when there are none. Throws std::invalid_argument for a malformed glob.
bool route_matches(std::string_view route, const std::vector<std::string>& globs);

// True for frames that are allocation plumbing rather than the user's code: the allocator,
// operator new, std::allocator and container internals, liveheap itself. The `line`,
// `file` and `function` keys describe the first frame for which this is false.
bool is_plumbing(const Frame& frame) noexcept;
// Adds the user's own allocators and pools to is_plumbing(), replacing any earlier list:
// each glob is a Filter spec (Filter::parse), "GLOB" on the file or "function:GLOB" on the
// function, where a function glob may match the name as shown (short_function) or in full.
// Throws std::invalid_argument for a malformed glob, leaving the list as it was.
void set_plumbing(const std::vector<std::string>& globs);
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
  // "GLOB" filters on the file, "function:GLOB" on the function (the routes' include= and
  // exclude= syntax). Throws std::invalid_argument for an empty or malformed glob.
  static Filter parse(bool inclusive, std::string_view spec);
  bool matches(const Frame& frame) const noexcept;
  bool matches(const Traceback& traceback) const noexcept;
};

// The function name of the one stack that allocations fold into once the tracker-memory
// cap is reached (Options::max_tracker_memory): it holds their bytes, so totals stay whole.
inline constexpr std::string_view kOverCapFunction = "[over the tracker-memory cap]";

// What the tracker-memory cap did since the process started. Folded allocations are traced
// at the kOverCapFunction stack instead of their own (their bytes and counts still count);
// dropped ones are not traced at all (the live-block table had no room, or sampled mode's
// region was full). In sampled mode, samples and their weighted bytes.
struct TrackerMemoryCap {
  std::int64_t max_bytes = 0;  // the cap; 0 in snapshots made without one
  bool reached = false;        // a stack or block was refused for the cap
  std::uint64_t folded_blocks = 0;
  std::int64_t folded_bytes = 0;
  std::uint64_t dropped_blocks = 0;
  std::int64_t dropped_bytes = 0;
  friend bool operator==(const TrackerMemoryCap&, const TrackerMemoryCap&) = default;
};

// Facts about how a snapshot was made, carried into every report.
struct SnapshotInfo {
  Mode mode = Mode::exact;
  std::uint64_t sample_interval = 0;  // bytes; 0 unless mode is sampled
  unsigned max_frames = 0;            // stack depth kept
  std::int64_t taken_at_ms = 0;       // unix time in milliseconds
  std::int64_t traced_current = 0;    // traced bytes when taken
  std::int64_t traced_peak = 0;
  std::int64_t tracker_memory = 0;  // the tracker's own bytes, never part of the traces
  TrackerMemoryCap cap;             // the cap when taken, and what it had folded or dropped
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
  // A new snapshot keeping only the traces whose route (route_of) matches one of `globs`
  // (all of them when there are none). Throws std::invalid_argument for a malformed glob.
  Snapshot filter_routes(const std::vector<std::string>& globs) const;

  // Grouped by `key`, sorted as tracemalloc does: size, count, key, all descending.
  // With `cumulative`, every frame of a trace counts it (not for KeyType::traceback).
  std::vector<Statistic> statistics(KeyType key, bool cumulative = false) const;

  // This snapshot against an older one, new and vanished keys included; sorted as
  // tracemalloc does: |size_diff|, size, |count_diff|, count, key, all descending.
  std::vector<StatisticDiff> compare_to(const Snapshot& old, KeyType key, bool cumulative = false) const;

 private:
  std::vector<Trace> traces_;
  SnapshotInfo info_;
};

LIVEHEAP_API_END
