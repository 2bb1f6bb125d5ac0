// Prints how many threads this process has, for the recorders test: `task_count MS` after
// MS milliseconds; `task_count until N MS` once it has at least N and the count has held
// for 100 ms (or MS have passed);
// `task_count fork-until N MS` the same in a child forked without exec.
#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace {

int threads() {
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) return -1;
  int n = 0;
  while (const dirent* e = ::readdir(dir)) n += e->d_name[0] != '.';
  ::closedir(dir);
  return n;
}

// Once there are `wanted` threads, the count once it has held for 100 ms: a thread that
// only hands its work over (the preload library's early endpoint to the full one) may
// still be there when the last one wanted starts.
int until(int wanted, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int n = threads();
  while (n < wanted && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    n = threads();
  }
  for (int same = 0; same < 5 && std::chrono::steady_clock::now() < deadline; ++same) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (const int now = threads(); now != n) n = now, same = -1;
  }
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2) {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(argv[1])));
    std::printf("%d\n", threads());
    return 0;
  }
  if (argc == 4 && std::strcmp(argv[1], "until") == 0) {
    std::printf("%d\n", until(std::atoi(argv[2]), std::atoi(argv[3])));
    return 0;
  }
  if (argc == 4 && std::strcmp(argv[1], "fork-until") == 0) {
    std::fflush(stdout);
    const pid_t child = ::fork();
    if (child == 0) {
      std::printf("child %d\n", until(std::atoi(argv[2]), std::atoi(argv[3])));
      std::fflush(stdout);
      ::_exit(0);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  }
  std::fprintf(stderr, "usage: task_count MS | until N MS | fork-until N MS\n");
  return 2;
}
