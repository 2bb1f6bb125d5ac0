// nginx under the preload library, as Debian runs it: a master and two workers that, when
// started as root, drop their privileges to `nobody`. It serves a static file, and the
// master's port lists all three processes.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "../http/client.hpp"
#include "../support/temp_dir.hpp"
#include "../support/wait.hpp"
#include "program_run.hpp"

namespace programs_test {
namespace {

// Long enough for two forked workers to register on a loaded machine (they do in ~50 ms).
constexpr auto kListed = 15s;

TEST(Nginx, ServesAStaticFileAndItsPortListsTheMasterAndBothWorkers) {
  ASSERT_TRUE(installed("/usr/sbin/nginx", "nginx"));
  test_support::TempDir dir;
  // The workers (nobody, when we are root) read the file and write their temporary files.
  ::chmod(dir.path().c_str(), 0755);
  ::mkdir((dir / "www").c_str(), 0755);
  ::mkdir((dir / "runtime").c_str(), 0700);
  std::ofstream(dir / "www/index.html") << "hello from nginx\n";
  const std::uint16_t port = http_test::free_port();
  const std::uint16_t admin_port = http_test::free_port();
  std::ofstream(dir / "nginx.conf") << "daemon off;\nmaster_process on;\nworker_processes 2;\n"
                                    << (::geteuid() == 0 ? "user nobody nogroup;\n" : "") << "pid "
                                    << dir / "nginx.pid"
                                    << ";\nerror_log " << dir / "error.log"
                                    << ";\n"
                                    << "events { worker_connections 64; }\n"
                                    << "http {\n  access_log off;\n"
                                    << "  client_body_temp_path " << dir / "body"
                                    << ";\n  proxy_temp_path " << dir / "proxy"
                                    << ";\n  fastcgi_temp_path " << dir / "fastcgi"
                                    << ";\n  uwsgi_temp_path " << dir / "uwsgi"
                                    << ";\n  scgi_temp_path " << dir / "scgi"
                                    << ";\n"
                                    << "  server { listen 127.0.0.1:" << port << "; root " << dir / "www"
                                    << "; }\n}\n";
  http_test::ChildProcess nginx(
      {"/usr/sbin/nginx", "-p", dir.path(), "-c", dir / "nginx.conf", "-e", dir / "error.log"},
      clean_env(preload_env("exact", admin_port, dir / "runtime")));

  http_test::Reply page;
  ASSERT_TRUE(test_support::wait_until(test_support::kPatience,
                                       [&] {
                                         page = http_test::get(port, "/index.html");
                                         return page.status == 200;
                                       }))
      << "nginx never served the file; its error log:\n"
      << std::ifstream(dir / "error.log").rdbuf();
  EXPECT_EQ(page.body, "hello from nginx\n");

  nlohmann::json listed;
  const auto three = test_support::wait_until(kListed, [&] {
    listed = get_json(admin_port, "/debug/memory/processes?format=json")["processes"];
    return listed.size() == 3;
  });
  EXPECT_TRUE(three) << "GET /processes lists " << listed.size()
                     << " processes, not the master and its 2 workers: " << listed.dump();
  std::set<long> pids;
  for (const auto& process : listed) pids.insert(process.value("pid", -1L));
  EXPECT_TRUE(pids.contains(nginx.pid())) << listed.dump();

  ::kill(nginx.pid(), SIGQUIT);  // graceful: the workers finish and exit, then the master
  EXPECT_EQ(nginx.wait(20000), 0) << "nginx did not stop on SIGQUIT";
}

}  // namespace
}  // namespace programs_test
