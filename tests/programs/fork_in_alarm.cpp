// A program that forks from a SIGALRM handler while its main thread works: what an
// old-style supervisor or a timer-driven spawner does. It prints "forked N" and exits 0; a
// lock held across the signal (the allocator's, or a tracker's fork handlers') hangs it.
// `fork_in_alarm allocate` works by allocating and freeing, so that signals land inside
// malloc and free; `fork_in_alarm compute` by arithmetic alone.
#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace {

constexpr int kForks = 20;
volatile sig_atomic_t forks = 0;

void on_alarm(int) {
  if (forks >= kForks) return;   // a signal between the loop's last check and the timer's end
  const pid_t child = ::fork();  // async-signal-safe; the child only exits
  if (child == 0) ::_exit(0);
  if (child > 0) forks = forks + 1;
}

}  // namespace

int main(int argc, char* argv[]) {
  const bool allocate = argc < 2 || std::string_view(argv[1]) != "compute";
  struct sigaction action = {};
  action.sa_handler = on_alarm;
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGALRM, &action, nullptr);
  const itimerval every_5ms = {{0, 5000}, {0, 5000}};
  ::setitimer(ITIMER_REAL, &every_5ms, nullptr);
  // Allocate and free all the time, so that signals land inside malloc and free.
  void* kept[64] = {};
  volatile unsigned sum = 0;
  for (unsigned i = 0; forks < kForks; ++i) {
    if (!allocate) {
      sum = sum + i * 7919;
      continue;
    }
    void*& slot = kept[i % 64];
    std::free(slot);
    slot = std::malloc(16 + (i * 7919) % 4096);
  }
  const itimerval off = {};
  ::setitimer(ITIMER_REAL, &off, nullptr);
  for (void* p : kept) std::free(p);
  int reaped = 0;
  while (::waitpid(-1, nullptr, 0) > 0) ++reaped;
  std::printf("forked %d, reaped %d\n", static_cast<int>(forks), reaped);
  return 0;
}
