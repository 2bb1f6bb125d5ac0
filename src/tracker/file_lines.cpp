// Reading files through open(2) and read(2) (see file_lines.hpp).
#include "file_lines.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>

namespace liveheap::tracker {
namespace {

// read(2) retried when a signal interrupts it; what it returned otherwise.
ssize_t read_some(int fd, char* into, std::size_t size) noexcept {
  ssize_t n;
  do n = ::read(fd, into, size);
  while (n < 0 && errno == EINTR);
  return n;
}

}  // namespace

FileLines::FileLines(const char* path) noexcept : fd_(::open(path, O_RDONLY | O_CLOEXEC)) {}

FileLines::~FileLines() {
  if (fd_ >= 0) ::close(fd_);
}

bool FileLines::next(std::string& line) {
  line.clear();
  if (fd_ < 0) return false;
  for (;;) {
    const char* start = buffer_ + begin_;
    if (const auto* newline = static_cast<const char*>(std::memchr(start, '\n', end_ - begin_))) {
      line.append(start, newline);
      begin_ += static_cast<std::size_t>(newline - start) + 1;
      return true;
    }
    line.append(start, end_ - begin_);
    begin_ = end_ = 0;
    const ssize_t n = read_some(fd_, buffer_, sizeof buffer_);
    if (n <= 0) return !line.empty();  // the last line had no '\n'
    end_ = static_cast<std::size_t>(n);
  }
}

std::string read_first_line(const char* path) {
  std::string line;
  FileLines(path).next(line);
  return line;
}

std::string read_file_text(const char* path, std::size_t max) {
  std::string text;
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buffer[4096];
  for (ssize_t n; text.size() < max && (n = read_some(fd, buffer, sizeof buffer)) > 0;)
    text.append(buffer, std::min(static_cast<std::size_t>(n), max - text.size()));
  ::close(fd);
  return text;
}

}  // namespace liveheap::tracker
