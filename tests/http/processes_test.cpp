// Every process reachable through one port, with real processes under
// LD_PRELOAD: a prefork master whose forked workers keep known bytes, a wrapper that forks
// the program, the registry's permissions, stale sockets, a child outliving its parent.
// Each test has its own registry (XDG_RUNTIME_DIR in a fresh private directory).
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "child_process.hpp"
#include "../support/temp_dir.hpp"
#include "../support/threads_of.hpp"
#include "client.hpp"
#include "exchange.hpp"
#include "runtime_dir.hpp"
#include "forward.hpp"
#include "liveheap/baseline_report.hpp"
#include "liveheap/processes_report.hpp"
#include "liveheap/report.hpp"
#include "liveheap/stats_report.hpp"
#include "gtest/gtest.h"

extern char** environ;

namespace http_test {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// GET /processes until it lists `count` processes; its "processes" (the last seen when it
// never did, for the caller's check to show).
nlohmann::json wait_for_processes(std::uint16_t port, std::size_t count) {
  nlohmann::json list;
  const testing::AssertionResult listed = wait_until(
      kPatience,
      [&] {
        const Reply reply = get(port, "/debug/memory/processes?format=json");
        if (reply.status == 200) list = reply.json()["processes"];
        return list.size() == count;
      },
      std::chrono::milliseconds(100));
  if (!listed) ADD_FAILURE() << "/processes never listed " << count << " processes: " << listed.message();
  return list;
}

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  return {std::istream_iterator<std::string>(in), {}};
}

// The statistic of a /diff JSON at `line` of a file ending in `file`, or null.
nlohmann::json stat_at(const nlohmann::json& diff, const std::string& where) {
  const auto colon = where.rfind(':');
  const std::string file = where.substr(0, colon);
  const int line = std::stoi(where.substr(colon + 1));
  const std::string base = file.substr(file.rfind('/') + 1);
  for (const auto& stat : diff["stats"])
    if (stat["line"] == line && std::string(stat["file"]).ends_with(base)) return stat;
  return nullptr;
}

std::size_t sockets_in(const std::string& dir) {
  std::size_t n = 0;
  if (fs::exists(dir))
    for (const auto& entry : fs::directory_iterator(dir)) n += entry.path().extension() == ".sock";
  return n;
}

// Kills worker pids a test learned, whatever happens to the test.
struct Reaper {
  ~Reaper() {
    for (pid_t pid : pids) ::kill(pid, SIGKILL);
  }
  std::vector<pid_t> pids;
};

// GET `target` from one process on its own socket in the registry, not through the
// holder: what that process itself says (a body, or "" when it did not answer in time).
std::string get_direct(const std::string& socket, const std::string& target) {
  liveheap::client::Request request{boost::beast::http::verb::get, target, 11};
  const liveheap::client::Result result = liveheap::client::exchange_now(
      liveheap::client::Address::unix_socket(socket), std::move(request), {15s, 15s, 15s});
  if (!result.response && result.failed == liveheap::client::Step::connect)
    throw std::runtime_error("cannot connect to " + socket);
  return result.response ? result.response->body() : "";
}

// The ?seconds= windows a process counts open, by its own /stats.
unsigned windows_of(const std::string& socket) {
  return nlohmann::json::parse(get_direct(socket, "/debug/memory/stats?format=json"))
      .at("windows")
      .get<unsigned>();
}

