// Waits on an io_context for a process to exit, without a timer: a pidfd of it, which the
// kernel makes readable once it has. The group's processes that do not hold the port wait so
// for the holder (endpoint.cpp). The descriptor is closed only while its number still is
// that pidfd: a daemon may close every descriptor it did not open and open its own under the
// same numbers; one that cannot be told apart is left open (close-on-exec).
// Thread-safety: one io_context's thread; a forked child abandons the parent's wait.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include "liveheap/export.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {

class ProcessExitWait {
 public:
  // Waits for `pid` instead of whatever it waited for; `on_exit` runs on `io`'s thread once
  // that process has exited. False when no pidfd could be had (a kernel before 5.3, out of
  // descriptors or memory): nothing waits then.
  bool start(boost::asio::io_context& io, pid_t pid, std::function<void()> on_exit) noexcept;
  // Stops waiting (the pidfd closed, as above); on_exit will not run.
  void stop() noexcept;
  // The process waited for, 0 for none.
  pid_t waiting_for() const noexcept { return pid_; }
  // The last process seen to exit, 0 for none: a holder record may still name it a moment.
  pid_t exited() const noexcept { return exited_; }
  // In a forked child: the parent's wait belongs to the parent's io_context, left as it is.
  void abandon() noexcept;

 private:
  std::unique_ptr<boost::asio::posix::stream_descriptor> descriptor_;
  dev_t pidfd_dev_ = 0;  // the pidfd's file as opened, to tell it by later
  ino_t pidfd_ino_ = 0;
  pid_t pid_ = 0;
  pid_t exited_ = 0;
};

}  // namespace http
LIVEHEAP_NAMESPACE_END
