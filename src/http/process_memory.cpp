// The process's memory as the kernel (/proc/self/status) and glibc (mallinfo2) see it.
#include "process_memory.hpp"

#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>

#include <charconv>
#include <string_view>

LIVEHEAP_NAMESPACE_BEGIN
namespace http {
namespace {

// "VmRSS:\t  1234 kB" -> 1234 * 1024, or -1.
std::int64_t status_field_bytes(std::string_view status, std::string_view name) {
  const auto at = status.find(name);
  if (at == std::string_view::npos) return -1;
  std::string_view rest = status.substr(at + name.size());
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
  std::int64_t kib = 0;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), kib);
  return ec == std::errc() ? kib * 1024 : -1;
}

}  // namespace

ProcessMemory read_process_memory() noexcept {
  // read(2) into the stack rather than a stream: cheap, and nothing here can throw.
  char buffer[8192];
  const int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {-1, -1};
  std::size_t used = 0;
  for (ssize_t n; used < sizeof buffer && (n = ::read(fd, buffer + used, sizeof buffer - used)) > 0;)
    used += static_cast<std::size_t>(n);
  ::close(fd);
  const std::string_view status(buffer, used);
  return {status_field_bytes(status, "\nVmRSS:"), status_field_bytes(status, "\nVmHWM:")};
}

MallocInfo malloc_info_of(const AllocatorInfo& glibc) noexcept {
  MallocInfo info;
  for (const auto& [name, bytes] : glibc.figures) {
    const auto value = static_cast<std::uint64_t>(bytes);
    if (name == "arena") info.arena = value;
    else if (name == "hblkhd") info.hblkhd = value;
    else if (name == "uordblks") info.uordblks = value;
    else if (name == "fordblks") info.fordblks = value;
    else if (name == "keepcost") info.keepcost = value;
  }
  return info;
}

MallocInfo read_malloc_info() noexcept {
  const struct mallinfo2 info = ::mallinfo2();
  return {info.arena, info.hblkhd, info.uordblks, info.fordblks, info.keepcost};
}

}  // namespace http
LIVEHEAP_NAMESPACE_END
