// PostgreSQL 15 under the preload library: a throwaway cluster whose postmaster holds
// LIVEHEAP_ADDR's port starts, pgbench fills it and then opens a connection (a forked
// backend) per transaction without a hang, and the reports name the `postgres` executable
// in their frames, not the process titles its children set ("postgres: checkpointer").
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include <gtest/gtest.h>

#include "../support/read_file.hpp"
#include "../support/temp_dir.hpp"
#include "../support/threads_of.hpp"
#include "../support/wait.hpp"
#include "program_run.hpp"

namespace programs_test {
namespace {

const std::string kBin = "/usr/lib/postgresql/15/bin/";
constexpr auto kInitTimeout = 60s;
constexpr auto kBenchTimeout = 60s;  // pgbench -T 3: three seconds of work
// /top?pid=all symbolizes every process of the cluster: 13-23 s cold on a loaded 2-core
// machine.
constexpr int kReportTimeoutMs = 60000;

// Every "module" string anywhere in a report.
void collect_modules(const nlohmann::json& j, std::vector<std::string>& modules) {
  if (j.is_object()) {
    for (const auto& [name, value] : j.items()) {
      if (name == "module" && value.is_string()) modules.push_back(value.get<std::string>());
      collect_modules(value, modules);
    }
  } else if (j.is_array()) {
    for (const auto& value : j) collect_modules(value, modules);
  }
}

// What a process that did not exit is doing, for the failure message: its command line and
// each thread's name, state, kernel wait channel and system call; with gdb installed, every
// thread's stack.
std::string what_it_waits_on(pid_t pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  std::string command_line = test_support::read_file(proc + "/cmdline");
  std::replace(command_line.begin(), command_line.end(), '\0', ' ');
  std::string out = "pid " + std::to_string(pid) + ": " + command_line + "\n";
  for (const pid_t tid : test_support::threads_of(pid)) {
    const std::string task = test_support::task_dir(pid) + "/" + std::to_string(tid);
    std::string name = test_support::read_file(task + "/comm");
    const char state = test_support::thread_state(pid, tid);
    if (!name.empty() && name.back() == '\n') name.pop_back();
    out += "  thread " + std::to_string(tid) + " " + name + " state " + (state != '\0' ? state : '?') +
           " wchan " + test_support::read_file(task + "/wchan") + " syscall " +
           test_support::read_file(task + "/syscall");
  }
  if (::access("/usr/bin/gdb", X_OK) == 0) {
    const std::string command =
        "/usr/bin/gdb -batch -p " + std::to_string(pid) + " -ex 'thread apply all bt' 2>&1 </dev/null";
    if (FILE* gdb = ::popen(command.c_str(), "r")) {
      char buffer[4096];
      while (const std::size_t n = std::fread(buffer, 1, sizeof buffer, gdb)) out.append(buffer, n);
      ::pclose(gdb);
    }
  }
  return out;
}

// postgres refuses to run as root: as root, every command runs as `postgres` (or `nobody`).
class Postgres : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(installed(kBin + "postgres", "postgresql-15"));
    ASSERT_TRUE(installed(kBin + "pgbench", "postgresql-15"));
    if (::geteuid() == 0) {
      const passwd* user = ::getpwnam("postgres");
      if (user == nullptr) user = ::getpwnam("nobody");
      ASSERT_NE(user, nullptr) << "no postgres or nobody user to run PostgreSQL as";
      as_user_ = {"/usr/bin/setpriv", "--reuid=" + std::to_string(user->pw_uid),
                  "--regid=" + std::to_string(user->pw_gid), "--clear-groups", "--"};
      // The data directory, the socket and liveheap's registry are the user's.
      ASSERT_EQ(::chown(dir_.path().c_str(), user->pw_uid, user->pw_gid), 0);
    }
    port_ = http_test::free_port();
    admin_port_ = http_test::free_port();
  }
  void TearDown() override {
    if (!postmaster_) return;
    ::kill(postmaster_->pid(), SIGINT);  // fast shutdown
    postmaster_->wait(30000);
  }

  std::vector<std::string> as_user(std::vector<std::string> argv) const {
    argv.insert(argv.begin(), as_user_.begin(), as_user_.end());
    return argv;
  }
  // A client program against the cluster, as the user, bare.
  ProgramRun client(const std::string& program, std::vector<std::string> args,
                    std::chrono::milliseconds timeout) const {
    args.insert(args.begin(),
                {kBin + program, "-h", dir_.path(), "-p", std::to_string(port_), "-U", "postgres"});
    return run(as_user(args), {}, timeout, dir_.path());
  }

