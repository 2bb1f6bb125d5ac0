// Files liveheap reads (/proc's), through open(2) and read(2) rather than std::ifstream:
// liveheap's own calls to open and close make the descriptor liveheap's
// (src/boot/own_descriptors.hpp, src/http/own_descriptor_wraps.cpp), so that a program
// closing every descriptor meanwhile leaves the file open, and liveheap's close never lands
// on a number the program opened since; libstdc++'s calls are not liveheap's code.
#pragma once

#include <cstddef>
#include <string>

namespace liveheap::tracker {

// A file a line at a time (without its '\n'), a buffer at a time: a busy host's
// /proc/net/tcp is megabytes.
class FileLines {
 public:
  explicit FileLines(const char* path) noexcept;
  ~FileLines();
  FileLines(const FileLines&) = delete;
  FileLines& operator=(const FileLines&) = delete;

  // The next line into `line`; false at the end, or when the file cannot be read.
  bool next(std::string& line);

 private:
  int fd_;
  std::size_t begin_ = 0, end_ = 0;  // the unread bytes of buffer_
  char buffer_[4096];
};

// The file's first line (without its '\n'); "" when it cannot be read.
std::string read_first_line(const char* path);

// The file's first `max` bytes; "" when it cannot be read.
std::string read_file_text(const char* path, std::size_t max = std::size_t{1} << 20);

}  // namespace liveheap::tracker
