// A prefork server in miniature, for the processes tests: the master forks workers (no
// exec), each of which keeps known bytes at one known line when told to. Runs unmodified
// under LD_PRELOAD.
//
//   prefork_truth N    print "MASTER <pid>" and one "WORKER <k> <pid>" per worker, then read
//                      commands on stdin:
//     go               every worker k keeps 3 blocks of 1000*(k+1) bytes at KEEP_LINE and
//                      prints "KEPT <pid> <file>:<line> <bytes> <count>"
//     spawn            the master forks one more worker (a respawned one) and prints its
//                      "WORKER <k> <pid>"
//     exit             the master exits; its workers live on (up to a minute, or until killed)
// The lines are written with one write() each, so the processes' lines never interleave.
// Not reformatted: an allocation and the __LINE__ that names it share a line or a fixed offset.
// clang-format off
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

// Outside the anonymous namespace: a static array no one reads lets the compiler drop the
// stores, and then the mallocs themselves (allowed, and g++ -O1 does it).
void* g_keep[16];

namespace {

void say(const std::string& line) {
  const std::string text = line + "\n";
  (void)!::write(1, text.data(), text.size());
}

// "KEPT" only once all three blocks are kept: a test reads the heap as soon as it sees it.
// Formatted on the stack, not in strings: their heap buffers would still be live when the
// line is written, and a test reading the heap at once counted them (+240 B, 2 blocks).
[[gnu::noinline]] void keep_known(int k) {
  const int line = __LINE__ + 1;
  for (int i = 0; i < 3; ++i) g_keep[i] = std::malloc(1000 * (k + 1));
  char text[1024];
  const int n = std::snprintf(text, sizeof text, "KEPT %d %s:%d %d 3\n", static_cast<int>(::getpid()), __FILE__,
                              line, 3000 * (k + 1));
  if (n > 0) (void)!::write(1, text, std::min<std::size_t>(static_cast<std::size_t>(n), sizeof text - 1));
}

// A worker: commands come from the master through `in`; when the master is gone, live on.
[[noreturn]] void worker(int k, int in) {
  char c = 0;
  std::string line;
  while (::read(in, &c, 1) == 1) {
    if (c != '\n') {
      line += c;
      continue;
    }
    if (line == "go") keep_known(k);
    line.clear();
  }
  for (int i = 0; i < 600; ++i) ::usleep(100000);  // orphaned: a minute at most
  std::_Exit(0);
}

// Forks worker number pipes.size(), which reads its commands from a pipe kept in `pipes`.
bool spawn(std::vector<int>& pipes) {
  int fds[2];
  if (::pipe(fds) != 0) return false;
  const int k = static_cast<int>(pipes.size());
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[1]);
    for (int w : pipes) ::close(w);
    worker(k, fds[0]);
  }
  ::close(fds[0]);
  pipes.push_back(fds[1]);
  say("WORKER " + std::to_string(k) + " " + std::to_string(pid));
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const int workers = argc > 1 ? std::atoi(argv[1]) : 2;
  say("MASTER " + std::to_string(::getpid()));
  std::vector<int> pipes;
  for (int k = 0; k < workers; ++k)
    if (!spawn(pipes)) return 1;
  char buffer[64];
  while (std::fgets(buffer, sizeof buffer, stdin) != nullptr) {
    if (std::strcmp(buffer, "exit\n") == 0) return 0;
    if (std::strcmp(buffer, "spawn\n") == 0) {
      if (!spawn(pipes)) return 1;
      continue;
    }
    for (int w : pipes) (void)!::write(w, buffer, std::strlen(buffer));
  }
  return 0;
}
