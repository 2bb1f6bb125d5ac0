// A program that manages its own descriptors, as daemons do: told "go" on stdin, it closes
// every descriptor but 0, 1 and 2 (one by one up to 1024, or with closefrom(3) when its
// argument says "closefrom"), opens its own (a pipe, a socket pair, /dev/null, a
// temporary file), forks, and the child counts which of them it still has:
//   "CHILD KEPT <kept> OF <opened>". Then, for a while, it allocates and writes a line into
// each temporary file, forks again and exits; last it reads back what its descriptors hold:
//   "UNTOUCHED" when the files hold its lines alone and nothing waits in the pipe or the
//   socket pair, else what was found. Runs unmodified under LD_PRELOAD.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  const bool use_closefrom = argc > 1 && std::strcmp(argv[1], "closefrom") == 0;
  std::printf("READY %d\n", static_cast<int>(::getpid()));
  std::fflush(stdout);
  char line[64];
  if (std::fgets(line, sizeof line, stdin) == nullptr || std::strcmp(line, "go\n") != 0) return 2;
  if (use_closefrom) ::closefrom(3);
  else
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
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
  // Long enough for liveheap's threads to have work (the history ticks every second in the
  // test), with allocations and a fork among the writes.
  const std::string kLine = "a line of the program's own\n";
  constexpr int kRounds = 15;
  std::vector<void*> kept;
  for (int round = 0; round < kRounds; ++round) {
    for (int k = 0; k < 64; ++k) kept.push_back(std::malloc(4096));
    for (std::size_t i = 6; i < mine.size(); ++i)
      if (::write(mine[i], kLine.data(), kLine.size()) != static_cast<ssize_t>(kLine.size())) return 3;
    if (round == 7) {
      const pid_t again = ::fork();
      if (again == 0) ::_exit(0);
      ::waitpid(again, nullptr, 0);
    }
    ::usleep(100000);
  }
  std::string expected;
  for (int round = 0; round < kRounds; ++round) expected += kLine;
  std::string found;
  for (std::size_t i = 6; i < mine.size(); ++i) {
    std::string text(expected.size() + kLine.size(), '\0');  // room to see a line too many
    const ssize_t n = ::pread(mine[i], text.data(), text.size(), 0);
    text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    if (text != expected)
      found += " file " + std::to_string(i - 6) + " holds " + std::to_string(text.size()) + " B";
  }
  for (const int fd : {mine[0], mine[2], mine[3]}) {  // the read ends: nothing may wait there
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 0) != 0) found += " fd " + std::to_string(fd) + " readable";
  }
  const std::string said = (found.empty() ? "UNTOUCHED" : "TOUCHED:" + found) + "\n";
  (void)!::write(1, said.data(), said.size());
  return 0;
}
