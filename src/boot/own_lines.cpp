// liveheap's lines: configuration errors on stderr, the rest where LIVEHEAP_LOG says.
#include "own_lines.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "start_environment.hpp"

namespace liveheap::boot {
namespace {

std::atomic<bool> g_bad_log_said{false};

// One write of the whole line (a short line on a pipe is not interleaved with others).
void write_line(int fd, const char* line) noexcept {
  char text[1024];
  const int n = std::snprintf(text, sizeof text, "liveheap: %s\n", line);
  if (n <= 0) return;
  std::size_t length =
      static_cast<std::size_t>(n) < sizeof text ? static_cast<std::size_t>(n) : sizeof text - 1;
  if (length == sizeof text - 1) text[length - 1] = '\n';  // cut: still one line
  [[maybe_unused]] const ssize_t written = write(fd, text, length);
}

const char* log_destination() noexcept {
  return start_environment_captured() ? start_env("LIVEHEAP_LOG") : std::getenv("LIVEHEAP_LOG");
}

}  // namespace

void say_configuration_error(const char* line) noexcept { write_line(2, line); }

void log_line(const char* line) noexcept {
  const char* to = log_destination();
  if (to == nullptr) return;
  if (std::strcmp(to, "stderr") == 0) return write_line(2, line);
  if (to[0] != '/') {
    if (!g_bad_log_said.exchange(true)) {
      char why[512];
      std::snprintf(why, sizeof why,
                    "LIVEHEAP_LOG='%.400s' is neither stderr nor an absolute path: "
                    "liveheap's lines are not written",
                    to);
      say_configuration_error(why);
    }
    return;
  }
  const int fd = open(to, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);
  if (fd < 0) return;
  write_line(fd, line);
  close(fd);
}

}  // namespace liveheap::boot
