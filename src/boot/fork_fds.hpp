// The admin sockets a forked child must not keep: after fork() without exec, the child
// holds copies of its parent's listening and client sockets that no thread of its own
// serves (clients would hang on them, and a restarted program could not bind the port).
// A pthread_atfork child handler closes them, then runs the registered hooks. A socket is
// known by its number AND its identity (device and inode): the child closes a number only
// while it still is that socket, never a file the program opened under a number that was
// once liveheap's (a program that closes every descriptor and opens its own, say).
// Thread-safety: every function may be called from any thread; the table is lock-free so
// that a fork while another thread updates it cannot leave a lock held in the child. One
// ForkFd is used by one thread at a time.
#pragma once

#include "shared.hpp"

namespace liveheap::boot {

// Owns one entry of the table: the socket `fd` as it is now (number, device, inode) from
// construction to destruction (or until moved from or reset). Destroy or reset it before
// closing the socket. A descriptor that is not a socket, or a full table (256), tracks
// nothing. In a forked child every entry is already free: an owner the child inherited
// must be abandoned (placement-new over it), never destroyed or reset.
class LIVEHEAP_SHARED ForkFd {
 public:
  ForkFd() noexcept = default;
  explicit ForkFd(int fd) noexcept;
  ForkFd(ForkFd&& other) noexcept;
  ForkFd& operator=(ForkFd&& other) noexcept;
  ~ForkFd();
  ForkFd(const ForkFd&) = delete;
  ForkFd& operator=(const ForkFd&) = delete;

  // Frees the entry now (the socket is about to close).
  void reset() noexcept;

  // Whether `fd` is still the socket this entry tracks (the host may have closed it and
  // opened something else under its number since).
  bool still_tracks(int fd) const noexcept;
  // Whether it tracks anything (false when the table was full, or after reset()).
  bool tracking() const noexcept { return slot_ >= 0; }

 private:
  int slot_ = -1;
};

// Registers the child handler now (the first tracked socket or hook registers it too): it
// also unmarks liveheap's descriptors in the child (own_descriptors.hpp).
void register_fork_handler() noexcept;

// Run `hook` in every forked child, after the tracked sockets are closed. At most 8 hooks.
LIVEHEAP_SHARED void on_fork_child(void (*hook)()) noexcept;

}  // namespace liveheap::boot
