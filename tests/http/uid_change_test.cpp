// A forked worker that drops privileges (nginx's `user nobody;`) stays in its group: the
// root master's /processes lists it and ?pid= reaches it. Runs as root only.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <sstream>
#include <string>

#include "../support/temp_dir.hpp"
#include "child_process.hpp"
#include "client.hpp"
#include "gtest/gtest.h"

namespace http_test {
namespace {

namespace fs = std::filesystem;

TEST(UidChange, AWorkerThatDropsPrivilegesStaysInItsGroup) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, to drop privileges";
  test_support::TempDir runtime;  // mkdtemp: root's, 0700
  const std::uint16_t port = free_port();
  ChildProcess master({LIVEHEAP_DROPPING_WORKER},
                      {std::string("LD_PRELOAD=") + LIVEHEAP_PRELOAD_LIBRARY,
                       "LIVEHEAP_ADDR=127.0.0.1:" + std::to_string(port), "LIVEHEAP_MODE=exact",
                       "XDG_RUNTIME_DIR=" + runtime.path()});
  std::istringstream first(master.read_line(20000).value_or("EOF"));
  std::string word;
  long master_pid = 0, worker_pid = 0, worker_uid = -1;
  std::string where;
  first >> word >> master_pid;
  ASSERT_EQ(word, "MASTER");
  std::istringstream second(master.read_line(20000).value_or("EOF"));
  second >> word >> worker_pid >> worker_uid >> where;
  ASSERT_EQ(word, "WORKER");
  ASSERT_EQ(worker_uid, 65534);

  std::set<long> pids;
  std::string said;
  EXPECT_TRUE(wait_until(
      kPatience,
      [&] {
        const Reply reply = get(port, "/debug/memory/processes?format=json");
        said = std::to_string(reply.status) + " " + reply.body;
        pids.clear();
        if (reply.status != 200) return false;
        const nlohmann::json list = reply.json()["processes"];
        for (const auto& p : list) pids.insert(p["pid"].get<long>());
        return pids.size() == 2;
      },
      std::chrono::milliseconds(100)))
      << said;
  EXPECT_EQ(pids, (std::set<long>{master_pid, worker_pid}));
  // Its socket is in the master's private group directory, none under nobody's.
  const std::string group = runtime.path() + "/liveheap/127.0.0.1-" + std::to_string(port);
  EXPECT_TRUE(fs::exists(group + "/" + std::to_string(worker_pid) + ".sock"));
  EXPECT_FALSE(fs::exists("/tmp/liveheap-65534/127.0.0.1-" + std::to_string(port)));

  // The worker answers for itself: its kept bytes at their line.
  const Reply top = get(port, "/debug/memory/top?format=json&limit=1000&pid=" + std::to_string(worker_pid));
  ASSERT_EQ(top.status, 200) << top.body;
  const std::string line = where.substr(where.rfind(':') + 1);
  bool found = false;
  const nlohmann::json stats = top.json()["stats"];
  for (const auto& stat : stats)
    if (stat["line"] == std::stoi(line) && std::string(stat["file"]).ends_with("dropping_worker.cpp")) {
      found = true;
      EXPECT_EQ(stat["size"], 4500);
      EXPECT_EQ(stat["count"], 3);
    }
  EXPECT_TRUE(found) << top.body;
  // And in the merged report of the group.
  const Reply all = get(port, "/debug/memory/top?format=json&limit=1000&pid=all");
  ASSERT_EQ(all.status, 200) << all.body;
  EXPECT_EQ(all.json()["pids"].size(), 2u) << all.body;
}

}  // namespace
}  // namespace http_test
