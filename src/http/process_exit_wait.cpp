// Waiting for a process's exit on a pidfd (see process_exit_wait.hpp).
#include "process_exit_wait.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <utility>

#include "own_descriptors.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {
namespace {

// What a descriptor is: its file's device and inode.
struct Identity {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const Identity&) const = default;
};

Identity identity_of(int fd) noexcept {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return {};
  return {st.st_dev, st.st_ino};
}

// Whether `fd` still is the pidfd of `pid` opened as `was`: the same file, and its fdinfo
// names `pid`, or -1 once the process is reaped. (Before Linux 6.9 every pidfd, and every
// eventfd or timerfd, is one anonymous inode: the fdinfo tells a pidfd from those.)
bool is_pidfd_of(int fd, pid_t pid, Identity was) noexcept {
  if (identity_of(fd) != was) return false;
  char path[48];
  std::snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
  const int info = ::open(path, O_RDONLY | O_CLOEXEC);
  if (info < 0) return false;
  char text[1024];
  const ssize_t n = ::read(info, text, sizeof text - 1);
  ::close(info);
  if (n <= 0) return false;
  text[n] = '\0';
  char line[32];
  std::snprintf(line, sizeof line, "\nPid:\t%d\n", static_cast<int>(pid));
  return std::strstr(text, line) != nullptr || std::strstr(text, "\nPid:\t-1\n") != nullptr;
}

// Closes `fd` if it still is that pidfd. Any doubt leaves it open, and the program's: a
// daemon may have closed it (a raw system call) and opened its own under the number.
void close_if_pidfd_of(int fd, pid_t pid, Identity was) noexcept {
  if (is_pidfd_of(fd, pid, was)) ::close(fd);
  else liveheap::boot::disown_descriptor(fd);
}

}  // namespace

bool ProcessExitWait::start(boost::asio::io_context& io, pid_t pid, std::function<void()> on_exit) noexcept {
  stop();
  const int fd =
      liveheap::boot::own_descriptor(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));  // close-on-exec
  if (fd < 0) return false;
  try {
    descriptor_ = std::make_unique<boost::asio::posix::stream_descriptor>(io, fd);
  } catch (...) {
    ::close(fd);  // not taken by any descriptor: closed at once, still ours
    return false;
  }
  pid_ = pid;
  const Identity opened = identity_of(fd);
  pidfd_dev_ = opened.dev;
  pidfd_ino_ = opened.ino;
  try {
    descriptor_->async_wait(boost::asio::posix::descriptor_base::wait_read,
                            [this, pid, on_exit = std::move(on_exit)](boost::system::error_code ec) {
                              if (ec || pid_ != pid) return;  // stopped meanwhile
                              stop();
                              exited_ = pid;
                              on_exit();
                            });
  } catch (...) {
    stop();
    return false;
  }
  return true;
}

void ProcessExitWait::stop() noexcept {
  if (!descriptor_) return;
  boost::system::error_code ignored;
  descriptor_->cancel(ignored);
  const int fd = descriptor_->release();  // out of the reactor, not closed
  descriptor_.reset();
  close_if_pidfd_of(fd, std::exchange(pid_, 0), {pidfd_dev_, pidfd_ino_});
}

void ProcessExitWait::abandon() noexcept {
  (void)descriptor_.release();  // the parent's io_context's, leaked with it
  pid_ = 0;
  exited_ = 0;
}

}  // namespace http
LIVEHEAP_NAMESPACE_END
