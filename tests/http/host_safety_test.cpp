// liveheap lives inside someone else's process: with LD_PRELOAD and LIVEHEAP_ADDR, the
// host's descriptors, stderr and port stay the host's. Real processes, real programs
// (bash, git), each test with its own registry (XDG_RUNTIME_DIR in a fresh directory).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <sstream>
#include <thread>

#include "../support/read_file.hpp"
#include "../support/temp_dir.hpp"
#include "child_process.hpp"
#include "client.hpp"
#include "runtime_dir.hpp"
#include "gtest/gtest.h"

extern char** environ;

namespace http_test {
namespace {

using test_support::read_file;

struct Finished {
  int status = -1;  // the exit status, -1 when it did not exit in time (then it was killed)
  std::string out;
  std::string err;
};

// Runs `argv` to its end, `env` on top of ours, stdin /dev/null, stdout and stderr to files.
Finished run_to_end(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                    std::chrono::seconds timeout = std::chrono::seconds(60)) {
  test_support::TempDir files;
  const std::string out = files / "out";
  const std::string err = files / "err";
  std::vector<std::string> all_env = env;
  for (char** e = environ; *e != nullptr; ++e) all_env.emplace_back(*e);  // first wins
  std::vector<char*> envp;
  for (std::string& e : all_env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argp;
  for (std::string& a : args) argp.push_back(a.data());
  argp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, argp[0], &actions, nullptr, argp.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  Finished run;
  if (rc != 0) return run;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  run.out = read_file(out);
  run.err = read_file(err);
  return run;
}

std::size_t processes_listed(std::uint16_t port) {
  const Reply reply = get(port, "/debug/memory/processes?format=json");
  return reply.status == 200 ? reply.json()["processes"].size() : 0;
}

// A preloaded program that holds the port, for the others to find it taken.
struct Holder {
  Holder(const RuntimeDir& dir, std::uint16_t port)
      : program({LIVEHEAP_EXACT_TRUTH, "--phases"}, preload_env(dir, port)) {
    EXPECT_EQ(program.read_line(20000).value_or("EOF"), "BASELINE-READY");
    EXPECT_TRUE(wait_until(kPatience, [&] { return processes_listed(port) == 1; }))
        << "the holder never answered on its port";
  }
  ChildProcess program;
};

// True when something accepts on 127.0.0.1:port.
bool accepts(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  const bool connected = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  ::close(fd);
  return connected;
}

// A plain listening socket, as any other service's: not liveheap.
int listen_plainly(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(fd, 16) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A process whose port another holds (it waits on the holder's pidfd, or retries the port
// every second without one) must not leave descriptor numbers behind for its children to
// lose: bash's pipe still reaches wc.
TEST(HostSafety, ANonHolderRunsAShellPipelineQuietly) {
  RuntimeDir dir;
  const std::uint16_t port = free_port();
  Holder holder(dir, port);
  const Finished run = run_to_end({"/bin/bash", "-c", "sleep 1.5; seq 10 | wc -l"}, preload_env(dir, port));
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "10\n");
  EXPECT_EQ(run.err, "") << "a process whose group holds the port says nothing";
}

// A program that closes every descriptor and opens its own (one by one, or with
// closefrom): its forked child keeps all of them, liveheap writes into none of them while
// the program works, forks again and exits, and the program is still answered on the
// port: liveheap's descriptors were left open, under numbers the program does not use.
TEST(HostSafety, AChildKeepsTheProgramsDescriptors) {
  struct Case {
    bool holds;
    const char* how;
  };
  for (const Case c : {Case{true, "loop"}, Case{false, "loop"}, Case{true, "closefrom"}}) {
    RuntimeDir dir;
    const std::uint16_t port = free_port();
    std::unique_ptr<Holder> other;
    if (!c.holds) other = std::make_unique<Holder>(dir, port);
    std::vector<std::string> env = preload_env(dir, port);
    env.push_back("LIVEHEAP_HISTORY_INTERVAL=1");  // the history ticks while the program writes
    ChildProcess program({LIVEHEAP_DESCRIPTOR_PROGRAM, c.how}, env);
    const std::string ready = program.read_line(20000).value_or("EOF");
    ASSERT_TRUE(ready.starts_with("READY ")) << ready;
    const std::size_t listed = c.holds ? 1 : 2;
    ASSERT_TRUE(wait_until(kPatience, [&] { return processes_listed(port) == listed; }))
        << "the program never registered";
    if (!c.holds)  // waiting for the holder (or a few retries of the port) first
      std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    program.write_line("go");
    EXPECT_EQ(program.read_line(20000).value_or("EOF"), "CHILD KEPT 10 OF 10")
        << "holds: " << c.holds << " " << c.how;
    // The program works for 1.5 s more.
    EXPECT_EQ(processes_listed(port), listed)
        << "the program's endpoint went with its descriptors; holds: " << c.holds << " " << c.how;
    EXPECT_EQ(program.read_line(20000).value_or("EOF"), "UNTOUCHED") << "holds: " << c.holds << " " << c.how;
    EXPECT_EQ(program.wait(20000), 0);
  }
}

// Debian's python3 closing every descriptor as a daemon does (os.closerange, glibc's
// close_range): the numbers it opens next are the lowest, and liveheap's endpoint in it
// still answers.
TEST(HostSafety, APythonThatClosesEveryDescriptorIsStillAnswered) {
  RuntimeDir dir;
  const std::uint16_t port = free_port();
  const std::string script =
      "import os, sys\n"
      "print('READY', flush=True)\n"
      "sys.stdin.readline()\n"
      "os.closerange(3, 65536)\n"
      "r, w = os.pipe()\n"
      "print('CLOSED', r, w, flush=True)\n"
      "sys.stdin.readline()\n";
  ChildProcess python({"/usr/bin/python3", "-c", script}, preload_env(dir, port));
  ASSERT_EQ(python.read_line(20000).value_or("EOF"), "READY");
  ASSERT_TRUE(wait_until(kPatience, [&] { return processes_listed(port) == 1; })) << "python never answered";
  python.write_line("go");
  EXPECT_EQ(python.read_line(20000).value_or("EOF"), "CLOSED 3 4");
  EXPECT_EQ(processes_listed(port), 1u) << "the endpoint went with the program's close_range";
  python.write_line("go");
  EXPECT_EQ(python.wait(20000), 0);
}

// Shells make numbers theirs with dup2 (`exec 3>file`; configure scripts keep their log on
// 5): the numbers bash redirects are its own, what it writes there reaches its files, and
// liveheap's endpoint in bash still answers.
TEST(HostSafety, AShellsRedirectionsToSmallNumbersLeaveTheEndpointAnswering) {
  RuntimeDir dir;
  const std::uint16_t port = free_port();
  test_support::TempDir files;
  const std::string script = "cd " + files.path() +
                             " && for n in 3 4 5 6 7 8 9; do eval \"exec $n>f$n\"; echo $n >&$n; done"
                             " && echo SET && read line && for n in 3 4 5 6 7 8 9; do echo again >&$n; done"
                             " && echo DONE";
  ChildProcess bash({"/bin/bash", "-c", script}, preload_env(dir, port));
  EXPECT_EQ(bash.read_line(20000).value_or("EOF"), "SET");
  EXPECT_TRUE(wait_until(kPatience, [&] { return processes_listed(port) == 1; }))
      << "bash, the port's holder, is not answered after its redirections";
  bash.write_line("go");
  EXPECT_EQ(bash.read_line(20000).value_or("EOF"), "DONE");
  EXPECT_EQ(bash.wait(20000), 0);
  for (int n = 3; n <= 9; ++n)
    EXPECT_EQ(read_file(files / ("f" + std::to_string(n))), std::to_string(n) + "\nagain\n") << n;
}

// Another tool preloaded after liveheap that watches the program's closes (proxychains and
// torsocks keep tables of descriptors) still sees every one: liveheap's close passes them
// on to the next definition, not straight to libc's.
TEST(HostSafety, AToolPreloadedAfterLiveheapSeesTheProgramsCloses) {
  const Finished run =
      run_to_end({"/bin/bash", "-c", "for n in 1 2 3 4 5; do exec 3>/dev/null; exec 3>&-; done"},
                 {std::string("LD_PRELOAD=") + LIVEHEAP_PRELOAD_LIBRARY + " " + LIVEHEAP_CLOSE_WATCHER});
  EXPECT_EQ(run.status, 0) << run.err;
  int closes = -1;
  EXPECT_EQ(std::sscanf(run.err.c_str(), "CLOSES %d", &closes), 1) << run.err;
  EXPECT_GE(closes, 5) << run.err;
}

// git forks and execs many times (gc: pack-refs, reflog, repack, prune...), as a non-holder.
TEST(HostSafety, GitGcUnderANonHolderSucceedsAsItDoesBare) {
  RuntimeDir dir;
  const std::uint16_t port = free_port();
  Holder holder(dir, port);
  test_support::TempDir repos;
  const std::string script =
      "set -e; cd \"$1\"; git init -q; for i in 1 2 3 4 5; do echo $i > f$i; git add f$i; "
      "git -c user.name=t -c user.email=t@example.com commit -qm c$i; done; sleep 1.5; "
      "git gc -q; git count-objects -v | grep -c '^count: 0$'";
  ::mkdir((repos / "bare").c_str(), 0700);
  ::mkdir((repos / "preloaded").c_str(), 0700);
  const Finished bare_run = run_to_end({"/bin/bash", "-c", script, "bash", repos / "bare"}, {});
  const Finished preloaded =
      run_to_end({"/bin/bash", "-c", script, "bash", repos / "preloaded"}, preload_env(dir, port));
  ASSERT_EQ(bare_run.status, 0) << bare_run.err;
  EXPECT_EQ(preloaded.status, bare_run.status) << preloaded.err;
  EXPECT_EQ(preloaded.out, bare_run.out);
  EXPECT_EQ(preloaded.err, bare_run.err);
}

// A port another program holds is that program's: when it closes (a restart, say), the
// preloaded process does not take it. The one process the user pointed at it is told so.
TEST(HostSafety, APortHeldByAnotherProgramIsNeverTakenFromIt) {
  RuntimeDir dir;
  const std::uint16_t port = free_port();
  const int service = listen_plainly(port);
  ASSERT_GE(service, 0);
  test_support::TempDir files;
  const std::string err = files / "err";
  ChildProcess program({"/bin/sh", "-c", std::string("exec ") + LIVEHEAP_EXACT_TRUTH + " --phases 2>" + err},
                       preload_env(dir, port));
  ASSERT_EQ(program.read_line(20000).value_or("EOF"), "BASELINE-READY");
  const std::string socket = dir.group(port) + "/" + std::to_string(program.pid()) + ".sock";
  ASSERT_TRUE(wait_until(kPatience, [&] { return ::access(socket.c_str(), F_OK) == 0; }))
      << "the program never registered";
  // Its tries at start are over well before this (it looks once more after 200 ms).
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ::close(service);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  bool taken = false;
  while (!taken && std::chrono::steady_clock::now() < until) {
    taken = accepts(port);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_FALSE(taken) << "the preloaded process took the port the other program let go";
  program.write_line("go");
  EXPECT_EQ(program.read_line(20000).value_or("EOF"), "ALLOCATED");
  EXPECT_EQ(read_file(err), "");
}

// A forked child (a prefork worker) that takes the port over when its parent exits says
// nothing: only the process the user started said where it serves (asked to by
// LIVEHEAP_LOG: without it none says anything).
TEST(HostSafety, AForkedChildSaysNothingOnStderr) {
  RuntimeDir dir;
  const std::uint16_t port = free_port();
  test_support::TempDir files;
  const std::string err = files / "err";
  std::vector<std::string> env = preload_env(dir, port);
  env.push_back("LIVEHEAP_LOG=stderr");
  ChildProcess master({"/bin/sh", "-c", std::string("exec ") + LIVEHEAP_PREFORK_TRUTH + " 2 2>" + err}, env);
  std::vector<pid_t> workers;
  ASSERT_TRUE(master.read_line(20000).value_or("EOF").starts_with("MASTER"));
  for (int k = 0; k < 2; ++k) {
    std::istringstream line(master.read_line(20000).value_or("EOF"));
    std::string word;
    int index = 0;
    long pid = 0;
    line >> word >> index >> pid;
    ASSERT_EQ(word, "WORKER");
    workers.push_back(static_cast<pid_t>(pid));
  }
  struct Reaper {
    ~Reaper() {
      for (pid_t pid : pids) ::kill(pid, SIGKILL);
    }
    std::vector<pid_t> pids;
  } reaper{workers};
  ASSERT_TRUE(wait_until(kPatience, [&] { return processes_listed(port) == 3; }));
  master.write_line("exit");
  EXPECT_EQ(master.wait(10000), 0);
  ASSERT_TRUE(wait_until(kPatience, [&] { return processes_listed(port) == 2; }))
      << "no worker took the port over";
  EXPECT_EQ(read_file(err),
            "liveheap: serving http://127.0.0.1:" + std::to_string(port) + "/debug/memory/\n");
}

// A signal sent to the process while its main thread blocks it waits for the main thread:
// the host's handler never runs on one of liveheap's threads, holder or not.
TEST(HostSafety, TheHostsSignalsStayOnTheHostsThreads) {
  for (const bool holds : {true, false}) {
    RuntimeDir dir;
    const std::uint16_t port = free_port();
    std::unique_ptr<Holder> other;
    if (!holds) other = std::make_unique<Holder>(dir, port);
    ChildProcess program({LIVEHEAP_SIGNAL_PROGRAM}, preload_env(dir, port));
    ASSERT_EQ(program.read_line(20000).value_or("EOF"), "READY");
    // Its endpoint's threads and the recorders' (100 ms later) all run by now.
    ASSERT_TRUE(wait_until(kPatience, [&] { return processes_listed(port) == (holds ? 1u : 2u); }));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ASSERT_EQ(::kill(program.pid(), SIGUSR1), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    program.write_line("go");
    EXPECT_EQ(program.read_line(20000).value_or("EOF"), "HANDLED ON MAIN") << "holds: " << holds;
    EXPECT_EQ(program.wait(20000), 0);
  }
}

}  // namespace
}  // namespace http_test