// A request on a connection the test keeps open (its client "waits"; closing it hangs up).
std::unique_ptr<Connection> ask_and_wait(std::uint16_t port, const std::string& target) {
  auto connection = std::make_unique<Connection>(port);
  connection->write("GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  return connection;
}

// Resumes a process the test stopped, however the test ends.
struct Resume {
  ~Resume() { ::kill(pid, SIGCONT); }
  pid_t pid;
};

// Whether every thread of `pid` is stopped: kill(SIGSTOP) returns before the stop has
// reached the threads, and a thread still running may answer one more request.
bool all_threads_stopped(pid_t pid) {
  const std::vector<pid_t> threads = test_support::threads_of(pid);
  return !threads.empty() && std::all_of(threads.begin(), threads.end(), [pid](pid_t tid) {
    return test_support::thread_state(pid, tid) == 'T';
  });
}

class Prefork : public ::testing::Test {
 protected:
  void SetUp() override {
    port_ = free_port();
    master_ = std::make_unique<ChildProcess>(std::vector<std::string>{LIVEHEAP_PREFORK_TRUTH, "2"},
                                             preload_env(dir_, port_));
    const auto master = words(master_->read_line(20000).value_or("EOF"));
    ASSERT_EQ(master.at(0), "MASTER");
    master_pid_ = std::stol(master.at(1));
    for (int k = 0; k < 2; ++k) {
      const auto worker = words(master_->read_line(20000).value_or("EOF"));
      ASSERT_EQ(worker.at(0), "WORKER");
      workers_.push_back(std::stol(worker.at(2)));
      reaper_.pids.push_back(workers_.back());
    }
    ASSERT_EQ(wait_for_processes(port_, 3).size(), 3u);
  }

  // Tells the workers to keep their bytes; "<file>:<line>" -> truth by worker pid.
  std::map<long, std::pair<std::string, long>> keep() {
    master_->write_line("go");
    std::map<long, std::pair<std::string, long>> kept;
    for (int k = 0; k < 2; ++k) {
      const auto line = words(master_->read_line(20000).value_or("EOF"));
      EXPECT_EQ(line.at(0), "KEPT");
      kept[std::stol(line.at(1))] = {line.at(2), std::stol(line.at(3))};
    }
    return kept;
  }

  std::string socket_of(long pid) const { return dir_.group(port_) + "/" + std::to_string(pid) + ".sock"; }
  unsigned holder_windows() const {
    return get(port_, "/debug/memory/stats?format=json").json().at("windows").get<unsigned>();
  }

  RuntimeDir dir_;
  std::uint16_t port_ = 0;
  std::unique_ptr<ChildProcess> master_;
  long master_pid_ = 0;
  std::vector<long> workers_;
  Reaper reaper_;
};

TEST_F(Prefork, ProcessesListsTheMasterAndItsForkedWorkers) {
  const auto list = wait_for_processes(port_, 3);
  std::set<long> pids;
  for (const auto& p : list) {
    pids.insert(p["pid"].get<long>());
    EXPECT_EQ(p["mode"], "exact") << p.dump();
    EXPECT_GT(p["rss"].get<long>(), 0);
    EXPECT_GT(p["started_ms"].get<long>(), 1600000000000L);
    EXPECT_TRUE(std::string(p["cmdline"]).find("prefork_truth 2") != std::string::npos) << p.dump();
    if (p["pid"] != master_pid_) {
      EXPECT_EQ(p["ppid"], master_pid_);
    }
  }
  EXPECT_EQ(pids, (std::set<long>{master_pid_, workers_[0], workers_[1]}));
  EXPECT_EQ(get(port_, "/debug/memory/processes?format=json").json()["this_pid"], master_pid_);
  const Reply text = get(port_, "/debug/memory/processes");
  EXPECT_TRUE(text.body.starts_with("3 processes (this one: pid " + std::to_string(master_pid_) + ")"))
      << text.body;
}

// Each worker's /diff?pid= exact, and pid=all merging them by line.
TEST_F(Prefork, EachWorkerExactlyAndAllMerged) {
  const Reply baseline = post(port_, "/debug/memory/baseline?pid=all&format=json");
  ASSERT_EQ(baseline.status, 200) << baseline.body;
  ASSERT_EQ(baseline.json()["processes"].size(), 3u) << baseline.body;
  const auto baseline_answer = baseline.json();  // a range-for over a temporary's member dangles
  for (const auto& p : baseline_answer["processes"]) EXPECT_EQ(p["status"], 200) << p.dump();
  const auto kept = keep();
  ASSERT_EQ(kept.size(), 2u);
  std::string where;
  long sum = 0;
  for (const auto& [pid, truth] : kept) {
    where = truth.first;
    sum += truth.second;
    const Reply reply = get(port_, "/debug/memory/diff?format=json&limit=1000&pid=" + std::to_string(pid));
    ASSERT_EQ(reply.status, 200) << reply.body;
    const auto stat = stat_at(reply.json(), truth.first);
    ASSERT_FALSE(stat.is_null()) << reply.body;
    EXPECT_EQ(stat["size_diff"], truth.second) << pid;
    EXPECT_EQ(stat["count_diff"], 3) << pid;
  }
  EXPECT_EQ(sum, 9000);  // 3 x 1000 + 3 x 2000: the two workers differ
  // The master answers for itself (no pid): nothing at that line.
  EXPECT_TRUE(stat_at(get(port_, "/debug/memory/diff?format=json&limit=1000").json(), where).is_null());

  const Reply all = get(port_, "/debug/memory/diff?format=json&limit=1000&pid=all");
  ASSERT_EQ(all.status, 200) << all.body;
  EXPECT_EQ(all.json()["pids"].size(), 3u);
  const auto merged = stat_at(all.json(), where);
  ASSERT_FALSE(merged.is_null()) << all.body;
  EXPECT_EQ(merged["size_diff"], sum);
  EXPECT_EQ(merged["count_diff"], 6);
  EXPECT_EQ(merged["size"], sum);
  // Each worker's history is seconds old (a point every 10 s): unknown in each, and merged.
  EXPECT_EQ(merged["verdict"], "unknown") << merged.dump();
  const Reply text = get(port_, "/debug/memory/diff?pid=all&limit=1000");
  const std::string base = where.substr(where.rfind('/') + 1);
  EXPECT_NE(text.body.find(base + ": size=9000 B (+9000 B), count=6 (+6), average=1500 B"), std::string::npos)
      << text.body;
  const Reply top = get(port_, "/debug/memory/top?format=json&limit=1000&pid=all");
  ASSERT_EQ(top.status, 200) << top.body;
  EXPECT_EQ(stat_at(top.json(), where)["size"], sum);
}

// The program is the whole group: a worker that joins after the baseline (a respawned one)
// has its whole heap counted as growth and is named new; each process's share is listed;
// one process's answer says others exist and how to ask for them all.
TEST_F(Prefork, AWorkerThatJoinsAfterTheBaselineIsCountedWholeAndNamedNew) {
  // No baseline anywhere yet: a conflict, as for one process.
  EXPECT_EQ(get(port_, "/debug/memory/diff?format=json&pid=all").status, 409);
  ASSERT_EQ(post(port_, "/debug/memory/baseline?pid=all&format=json").status, 200);
  master_->write_line("spawn");
  const auto spawned = words(master_->read_line(20000).value_or("EOF"));
  ASSERT_EQ(spawned.at(0), "WORKER");
  const long joined = std::stol(spawned.at(2));
  reaper_.pids.push_back(joined);
  ASSERT_EQ(wait_for_processes(port_, 4).size(), 4u);

  const Reply all = get(port_, "/debug/memory/diff?format=json&limit=1000&pid=all");
  ASSERT_EQ(all.status, 200) << all.body;
  const nlohmann::json merged = all.json();
  EXPECT_EQ(merged["against"], "the baseline");
  EXPECT_FALSE(merged.contains("group"));
  ASSERT_EQ(merged["processes"].size(), 4u) << all.body;
  std::int64_t shares = 0;
  for (const nlohmann::json& p : merged["processes"]) {
    shares += p["size_diff"].get<std::int64_t>();
    EXPECT_EQ(p["new"], p["pid"] == joined) << p.dump();
    if (p["pid"] == joined) {
      EXPECT_GT(p["size"].get<std::int64_t>(), 0) << p.dump();  // what it inherited and made
      EXPECT_EQ(p["size_diff"], p["size"]) << p.dump();
      EXPECT_EQ(p["count_diff"], p["count"]) << p.dump();
    }
  }
  EXPECT_EQ(shares, merged["total"]["size_diff"].get<std::int64_t>());
  const std::string text = get(port_, "/debug/memory/diff?pid=all").body;
  EXPECT_NE(text.find("  pid " + std::to_string(joined) + ": +"), std::string::npos) << text;
  EXPECT_NE(text.find(", new since the baseline: its whole heap counted\n"), std::string::npos) << text;

  // One process's answers: the others exist, and pid=all merges them.
  for (const std::string route : {"/debug/memory/diff?format=json", "/debug/memory/top?format=json",
                                  "/debug/memory/baseline?format=json"}) {
    const Reply one = get(port_, route);
    ASSERT_EQ(one.status, 200) << route << ": " << one.body;
    EXPECT_EQ(one.json()["group"]["processes"], 4) << route;
  }
  const std::string one_text = get(port_, "/debug/memory/diff").body;
  EXPECT_NE(one_text.find("\n(this is 1 of the 4 processes of this program: pid=all merges them all)\n"),
            std::string::npos)
      << one_text;
  // The joined worker asked alone still has no baseline of its own.
  EXPECT_EQ(get(port_, "/debug/memory/diff?pid=" + std::to_string(joined)).status, 409);
  const Reply bad = get(port_, "/debug/memory/diff?missing_baseline=maybe");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("missing_baseline='maybe' is not error or empty"), std::string::npos) << bad.body;
}

