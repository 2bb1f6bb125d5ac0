// Text in tracemalloc's format, byte for byte (Lib/tracemalloc.py: _format_size,
// Statistic.__str__, StatisticDiff.__str__, Traceback.format's "  File" lines), with C++
// names shortened and library frames folded so that a stack reads like a Python one.
#include "liveheap/format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "plumbing.hpp"
#include "source_lines.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace {

template <typename... Args>
std::string printf_string(const char* format, Args... args) {
  char buffer[128];
  const int n = std::snprintf(buffer, sizeof buffer, format, args...);
  return std::string(buffer, n < 0 ? 0 : static_cast<std::size_t>(n));
}

// The frame a statistic is named after: the key frame, or for a whole traceback its
// user frame.
const Frame& key_frame(const Traceback& key, KeyType key_type) {
  static const Frame kNone;
  if (key.empty()) return kNone;
  return key_type == KeyType::traceback ? key[user_frame_index(key)] : key.front();
}

std::string average_suffix(std::int64_t size, std::int64_t count) {
  if (count == 0) return {};
  return ", average=" + format_size(static_cast<double>(size) / static_cast<double>(count), false);
}

constexpr std::size_t kMinFold = 2;       // a single library frame is shown as it is
constexpr std::size_t kMaxLibraries = 3;  // named in a fold line; the rest are counted
constexpr std::string_view kEllipsis = "\u2026";

// Columns a UTF-8 string takes (code points; every character here is one column wide).
std::size_t columns(std::string_view text) {
  std::size_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

// Byte offset of code point `k` of `text`.
std::size_t offset_of(std::string_view text, std::size_t k) {
  std::size_t i = 0;
  for (; i < text.size(); ++i)
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80 && k-- == 0) break;
  return i;
}

// `text` within `max` columns: its head and tail around "…" when longer.
std::string fit(std::string text, std::size_t max) {
  const std::size_t have = columns(text);
  if (have <= max || max < 2) return text;
  const std::size_t head = (max - 1) / 2;
  const std::size_t tail = max - 1 - head;
  return text.substr(0, offset_of(text, head)) + std::string(kEllipsis) +
         text.substr(offset_of(text, have - tail));
}

// "  File \"file\", line N, in f"; without a file, its module. The function takes what room
// the location leaves, and at least 40 columns.
std::string frame_line(const Frame& f, std::size_t max_columns) {
  if (is_route_frame(f)) return fit("  Request \"" + f.function + "\"", max_columns);
  std::string line = f.file.empty() ? "  File \"" + f.module + "\""
                                    : "  File \"" + f.file + "\", line " + std::to_string(f.line);
  if (f.function.empty()) return line;
  line += ", in ";
  const std::size_t used = columns(line);
  const std::size_t room = max_columns > used + 40 ? max_columns - used : 40;
  return line + fit(shown_function(f), room);
}

// Which frames fold. Library frames, unless that would leave no frame of the program's own
// code: a stripped program installed under /usr/lib (PostgreSQL's postmaster) has only
// module+offset frames there, which look like a system library's. Then only plumbing and
// header frames fold, and the program's frames are shown.
using Folds = bool (*)(const Frame&) noexcept;

Folds what_folds(const Traceback& traceback) {
  for (const Frame& f : traceback)
    if (!report::is_library_frame(f)) return report::is_library_frame;
  return report::is_library_source_frame;
}

// How many frames that fold start at `first`.
std::size_t library_run(const Traceback& traceback, std::size_t first, Folds folds) {
  std::size_t end = first;
  while (end < traceback.size() && folds(traceback[end])) ++end;
  return end - first;
}

// "  … 14 frames in boost::asio, boost::beast …": the libraries in order of appearance.
std::string fold_line(const Traceback& traceback, std::size_t first, std::size_t count) {
  std::vector<std::string> names;
  for (std::size_t i = first; i < first + count; ++i) {
    std::string name = report::library_name(traceback[i]);
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(std::move(name));
  }
  std::string line = "  " + std::string(kEllipsis) + " " + std::to_string(count) + " frames in ";
  for (std::size_t i = 0; i < names.size() && i < kMaxLibraries; ++i) line += (i == 0 ? "" : ", ") + names[i];
  if (names.size() > kMaxLibraries) line += " (+" + std::to_string(names.size() - kMaxLibraries) + " more)";
  return line + " " + std::string(kEllipsis);
}

}  // namespace

