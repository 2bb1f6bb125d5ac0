// Lines of source files for text tracebacks, read lazily and cached within fixed bounds
// (as Python's linecache serves tracemalloc's Traceback.format()).
// Thread-safety: SourceLines is safe to share; every call takes its mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace liveheap::report {

class SourceLines {
 public:
  struct Limits {
    std::size_t max_files = 256;             // files remembered, unreadable ones included
    std::size_t max_file_bytes = 1 << 20;    // bigger files are not read
    std::size_t max_total_bytes = 16 << 20;  // text kept for all files together
  };

  SourceLines() = default;
  explicit SourceLines(Limits limits) : limits_(limits) {}

  // Line `line` (1-based) of `path`, stripped of surrounding whitespace; empty when the
  // file is not a readable regular file within the limits, or has no such line.
  std::string line(const std::string& path, unsigned line);

  // Files read from disk so far (cache misses), for tests of the bounds.
  std::uint64_t reads() const;

 private:
  struct File {
    std::string text;                   // empty for a file that could not be read
    std::vector<std::uint32_t> starts;  // offset of each line in `text`
  };
  const File& load(const std::string& path);  // caller holds mutex_
  void evict_for(std::size_t bytes);          // caller holds mutex_

  Limits limits_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, File> files_;
  std::deque<std::string> order_;  // oldest first, for eviction
  std::size_t total_bytes_ = 0;
  std::uint64_t reads_ = 0;
};

// The process's cache, used by format_traceback().
SourceLines& source_lines();

}  // namespace liveheap::report