// A merged report is the same document (with "pids" and "failed"): read back, it writes
// the same bytes, and its text is the server's text.
TEST_F(Prefork, MergedReportsReadBackAsTheReportDocument) {
  ASSERT_EQ(post(port_, "/debug/memory/baseline?pid=all").status, 200);
  const auto kept = keep();
  ASSERT_EQ(kept.size(), 2u);
  const std::string where = kept.begin()->second.first;
  const std::string only =
      "include=*" + where.substr(where.rfind('/') + 1, where.rfind(':') - where.rfind('/') - 1);
  for (const std::string route : {"/diff?", "/top?", "/diff?key=traceback&", "/top?traceback=1&"}) {
    const Reply json = get(port_, "/debug/memory" + route + only + "&pid=all&format=json");
    ASSERT_EQ(json.status, 200) << json.body;
    const liveheap::Report report = liveheap::report_from_json(std::string_view(json.body));
    EXPECT_EQ(liveheap::to_json(report) + "\n", json.body) << route;
    ASSERT_TRUE(report.pids.has_value()) << route;
    EXPECT_EQ(report.pids->size(), 3u);
    EXPECT_TRUE(report.failed.empty());
    if (report.diff) {
      EXPECT_EQ(report.total.size_diff, 9000) << route;  // the workers' kept bytes
    }
    const Reply text = get(port_, "/debug/memory" + route + only + "&pid=all");
    EXPECT_EQ(liveheap::to_text(report), text.body) << route;
    const Reply one = get(
        port_, "/debug/memory" + route + only + "&format=json&pid=" + std::to_string(kept.begin()->first));
    EXPECT_EQ(liveheap::to_json(liveheap::report_from_json(std::string_view(one.body))) + "\n", one.body);
  }
}

// /processes, every process's POST /baseline and each one's /stats read back as their
// values write the same bytes; the list and the text say the same processes.
TEST_F(Prefork, TheGroupsAnswersReadBackAsTheirValues) {
  const Reply list = get(port_, "/debug/memory/processes?format=json");
  const liveheap::ProcessesReport processes = liveheap::processes_report_from_json(list.body);
  EXPECT_EQ(liveheap::to_json(processes) + "\n", list.body);
  ASSERT_EQ(processes.processes.size(), 3u);
  EXPECT_EQ(processes.this_pid, master_pid_);
  for (const liveheap::ProcessEntry& p : processes.processes) {
    EXPECT_EQ(p.mode, "exact");
    EXPECT_TRUE(p.traced.has_value() && p.rss.has_value()) << p.pid;
    const Reply stats = get(port_, "/debug/memory/stats?format=json&pid=" + std::to_string(p.pid));
    EXPECT_EQ(liveheap::to_json(liveheap::stats_report_from_json(stats.body)) + "\n", stats.body) << p.pid;
  }
  const Reply baselines = post(port_, "/debug/memory/baseline?pid=all&format=json");
  const liveheap::BaselinesReport all = liveheap::baselines_report_from_json(baselines.body);
  EXPECT_EQ(liveheap::to_json(all) + "\n", baselines.body);
  ASSERT_EQ(all.processes.size(), 3u);
  for (const liveheap::ProcessBaseline& p : all.processes) {
    EXPECT_EQ(p.status, 200) << p.error;
    ASSERT_TRUE(p.baseline.has_value()) << p.pid;
    EXPECT_EQ(p.baseline->group_processes, 3u);  // each answered as one of the group
  }
}