std::string format_size(double size, bool sign) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  for (const char* unit : kUnits) {
    const bool bytes = unit == kUnits[0];
    if (std::fabs(size) < 100 && !bytes) return printf_string(sign ? "%+.1f %s" : "%.1f %s", size, unit);
    if (std::fabs(size) < 10 * 1024 || unit == kUnits[4])
      return printf_string(sign ? "%+.0f %s" : "%.0f %s", size, unit);
    size /= 1024;
  }
  return {};  // unreachable: TiB always returns
}

std::string format_key(const Traceback& key, KeyType key_type) {
  const Frame& f = key_frame(key, key_type);
  switch (key_type) {
    case KeyType::file: return f.file;
    case KeyType::function:
    case KeyType::route: return f.function;
    case KeyType::line:
    case KeyType::traceback:
      if (f.file.empty()) return f.function;
      return f.file + ":" + std::to_string(f.line);
  }
  return {};
}

std::string format_statistic(std::string_view key, std::int64_t size, std::int64_t count) {
  return std::string(key) + ": size=" + format_size(static_cast<double>(size), false) +
         ", count=" + std::to_string(count) + average_suffix(size, count);
}

std::string format_statistic_diff(std::string_view key, std::int64_t size, std::int64_t size_diff,
                                  std::int64_t count, std::int64_t count_diff) {
  return std::string(key) + ": size=" + format_size(static_cast<double>(size), false) + " (" +
         format_size(static_cast<double>(size_diff), true) + "), count=" + std::to_string(count) + " (" +
         printf_string("%+lld", static_cast<long long>(count_diff)) + ")" + average_suffix(size, count);
}

std::string format_statistic(const Statistic& stat, KeyType key_type) {
  return format_statistic(format_key(stat.traceback, key_type), stat.size, stat.count);
}

std::string format_statistic_diff(const StatisticDiff& stat, KeyType key_type) {
  return format_statistic_diff(format_key(stat.traceback, key_type), stat.size, stat.size_diff, stat.count,
                               stat.count_diff);
}

std::vector<std::string> format_traceback(const Traceback& traceback, const TracebackStyle& style) {
  std::vector<std::string> lines;
  const Folds folds = what_folds(traceback);
  for (std::size_t i = 0; i < traceback.size();) {
    const std::size_t run = style.fold ? library_run(traceback, i, folds) : 0;
    if (run >= kMinFold) {
      lines.push_back(fold_line(traceback, i, run));
      i += run;
      continue;
    }
    const Frame& f = traceback[i++];
    lines.push_back(frame_line(f, style.max_columns));
    if (!style.source) continue;
    const std::string source = report::source_lines().line(f.file, f.line);
    if (!source.empty()) lines.push_back(fit("    " + source, style.max_columns));
  }
  return lines;
}

std::string folded_stack(const Traceback& traceback) {
  std::string out;
  const auto leaf = traceback.rend() - static_cast<std::ptrdiff_t>(user_frame_index(traceback));
  for (auto it = traceback.rbegin(); it != leaf; ++it) {
    if (!out.empty()) out += ';';
    const std::size_t from = out.size();
    out += it->function.empty() ? it->module : it->function;
    for (std::size_t i = from; i < out.size(); ++i)
      if (out[i] == ';' || out[i] == '\n' || out[i] == '\r') out[i] = '_';
  }
  return out;
}

LIVEHEAP_NAMESPACE_END

LIVEHEAP_NAMESPACE_BEGIN

std::string format_cap(const TrackerMemoryCap& cap) {
  if (!cap.reached) return {};
  const auto size = [](std::int64_t bytes) { return format_size(static_cast<double>(bytes), false); };
  return "tracker-memory cap " + size(cap.max_bytes) + " reached: " + std::to_string(cap.folded_blocks) +
         " allocations (" + size(cap.folded_bytes) + ") folded into " + std::string(kOverCapFunction) + ", " +
         std::to_string(cap.dropped_blocks) + " dropped (" + size(cap.dropped_bytes) + ")";
}

LIVEHEAP_NAMESPACE_END