  test_support::TempDir dir_;
  std::vector<std::string> as_user_;
  std::uint16_t port_ = 0;
  std::uint16_t admin_port_ = 0;
  std::unique_ptr<http_test::ChildProcess> postmaster_;
};

TEST_F(Postgres, APreloadedPostmasterServesPgbenchAndNamesItsExecutable) {
  const ProgramRun init = run(as_user({kBin + "initdb", "-D", dir_ / "data", "-U", "postgres", "-A", "trust",
                                       "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"}),
                              {}, kInitTimeout, dir_.path());
  ASSERT_EQ(init.how(), "exit 0") << init.out << init.err;

  // env puts the preload library on postgres alone (not on setpriv).
  std::vector<std::string> command = {"/usr/bin/env"};
  for (const std::string& e : preload_env("exact", admin_port_, dir_.path())) command.push_back(e);
  command.insert(command.end(),
                 {kBin + "postgres", "-D", dir_ / "data", "-k", dir_.path(), "-p", std::to_string(port_),
                  "-c", "listen_addresses=", "-c", "shared_buffers=16MB", "-c", "max_connections=20", "-c",
                  "fsync=off", "-c", "log_min_messages=panic"});  // quiet: the test reports what went wrong
  postmaster_ = std::make_unique<http_test::ChildProcess>(as_user(command), clean_env({}));

  ProgramRun ready;
  ASSERT_TRUE(test_support::wait_until(test_support::kPatience,
                                       [&] {
                                         ready = client("pg_isready", {}, 10s);
                                         return ready.how() == "exit 0";
                                       }))
      << "the preloaded postmaster never accepted connections: pg_isready " << ready.how() << ": "
      << ready.out << ready.err;

  const ProgramRun fill = client("pgbench", {"-i", "-q", "-s", "1", "postgres"}, kBenchTimeout);
  ASSERT_EQ(fill.how(), "exit 0") << fill.out << fill.err;
  // -C: a new connection, so a new forked backend, for every transaction.
  const ProgramRun bench = client("pgbench", {"-C", "-c", "4", "-T", "3", "-n", "postgres"}, kBenchTimeout);
  ASSERT_EQ(bench.how(), "exit 0") << bench.out << bench.err;
  EXPECT_NE(bench.out.find("number of failed transactions: 0"), std::string::npos) << bench.out;

  nlohmann::json top;
  ASSERT_NO_THROW(
      top = get_json(admin_port_, "/debug/memory/top?key=traceback&format=json&pid=all", kReportTimeoutMs));
  std::vector<std::string> modules;
  collect_modules(top, modules);
  ASSERT_FALSE(modules.empty()) << top.dump().substr(0, 2000);
  bool executable = false;
  std::set<std::string> titles;
  for (const std::string& module : modules) {
    if (module.find("postgres: ") != std::string::npos) titles.insert(module);
    executable |= module.ends_with("/postgres") || module == "postgres";
  }
  EXPECT_TRUE(titles.empty()) << titles.size() << " frame modules are process titles, not the "
                              << "executable, e.g. '" << (titles.empty() ? "" : *titles.begin()) << "'";
  EXPECT_TRUE(executable) << "no frame names the postgres executable";

  // A fast shutdown ends every process of the cluster. A checkpointer forked while
  // liveheap's thread was naming the allocator once waited for that naming forever at exit
  // (and kept the test's output open after the test ended).
  std::vector<pid_t> cluster;
  ASSERT_NO_THROW({
    const nlohmann::json listed = get_json(admin_port_, "/debug/memory/processes?format=json", 10000);
    for (const nlohmann::json& p : listed.at("processes")) cluster.push_back(p.at("pid").get<pid_t>());
  });
  EXPECT_GE(cluster.size(), 4u) << "the postmaster and its checkpointer, writers and launcher";
  ::kill(postmaster_->pid(), SIGINT);
  const int status = postmaster_->wait(30000);
  std::string waiting;  // what the processes still there do, before any is killed
  if (status != 0)
    for (const pid_t pid : cluster)
      if (::kill(pid, 0) == 0) waiting += what_it_waits_on(pid);
  EXPECT_EQ(status, 0) << "the postmaster did not shut down within 30 s\n" << waiting;
  postmaster_.reset();
  for (const pid_t pid : cluster) {
    const bool gone = static_cast<bool>(test_support::wait_until(5s, [&] { return ::kill(pid, 0) != 0; }));
    EXPECT_TRUE(gone) << "pid " << pid << " of the cluster outlived its postmaster";
    if (!gone) ::kill(pid, SIGKILL);
  }
}

}  // namespace
}  // namespace programs_test