// pid=all is the sum of the processes' own reports: each line's size and count, and the
// totals, are those of every process's answer to the same question added up.
TEST_F(Prefork, TheMergeIsTheSumOfTheProcessesOwnReports) {
  ASSERT_EQ(post(port_, "/debug/memory/baseline?pid=all").status, 200);
  const auto kept = keep();
  ASSERT_EQ(kept.size(), 2u);
  const std::string where = kept.begin()->second.first;
  const std::string only =
      "include=*" + where.substr(where.rfind('/') + 1, where.rfind(':') - where.rfind('/') - 1);
  for (const std::string route : {"/diff?", "/top?", "/top?key=function&"}) {
    const auto report = [&](const std::string& pid) {
      const Reply reply = get(port_, "/debug/memory" + route + only + "&format=json&limit=1000&pid=" + pid);
      EXPECT_EQ(reply.status, 200) << reply.body;
      return liveheap::report_from_json(std::string_view(reply.body));
    };
    const liveheap::Report merged = report("all");
    liveheap::ReportTotal sum;
    std::map<std::string, std::pair<std::int64_t, std::int64_t>> lines;  // key -> size, size_diff
    for (const long pid : {master_pid_, workers_[0], workers_[1]}) {
      const liveheap::Report own = report(std::to_string(pid));
      sum.size += own.total.size;
      sum.count += own.total.count;
      sum.size_diff += own.total.size_diff;
      sum.count_diff += own.total.count_diff;
      for (const liveheap::ReportLine& line : own.lines) {
        lines[line.key].first += line.size;
        lines[line.key].second += line.size_diff;
      }
    }
    EXPECT_EQ(merged.total, sum) << route;
    ASSERT_EQ(merged.lines.size(), lines.size()) << route;
    for (const liveheap::ReportLine& line : merged.lines) {
      EXPECT_EQ(line.size, lines[line.key].first) << route << line.key;
      EXPECT_EQ(line.size_diff, lines[line.key].second) << route << line.key;
    }
  }
}

// pid=all sums a key's statistics over the processes; each process judged its own history,
// so their verdicts merge only when they agree.
TEST(Processes, MergedVerdictsStandWhenTheProcessesAgreeAndAreUnknownWhenNot) {
  using nlohmann::json;
  const auto stat = [](const char* verdict, json growth, json since) {
    return json{
        {"size", 1}, {"verdict", verdict}, {"growth_per_min", growth}, {"since_last_growth_s", since}};
  };
  json both = stat("growing", 6000, 2.0);
  liveheap::http::merge_verdict(both, stat("growing", 1000, 0.5));
  EXPECT_EQ(both["verdict"], "growing");
  EXPECT_EQ(both["growth_per_min"], 7000.0);    // the sum grows by both
  EXPECT_EQ(both["since_last_growth_s"], 0.5);  // and last grew when either did

  json mixed = stat("growing", 6000, 0.0);
  liveheap::http::merge_verdict(mixed, stat("plateaued", 0, 300.0));
  EXPECT_EQ(mixed["verdict"], "unknown");
  EXPECT_TRUE(mixed["growth_per_min"].is_null());
  EXPECT_TRUE(mixed["since_last_growth_s"].is_null());

  json young = stat("unknown", nullptr, nullptr);
  liveheap::http::merge_verdict(young, stat("unknown", nullptr, nullptr));
  EXPECT_EQ(young["verdict"], "unknown");
  EXPECT_TRUE(young["growth_per_min"].is_null());

  // The reasons merge as the sum's: retention weighted by what each process allocated.
  json kept = stat("growing", 6000, 2.0);
  kept["retention"] = 1.0;
  kept["allocated_in_window"] = 3000.0;
  kept["idle_s"] = 40.0;
  json other = stat("growing", 1000, 0.5);
  other["retention"] = 0.0;
  other["allocated_in_window"] = 1000.0;
  other["idle_s"] = 10.0;
  liveheap::http::merge_verdict(kept, other);
  EXPECT_EQ(kept["retention"], 0.75);
  EXPECT_EQ(kept["idle_s"], 10.0);

  json plain = {{"size", 1}};  // a report without verdicts stays without
  liveheap::http::merge_verdict(plain, stat("growing", 1, 0.0));
  EXPECT_FALSE(plain.contains("verdict"));
}

TEST_F(Prefork, BadPidsAreRefusedWithAReason) {
  const Reply none = get(port_, "/debug/memory/stats?pid=1");
  EXPECT_EQ(none.status, 404);
  EXPECT_NE(none.body.find("no liveheap process with pid 1"), std::string::npos) << none.body;
  EXPECT_EQ(get(port_, "/debug/memory/stats?pid=all").status, 400);
  EXPECT_EQ(get(port_, "/debug/memory/stats?pid=x").status, 400);
  EXPECT_EQ(get(port_, "/debug/memory/diff?pid=all&seconds=1").status, 400);
  // A worker's own route, answered by the worker: its /stats says so through its heap.
  const Reply stats = get(port_, "/debug/memory/stats?format=json&pid=" + std::to_string(workers_[0]));
  EXPECT_EQ(stats.status, 200) << stats.body;
}

// The master exits, its workers live on: the inherited listening socket was closed in
// them (else clients would hang on it), and one of them takes the port.
TEST_F(Prefork, AChildOutlivesItsParentAndTakesThePort) {
  master_->write_line("exit");
  EXPECT_EQ(master_->wait(10000), 0);
  // Refused until a worker takes the port (wait_until counts that as "not yet"); never
  // left hanging.
  const nlohmann::json list = wait_for_processes(port_, 2);
  ASSERT_EQ(list.size(), 2u) << list.dump();
  std::set<long> pids;
  for (const auto& p : list) pids.insert(p["pid"].get<long>());
  EXPECT_EQ(pids, (std::set<long>{workers_[0], workers_[1]}));
  EXPECT_EQ(sockets_in(dir_.group(port_)), 2u);  // the master's socket is gone
}

