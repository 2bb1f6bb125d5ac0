// Source lines for tracebacks: a bounded cache of whole files, read with plain POSIX calls
// so that a path naming a FIFO or a device never blocks or floods a report.
#include "source_lines.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fork_safe_once.hpp"

namespace liveheap::report {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// The whole file when it is a regular file of at most `max_bytes`, else "".
std::string read_small_file(const std::string& path, std::size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return {};
  std::string text;
  struct stat info {};
  if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) &&
      static_cast<std::size_t>(info.st_size) <= max_bytes) {
    text.resize(static_cast<std::size_t>(info.st_size));
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::read(fd, text.data() + done, text.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    text.resize(done);
  }
  ::close(fd);
  return text;
}

}  // namespace

std::string SourceLines::line(const std::string& path, unsigned line) {
  if (path.empty() || line == 0) return {};
  std::lock_guard lock(mutex_);
  const File& file = load(path);
  if (line > file.starts.size()) return {};
  std::size_t begin = file.starts[line - 1];
  std::size_t end = line < file.starts.size() ? file.starts[line] : file.text.size();
  while (begin < end && is_space(file.text[begin])) ++begin;
  while (end > begin && is_space(file.text[end - 1])) --end;
  return file.text.substr(begin, end - begin);
}

std::uint64_t SourceLines::reads() const {
  std::lock_guard lock(mutex_);
  return reads_;
}

const SourceLines::File& SourceLines::load(const std::string& path) {
  if (const auto found = files_.find(path); found != files_.end()) return found->second;
  ++reads_;
  File file;
  file.text = read_small_file(path, std::min(limits_.max_file_bytes, limits_.max_total_bytes));
  if (!file.text.empty()) {
    file.starts.push_back(0);
    for (std::size_t i = 0; i + 1 < file.text.size(); ++i)
      if (file.text[i] == '\n') file.starts.push_back(static_cast<std::uint32_t>(i + 1));
  }
  evict_for(file.text.size());
  total_bytes_ += file.text.size();
  order_.push_back(path);
  return files_.emplace(path, std::move(file)).first->second;
}

void SourceLines::evict_for(std::size_t bytes) {
  while (!order_.empty() &&
         (files_.size() >= limits_.max_files || total_bytes_ + bytes > limits_.max_total_bytes)) {
    const auto oldest = files_.find(order_.front());
    total_bytes_ -= oldest->second.text.size();
    files_.erase(oldest);
    order_.pop_front();
  }
}

namespace {
SourceLines* new_source_lines() { return new SourceLines(); }
}  // namespace

SourceLines& source_lines() { return engine::fork_safe_once<SourceLines, new_source_lines>(); }

}  // namespace liveheap::report
