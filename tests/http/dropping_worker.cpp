// A master that forks a worker which drops privileges, as nginx's `user nobody;` workers
// do: the worker calls setgroups, setgid and setuid to nobody (65534) at once, then keeps
// known bytes at one known line. Runs unmodified under LD_PRELOAD, as root.
//
//   dropping_worker   print "MASTER <pid>", fork; the worker drops privileges, keeps 3
//                     blocks of 1500 bytes and prints "WORKER <pid> <uid> <file>:<line>"
//                     (or "DROP-FAILED <errno>"); both live until stdin closes
// The lines are written with one write() each, so the processes' lines never interleave.
// Not reformatted: an allocation and the __LINE__ that names it share a line or a fixed offset.
// clang-format off
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

void* g_keep[3];  // outside any namespace: the stores (and the mallocs) must stay

namespace {

constexpr uid_t kNobody = 65534;

void say(const std::string& line) {
  const std::string text = line + "\n";
  (void)!::write(1, text.data(), text.size());
}

[[gnu::noinline]] void keep_known() {
  const int line = __LINE__ + 1;
  for (auto& block : g_keep) block = std::malloc(1500);
  say("WORKER " + std::to_string(::getpid()) + " " + std::to_string(::geteuid()) +
      " " __FILE__ ":" + std::to_string(line));
}

}  // namespace

int main() {
  say("MASTER " + std::to_string(::getpid()));
  const pid_t pid = ::fork();
  if (pid == 0) {
    const gid_t groups[] = {kNobody};
    errno = 0;
    if (::setgroups(1, groups) != 0 || ::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) {
      say("DROP-FAILED " + std::to_string(errno));
      std::_Exit(1);
    }
    // Never outlives the master (set after setuid, which clears it).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() == 1) std::_Exit(1);
    keep_known();
    for (;;) ::pause();
  }
  char c;
  while (::read(0, &c, 1) > 0) {
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return 0;
}