// A worker stopped under a debugger costs pid=all a short, bounded time (not a timeout per
// report that blocks the holder), and the answer names it as unreachable.
TEST_F(Prefork, AStoppedProcessIsNamedUnreachableWithinABoundedTime) {
  ASSERT_EQ(get(port_, "/debug/memory/top?format=json&pid=all").status, 200);  // every one warm
  ASSERT_EQ(::kill(workers_[0], SIGSTOP), 0);
  const Resume resume{static_cast<pid_t>(workers_[0])};
  ASSERT_TRUE(wait_until(kPatience, [&] { return all_threads_stopped(static_cast<pid_t>(workers_[0])); }))
      << "the worker never stopped";
  const auto started = Clock::now();
  const auto pending = ask_and_wait(port_, "/debug/memory/top?format=json&pid=all");
  // Meanwhile the holder's own reports answer at once: nothing waits on its report worker.
  EXPECT_EQ(get(port_, "/debug/memory/top?format=json").status, 200);
  EXPECT_LT(Clock::now() - started, 2s);
  const std::string raw = pending->read_response(kPatienceMs);
  const auto took = Clock::now() - started;
  ASSERT_EQ(status_of(raw), 200) << raw;
  EXPECT_LT(took, 5s);
  const nlohmann::json all = nlohmann::json::parse(raw.substr(raw.find("\r\n\r\n") + 4));
  EXPECT_EQ(all["pids"], (nlohmann::json{master_pid_, workers_[1]})) << all.dump();
  ASSERT_EQ(all["failed"].size(), 1u) << all.dump();
  EXPECT_EQ(all["failed"][0]["pid"], workers_[0]);
  EXPECT_NE(std::string(all["failed"][0]["error"]).find("unreachable"), std::string::npos) << all.dump();
  const Reply text = get(port_, "/debug/memory/top?pid=all");
  EXPECT_NE(text.body.find("pid " + std::to_string(workers_[0]) + " did not answer: unreachable"),
            std::string::npos)
      << text.body;
  // /processes too lists it, as unreachable, within its shorter bound.
  const auto listed = Clock::now();
  const Reply processes = get(port_, "/debug/memory/processes?format=json");
  EXPECT_LT(Clock::now() - listed, 3s);
  const auto processes_answer = processes.json();  // a range-for over a temporary's member dangles
  for (const auto& p : processes_answer["processes"])
    EXPECT_EQ(p["mode"] == "unreachable", p["pid"] == workers_[0]) << p.dump();
}

// A forwarded ?seconds= window waits off the holder's report worker: the holder's own /top
// answers while it waits.
TEST_F(Prefork, TheHoldersReportsDoNotWaitBehindAForwardedWindow) {
  const auto window =
      ask_and_wait(port_, "/debug/memory/diff?seconds=60&format=json&pid=" + std::to_string(workers_[1]));
  ASSERT_TRUE(wait_until(kPatience, [&] { return windows_of(socket_of(workers_[1])) == 1; }))
      << "the worker never opened the forwarded window";
  for (int i = 0; i < 2; ++i) {
    const auto started = Clock::now();
    const Reply top = get(port_, "/debug/memory/top?format=json");
    EXPECT_EQ(top.status, 200) << top.body;
    EXPECT_LT(Clock::now() - started, 5s);
  }
}

// Forwarded windows hold the holder's window places (Config::max_windows, as its own do),
// and a client that hangs up on one gives its place back at once, on the holder and on the
// process it was forwarded to.
TEST_F(Prefork, AClientThatHangsUpOnAForwardedWindowGivesItsPlaceBack) {
  const std::string worker = std::to_string(workers_[0]);
  std::vector<std::unique_ptr<Connection>> windows;
  for (int i = 0; i < 4; ++i)
    windows.push_back(ask_and_wait(port_, "/debug/memory/top?seconds=60&format=json&pid=" + worker));
  ASSERT_TRUE(wait_until(kPatience, [&] { return holder_windows() == 4; }))
      << "the forwarded windows do not count against the holder's places";
  ASSERT_TRUE(wait_until(kPatience, [&] { return windows_of(socket_of(workers_[0])) == 4; }));
  EXPECT_EQ(get(port_, "/debug/memory/top?seconds=1&format=json").status, 429);
  windows.front().reset();  // hangs up
  EXPECT_TRUE(wait_until(kPatience, [&] { return holder_windows() == 3; }));
  EXPECT_TRUE(wait_until(kPatience, [&] { return windows_of(socket_of(workers_[0])) == 3; }));
  const auto started = Clock::now();
  const Reply next = get(port_, "/debug/memory/top?seconds=1&format=json&pid=" + worker);
  EXPECT_EQ(next.status, 200) << next.body;
  EXPECT_LT(Clock::now() - started, 5s);
}

// A merged answer is held to the cap of one process's (Config::max_report_bytes, 8 MiB):
// processes with many stacks each cannot make the holder build and send more.
TEST(Processes, AMergedAnswerIsTruncatedAtTheReportCap) {
  RuntimeDir dir;
  const std::uint16_t port = free_port();
  std::vector<std::unique_ptr<ChildProcess>> programs;
  for (const char* seed : {"1", "2"}) {
    programs.push_back(
        std::make_unique<ChildProcess>(std::vector<std::string>{LIVEHEAP_MANY_STACKS, "--phases", "--allocs",
                                                                "20000", "--keep", "9", "--seed", seed},
                                       preload_env(dir, port)));
    ASSERT_EQ(programs.back()->read_line(20000).value_or("EOF"), "READY");
  }
  ASSERT_EQ(wait_for_processes(port, 2).size(), 2u);
  for (auto& program : programs) {
    program->write_line("go");
    ASSERT_TRUE(program->read_line(60000).value_or("EOF").starts_with("ALLOCATED"));
  }
  // Each process's answer is megabytes (near or at the cap: a row names its file in every
  // frame, so the sizes follow the checkout's path); the two, merged, would be over it.
  const std::string target = "/debug/memory/top?key=traceback&limit=10000&format=json&pid=";
  std::size_t both = 0;
  for (auto& program : programs) {
    const Reply one = get(port, target + std::to_string(program->pid()));
    ASSERT_EQ(one.status, 200) << one.body.substr(0, 200);
    both += one.body.size();
  }
  ASSERT_GT(both, (std::size_t{8} << 20) + 4096) << "the merged answer would fit: nothing to cut";
  const Reply all = get(port, target + "all");
  ASSERT_EQ(all.status, 200) << all.body.substr(0, 200);
  EXPECT_LE(all.body.size(), (std::size_t{8} << 20) + 4096);
  const nlohmann::json merged = all.json();
  EXPECT_EQ(merged["truncated"], true);
  EXPECT_EQ(merged["pids"].size(), 2u);
  EXPECT_GT(merged["stats"].size(), 1000u);
  EXPECT_GT(merged["keys"].get<std::size_t>(), merged["stats"].size());
}

