// A program that manages its own descriptors, as daemons do: told "go" on stdin, it closes
// every descriptor but 0, 1 and 2, opens its own (a pipe, a socket pair, /dev/null, a
// temporary file), forks, and the child counts which of them it still has:
//   "CHILD KEPT <kept> OF <opened>". Runs unmodified under LD_PRELOAD.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

int main() {
  std::printf("READY %d\n", static_cast<int>(::getpid()));
  std::fflush(stdout);
  char line[64];
  if (std::fgets(line, sizeof line, stdin) == nullptr || std::strcmp(line, "go\n") != 0) return 2;
  for (int fd = 3; fd < 1024; ++fd) ::close(fd);
  std::vector<int> mine;
  int pair[2];
  if (::pipe(pair) == 0) mine.insert(mine.end(), {pair[0], pair[1]});
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, pair) == 0) mine.insert(mine.end(), {pair[0], pair[1]});
  for (int k = 0; k < 2; ++k) mine.push_back(::open("/dev/null", O_RDWR));
  for (int k = 0; k < 4; ++k) mine.push_back(::open("/tmp", O_TMPFILE | O_RDWR, 0600));
  const pid_t child = ::fork();
  if (child == 0) {
    int kept = 0;
    for (const int fd : mine) kept += fd >= 0 && ::fcntl(fd, F_GETFD) != -1;
    const std::string said =
        "CHILD KEPT " + std::to_string(kept) + " OF " + std::to_string(mine.size()) + "\n";
    (void)!::write(1, said.data(), said.size());
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
