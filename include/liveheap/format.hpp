// Text renderings of report values (tracemalloc's format, byte for byte); their JSON is in
// liveheap/json.hpp.
// Thread-safety: pure functions; format_traceback reads source files through one
// process-wide cache, which takes a lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "liveheap/export.hpp"
#include "liveheap/snapshot.hpp"

LIVEHEAP_API_BEGIN

// tracemalloc's _format_size: "0 B", "99 B", "10.0 KiB", "38.5 MiB"; with `sign`, "+1.5 KiB".
std::string format_size(double size, bool sign);

// The key of a statistic as text: "file:line" for `line`, the file for `file`, the function
// for `function`, and for `traceback` the user frame's "file:line".
std::string format_key(const Traceback& key, KeyType key_type);

// "file:line: size=38.5 MiB, count=6, average=6.4 MiB" (tracemalloc's Statistic.__str__).
std::string format_statistic(const Statistic& stat, KeyType key_type);
// "file:line: size=38.5 MiB (+25.6 MiB), count=6 (+4), average=6.4 MiB".
std::string format_statistic_diff(const StatisticDiff& stat, KeyType key_type);
// The same from a key already named (format_key's text), as a report read back from JSON has.
std::string format_statistic(std::string_view key, std::int64_t size, std::int64_t count);
std::string format_statistic_diff(std::string_view key, std::int64_t size, std::int64_t size_diff,
                                  std::int64_t count, std::int64_t count_diff);
// A C++ function's name for display, shortened as pprof does: template arguments become
// "<…>"; parameters, return type, ABI tags and "[clone …]" go. "void ns::op<A, B>::f(int)
// const" -> "ns::op<…>::f". Names that are not C++ ("main", "lib.so+0x10") stay as they are.
std::string short_function(std::string_view function);
// The function a report shows for `frame`: a C++ name shortened (short_function); a route's
// name or a Python function's qualified name as it is.
std::string shown_function(const Frame& frame);
// "python" for a frame of Python code (is_python_frame), else "native": JSON's "kind".
std::string_view frame_kind(const Frame& frame) noexcept;

// How format_traceback() lays a stack out.
struct TracebackStyle {
  bool source = true;             // the source line under its frame, when the file is readable
  bool fold = true;               // runs of library frames as one "… N frames in …" line
  std::size_t max_columns = 200;  // longer names and source lines are cut in the middle
};

// The stack as text, most recent call first: per frame
//   "  File \"file\", line N, in short_function" (tracemalloc's line plus the function), then
//   "    source line" (stripped, as linecache gives it) when the file can be read;
// runs of two or more library frames (plumbing, Boost and std headers, system libraries)
// become "  … N frames in boost::asio, std …".
std::vector<std::string> format_traceback(const Traceback& traceback, const TracebackStyle& style = {});
// A stack as flamegraph.pl's folded line begins: frames root first, joined by ';' (a frame
// without a function name is its module); ';' and newlines inside names become '_'. The
// plumbing frames above the user's frame (those `key=line` skips) are left out, so that the
// leaf is the line that asked for the memory.
std::string folded_stack(const Traceback& traceback);

// "" while the cap was never reached; else "tracker-memory cap 16.0 MiB reached: 1234
// allocations (77.1 KiB) folded into [over the tracker-memory cap], 0 dropped (0 B)".
std::string format_cap(const TrackerMemoryCap& cap);

LIVEHEAP_API_END