TEST(Processes, AWrapperThatForksReachesTheProgramByPid) {
  RuntimeDir dir;
  const std::uint16_t port = free_port();
  ChildProcess wrapper({"/bin/sh", "-c", std::string(LIVEHEAP_EXACT_TRUTH) + " --phases; true"},
                       preload_env(dir, port));
  ASSERT_EQ(wrapper.read_line(20000).value_or("EOF"), "BASELINE-READY");
  const auto list = wait_for_processes(port, 2);
  ASSERT_EQ(list.size(), 2u) << list.dump();
  long program = 0;
  for (const auto& p : list)
    if (std::string(p["cmdline"]).find("exact_truth") != std::string::npos && p["pid"] != wrapper.pid())
      program = p["pid"];
  ASSERT_NE(program, 0) << list.dump();
  const std::string pid = "pid=" + std::to_string(program);
  ASSERT_EQ(post(port, "/debug/memory/baseline?" + pid).status, 200);
  wrapper.write_line("go");
  ASSERT_EQ(wrapper.read_line(20000).value_or("EOF"), "ALLOCATED");
  std::vector<std::vector<std::string>> sites;
  while (const auto line = wrapper.read_line(1000)) {
    if (!line->starts_with("SITE ")) break;
    sites.push_back(words(*line));
  }
  ASSERT_GE(sites.size(), 5u);
  const auto diff = get(port, "/debug/memory/diff?format=json&limit=1000&" + pid).json();
  for (const auto& site : sites) {
    if (site[2] == "0") continue;
    const auto stat = stat_at(diff, site[1]);
    ASSERT_FALSE(stat.is_null()) << site[1] << diff.dump(1);
    EXPECT_EQ(stat["size_diff"], std::stol(site[2])) << site[1];
    EXPECT_EQ(stat["count_diff"], std::stol(site[3])) << site[1];
  }
  // Without pid, the wrapper answers, as before: none of the program's growth.
  EXPECT_EQ(get(port, "/debug/memory/diff?format=json").status, 409);  // its baseline was never taken
  wrapper.write_line("bye");
  EXPECT_EQ(wrapper.wait(10000), 0);
}

TEST(Processes, TheRegistryIsPrivate) {
  RuntimeDir dir;
  const std::uint16_t port = free_port();
  {
    ChildProcess program({LIVEHEAP_EXACT_TRUTH, "--phases"}, preload_env(dir, port));
    ASSERT_EQ(program.read_line(20000).value_or("EOF"), "BASELINE-READY");
    ASSERT_EQ(wait_for_processes(port, 1).size(), 1u);
    for (const std::string& d : {dir.path + "/liveheap", dir.group(port)}) {
      struct stat st {};
      ASSERT_EQ(::stat(d.c_str(), &st), 0) << d;
      EXPECT_EQ(st.st_mode & 07777, 0700u) << d;
    }
    EXPECT_EQ(sockets_in(dir.group(port)), 1u);
  }
}

