// A scope in which the calling thread blocks every asynchronous signal, for creating
// liveheap's threads: a new thread inherits its creator's mask, and the host's signal
// handlers must run on the host's threads only. A handler run on liveheap's thread could
// find liveheap's locks held by that very thread (a fork in a SIGALRM handler), and a host
// that waits for SIGTERM with sigwait() in one thread, or counts on SIGCHLD interrupting its
// own poll(), never sees a signal that liveheap's thread took.
// Thread-safety: a scope changes the mask of its own thread only.
#pragma once

#include <pthread.h>
#include <signal.h>

namespace liveheap::engine {

class BlockedSignals {
 public:
  BlockedSignals() noexcept {
    sigset_t asynchronous;
    sigfillset(&asynchronous);
    // Signals a fault raises in the thread itself stay deliverable: blocked, the kernel
    // would kill the process without running the host's handler (a crash reporter's).
    for (const int fault : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS})
      sigdelset(&asynchronous, fault);
    pthread_sigmask(SIG_BLOCK, &asynchronous, &saved_);
  }
  ~BlockedSignals() { pthread_sigmask(SIG_SETMASK, &saved_, nullptr); }

  BlockedSignals(const BlockedSignals&) = delete;
  BlockedSignals& operator=(const BlockedSignals&) = delete;

 private:
  sigset_t saved_;
};

}  // namespace liveheap::engine
