// A program whose main thread blocks SIGUSR1 for a while, as servers do around critical
// work (postgres's postmaster, for one): told "go", it says where its handler ran,
// "HANDLED ON MAIN" or "HANDLED ELSEWHERE". Runs unmodified under LD_PRELOAD.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>

namespace {

pthread_t g_main;
std::atomic<int> g_where{0};  // 1: the main thread, 2: another thread

void on_usr1(int) { g_where = pthread_equal(pthread_self(), g_main) ? 1 : 2; }

}  // namespace

int main() {
  g_main = pthread_self();
  struct sigaction action {};
  action.sa_handler = on_usr1;
  sigaction(SIGUSR1, &action, nullptr);
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &usr1, nullptr);
  std::printf("READY\n");
  std::fflush(stdout);
  char line[64];
  if (std::fgets(line, sizeof line, stdin) == nullptr || std::strcmp(line, "go\n") != 0) return 2;
  pthread_sigmask(SIG_UNBLOCK, &usr1, nullptr);  // a signal still pending arrives here
  std::printf(g_where == 1 ? "HANDLED ON MAIN\n" : g_where == 2 ? "HANDLED ELSEWHERE\n" : "NOT HANDLED\n");
  return 0;
}