// Another user's directory where the registry goes (in /tmp anyone may create any name
// first): the group meets in the next private one instead, and the taken one is left as
// it was, with nothing registered in it.
TEST(Processes, ATakenRegistryFallsBackToTheNextPrivateOne) {
  RuntimeDir dir;
  const std::string taken = dir.path + "/liveheap";
  fs::create_directory(taken);
  const bool root = ::geteuid() == 0;
  if (root) {
    ASSERT_EQ(::chown(taken.c_str(), 65534, 65534), 0);  // nobody's
  }
  ::chmod(taken.c_str(), root ? 0700 : 0777);
  const std::uint16_t port = free_port();
  ChildProcess first({LIVEHEAP_EXACT_TRUTH, "--phases"}, preload_env(dir, port));
  ChildProcess second({LIVEHEAP_EXACT_TRUTH, "--phases"}, preload_env(dir, port));
  ASSERT_EQ(first.read_line(20000).value_or("EOF"), "BASELINE-READY");
  ASSERT_EQ(second.read_line(20000).value_or("EOF"), "BASELINE-READY");
  EXPECT_EQ(wait_for_processes(port, 2).size(), 2u);
  const std::string fallback = dir.path + "/liveheap.1/127.0.0.1-" + std::to_string(port);
  EXPECT_EQ(sockets_in(fallback), 2u);
  struct stat st {};
  ASSERT_EQ(::stat((dir.path + "/liveheap.1").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  ASSERT_EQ(::stat(taken.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, root ? 0700u : 0777u);
  EXPECT_EQ(st.st_uid, root ? 65534u : ::geteuid());
  EXPECT_FALSE(fs::exists(dir.group(port)));
}

// Only when every candidate is taken is the registry off: one line says so, nothing is
// "fixed", and the port still answers for its holder alone.
TEST(Processes, WhenEveryRegistryIsTakenTheProcessSaysSoOnce) {
  RuntimeDir open_dir;
  for (const std::string suffix : {"", ".1", ".2", ".3", ".4", ".5", ".6", ".7", ".8"}) {
    fs::create_directory(open_dir.path + "/liveheap" + suffix);
    ::chmod((open_dir.path + "/liveheap" + suffix).c_str(), 0777);
  }
  const std::uint16_t port2 = free_port();
  ChildProcess program(
      {"/bin/sh", "-c", std::string("exec ") + LIVEHEAP_EXACT_TRUTH + " --phases 2>&1"},
      {"XDG_RUNTIME_DIR=" + open_dir.path, "LIVEHEAP_ADDR=127.0.0.1:" + std::to_string(port2),
       "LIVEHEAP_MODE=exact", "LD_PRELOAD=" + std::string(LIVEHEAP_PRELOAD_LIBRARY)});
  // Said on the endpoint's thread: before or after the program's first line.
  std::string said;
  while (const auto line = program.read_line(5000)) {
    said += *line + "\n";
    if (said.find("BASELINE-READY") != std::string::npos && said.find("registry") != std::string::npos) break;
  }
  EXPECT_NE(
      said.find("liveheap: this process is not reachable through the registry: the registry directory " +
                open_dir.path + "/liveheap has mode 0777"),
      std::string::npos)
      << said;
  EXPECT_NE(said.find(open_dir.path + "/liveheap.1 to .8 are taken too)\n"), std::string::npos) << said;
  struct stat st {};
  ASSERT_EQ(::stat((open_dir.path + "/liveheap").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0777u);
  EXPECT_FALSE(fs::exists(open_dir.group(port2)));
  EXPECT_FALSE(fs::exists(open_dir.path + "/liveheap.8/127.0.0.1-" + std::to_string(port2)));
  // The port still answers, for this process alone.
  EXPECT_EQ(get(port2, "/debug/memory/processes?format=json").json()["processes"].size(), 1u);
}

TEST(Processes, AKilledProcessesSocketIsCleanedUp) {
  RuntimeDir dir;
  const std::uint16_t port = free_port();
  ChildProcess holder({LIVEHEAP_EXACT_TRUTH, "--phases"}, preload_env(dir, port));
  ASSERT_EQ(holder.read_line(20000).value_or("EOF"), "BASELINE-READY");
  pid_t victim_pid = 0;
  {
    ChildProcess victim({LIVEHEAP_EXACT_TRUTH, "--phases"}, preload_env(dir, port));
    ASSERT_EQ(victim.read_line(20000).value_or("EOF"), "BASELINE-READY");
    ASSERT_EQ(wait_for_processes(port, 2).size(), 2u);
    victim_pid = victim.pid();
  }  // SIGKILL: no exit handler runs
  const std::string stale = dir.group(port) + "/" + std::to_string(victim_pid) + ".sock";
  EXPECT_TRUE(fs::exists(stale));
  EXPECT_EQ(get(port, "/debug/memory/processes?format=json").json()["processes"].size(), 1u);
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_EQ(sockets_in(dir.group(port)), 1u);
}

// A process of the group that starts after one was killed removes what it left, before
// anyone lists the group: its socket, and the holder record naming it.
TEST(Processes, AKilledProcessesSocketIsRemovedByTheNextOfItsGroupToStart) {
  RuntimeDir dir;
  const std::uint16_t port = free_port();
  pid_t victim_pid = 0;
  {
    ChildProcess victim({LIVEHEAP_EXACT_TRUTH, "--phases"}, preload_env(dir, port));
    ASSERT_EQ(victim.read_line(20000).value_or("EOF"), "BASELINE-READY");
    victim_pid = victim.pid();
    // The record is a link to a pid, not to a file: its own status, not its target's.
    ASSERT_TRUE(wait_until(kPatience, [&] { return fs::is_symlink(dir.group(port) + "/holder"); }));
  }  // SIGKILL: no exit handler runs
  const std::string stale = dir.group(port) + "/" + std::to_string(victim_pid) + ".sock";
  ASSERT_TRUE(fs::exists(stale));
  ChildProcess next({LIVEHEAP_EXACT_TRUTH, "--phases"}, preload_env(dir, port));
  ASSERT_EQ(next.read_line(20000).value_or("EOF"), "BASELINE-READY");
  const std::string own = dir.group(port) + "/" + std::to_string(next.pid()) + ".sock";
  EXPECT_TRUE(wait_until(kPatience, [&] { return fs::exists(own) && !fs::exists(stale); }))
      << "the killed process's socket is still there";
  EXPECT_EQ(fs::read_symlink(dir.group(port) + "/holder").string(), std::to_string(next.pid()));
  const nlohmann::json listed = wait_for_processes(port, 1);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0]["pid"], next.pid());
}

// The holder killed, another process of the group takes the port at once (it waits for the
// holder's exit, not for a timer) and removes what the holder left.
TEST(Processes, AKilledHoldersPortIsTakenByAnotherOfItsGroupWhichRemovesItsSocket) {
  RuntimeDir dir;
  const std::uint16_t port = free_port();
  auto holder = std::make_unique<ChildProcess>(std::vector<std::string>{LIVEHEAP_EXACT_TRUTH, "--phases"},
                                               preload_env(dir, port));
  ASSERT_EQ(holder->read_line(20000).value_or("EOF"), "BASELINE-READY");
  ASSERT_TRUE(wait_until(kPatience, [&] { return fs::is_symlink(dir.group(port) + "/holder"); }));
  ChildProcess other({LIVEHEAP_EXACT_TRUTH, "--phases"}, preload_env(dir, port));
  ASSERT_EQ(other.read_line(20000).value_or("EOF"), "BASELINE-READY");
  ASSERT_EQ(wait_for_processes(port, 2).size(), 2u);
  const std::string stale = dir.group(port) + "/" + std::to_string(holder->pid()) + ".sock";
  holder.reset();  // SIGKILL: no exit handler runs
  EXPECT_TRUE(wait_until(
      kPatience,
      [&] {
        std::error_code ec;
        return fs::read_symlink(dir.group(port) + "/holder", ec).string() == std::to_string(other.pid()) &&
               !fs::exists(stale);
      },
      std::chrono::milliseconds(10)))
      << "the other process did not take the port, or left the holder's socket";
  const nlohmann::json listed = wait_for_processes(port, 1);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0]["pid"], other.pid());
}

