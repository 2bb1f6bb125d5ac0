// Text in tracemalloc's format, byte for byte (Lib/tracemalloc.py: _format_size,
// Statistic.__str__, StatisticDiff.__str__).
#include "liveheap/format.hpp"

#include <cmath>
#include <cstdio>

namespace liveheap {
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

}  // namespace

std::string format_size(double size, bool sign) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  for (const char* unit : kUnits) {
    const bool bytes = unit == kUnits[0];
    if (std::fabs(size) < 100 && !bytes)
      return printf_string(sign ? "%+.1f %s" : "%.1f %s", size, unit);
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
    case KeyType::function: return f.function;
    case KeyType::line:
    case KeyType::traceback:
      if (f.file.empty()) return f.function;
      return f.file + ":" + std::to_string(f.line);
  }
  return {};
}

std::string format_statistic(const Statistic& stat, KeyType key_type) {
  return format_key(stat.traceback, key_type) + ": size=" +
         format_size(static_cast<double>(stat.size), false) +
         ", count=" + std::to_string(stat.count) + average_suffix(stat.size, stat.count);
}

std::string format_statistic_diff(const StatisticDiff& stat, KeyType key_type) {
  return format_key(stat.traceback, key_type) + ": size=" +
         format_size(static_cast<double>(stat.size), false) + " (" +
         format_size(static_cast<double>(stat.size_diff), true) + "), count=" +
         std::to_string(stat.count) + " (" + printf_string("%+lld", static_cast<long long>(stat.count_diff)) +
         ")" + average_suffix(stat.size, stat.count);
}

std::vector<std::string> format_traceback(const Traceback& traceback) {
  // tracemalloc's Traceback.format() lines, most recent call first; a frame without
  // debug info names its module and offset instead of a file.
  std::vector<std::string> lines;
  for (const Frame& f : traceback) {
    std::string line = f.file.empty() ? "  File \"" + f.module + "\"" : "  File \"" + f.file + "\", line " + std::to_string(f.line);
    if (!f.function.empty()) line += ", in " + f.function;
    lines.push_back(std::move(line));
  }
  return lines;
}

std::string folded_stack(const Traceback& traceback) {
  std::string out;
  for (auto it = traceback.rbegin(); it != traceback.rend(); ++it) {
    if (!out.empty()) out += ';';
    const std::size_t from = out.size();
    out += it->function.empty() ? it->module : it->function;
    for (std::size_t i = from; i < out.size(); ++i)
      if (out[i] == ';' || out[i] == '\n' || out[i] == '\r') out[i] = '_';
  }
  return out;
}

}  // namespace liveheap