// A group whose processes were all killed leaves its directory; the next process of the
// user, of whatever group, removes it.
TEST(Processes, AGroupWhoseProcessesWereAllKilledIsRemovedByTheNextProcessToStart) {
  RuntimeDir dir;
  const std::uint16_t dead_port = free_port();
  {
    ChildProcess victim({LIVEHEAP_EXACT_TRUTH, "--phases"}, preload_env(dir, dead_port));
    ASSERT_EQ(victim.read_line(20000).value_or("EOF"), "BASELINE-READY");
    ASSERT_TRUE(wait_until(kPatience, [&] { return sockets_in(dir.group(dead_port)) == 1; }));
  }  // SIGKILL
  ASSERT_TRUE(fs::exists(dir.group(dead_port)));
  const std::uint16_t port = free_port();
  ChildProcess next({LIVEHEAP_EXACT_TRUTH, "--phases"}, preload_env(dir, port));
  ASSERT_EQ(next.read_line(20000).value_or("EOF"), "BASELINE-READY");
  EXPECT_TRUE(wait_until(kPatience, [&] { return !fs::exists(dir.group(dead_port)); }))
      << "the dead group's directory is still there";
  EXPECT_EQ(sockets_in(dir.group(port)), 1u);
}

// A pid that is gone and a socket that refuses, both, before a socket goes: one whose pid
// lives may be starting (or the pid was reused: the holder's listing sees to that once it
// has refused long enough), one that accepts is served by someone.
TEST(Processes, TheStartSweepLeavesSocketsThatAreServedOrWhosePidLives) {
  RuntimeDir dir;
  const std::uint16_t port = free_port();
  const std::string group = dir.group(port);
  fs::create_directory(dir.path + "/liveheap");
  fs::create_directory(group);
  fs::permissions(dir.path + "/liveheap", fs::perms::owner_all, fs::perm_options::replace);
  fs::permissions(group, fs::perms::owner_all, fs::perm_options::replace);
  // Pids that were a process a moment ago and are not any more.
  const auto gone_pid = [] {
    char truth[] = "/bin/true";
    char* argv[] = {truth, nullptr};
    pid_t pid = 0;
    EXPECT_EQ(::posix_spawn(&pid, truth, nullptr, nullptr, argv, environ), 0);
    ::waitpid(pid, nullptr, 0);
    return pid;
  };
  const auto bound = [](const std::string& path, bool listening) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << path;
    if (listening) {
      EXPECT_EQ(::listen(fd, 4), 0);
    }
    return fd;
  };
  const std::string living = group + "/" + std::to_string(::getpid()) + ".sock";  // refuses
  const std::string served = group + "/" + std::to_string(gone_pid()) + ".sock";
  const std::string abandoned = group + "/" + std::to_string(gone_pid()) + ".sock";
  const int living_fd = bound(living, false);
  const int served_fd = bound(served, true);
  ::close(bound(abandoned, false));
  ChildProcess next({LIVEHEAP_EXACT_TRUTH, "--phases"}, preload_env(dir, port));
  ASSERT_EQ(next.read_line(20000).value_or("EOF"), "BASELINE-READY");
  ASSERT_TRUE(wait_until(kPatience, [&] { return !fs::exists(abandoned); })) << "no sweep ran";
  EXPECT_TRUE(fs::exists(living));
  EXPECT_TRUE(fs::exists(served));
  ::close(living_fd);
  ::close(served_fd);
}

// Short-lived processes (a shell script's commands) leave nothing behind.
TEST(Processes, TheLastProcessOfAGroupRemovesItsDirectory) {
  RuntimeDir dir;
  const std::uint16_t port = free_port();
  ChildProcess first({LIVEHEAP_EXACT_TRUTH, "--phases"}, preload_env(dir, port));
  ChildProcess second({LIVEHEAP_EXACT_TRUTH, "--phases"}, preload_env(dir, port));
  ASSERT_EQ(first.read_line(20000).value_or("EOF"), "BASELINE-READY");
  ASSERT_EQ(second.read_line(20000).value_or("EOF"), "BASELINE-READY");
  ASSERT_EQ(wait_for_processes(port, 2).size(), 2u);
  for (ChildProcess* p : {&first, &second}) {
    p->write_line("go");
    ASSERT_EQ(p->read_line(20000).value_or("EOF"), "ALLOCATED");
  }
  first.write_line("exit");
  ASSERT_EQ(first.wait(20000), 0);
  EXPECT_EQ(sockets_in(dir.group(port)), 1u) << "the other process is still in the group";
  second.write_line("exit");
  ASSERT_EQ(second.wait(20000), 0);
  EXPECT_FALSE(fs::exists(dir.group(port))) << "left behind by the group's last process";
}

TEST(Processes, TwoHundredShortLivedProcessesLeaveNoSockets) {
  RuntimeDir dir;
  const std::uint16_t port = free_port();
  ChildProcess holder({LIVEHEAP_EXACT_TRUTH, "--phases"}, preload_env(dir, port));
  ASSERT_EQ(holder.read_line(20000).value_or("EOF"), "BASELINE-READY");
  ASSERT_EQ(wait_for_processes(port, 1).size(), 1u);
  std::vector<std::string> env = preload_env(dir, port);
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  char truth[] = "/bin/true";
  char* argv[] = {truth, nullptr};
  posix_spawn_file_actions_t quiet;
  posix_spawn_file_actions_init(&quiet);
  posix_spawn_file_actions_addopen(&quiet, 2, "/dev/null", O_WRONLY, 0);
  for (int i = 0; i < 200; ++i) {
    pid_t pid = 0;
    ASSERT_EQ(::posix_spawn(&pid, truth, &quiet, nullptr, argv, envp.data()), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  posix_spawn_file_actions_destroy(&quiet);
  EXPECT_EQ(get(port, "/debug/memory/processes?format=json").json()["processes"].size(), 1u);
  EXPECT_EQ(sockets_in(dir.group(port)), 1u);
}

}  // namespace
}  // namespace http_test
