// liveheap read by the real consumers: pprof's own Go parser and `go tool pprof` on its
// profiles, a real Prometheus server scraping /metrics. Exact numbers at known lines.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "../http/child_process.hpp"
#include "../support/temp_dir.hpp"
#include "../http/client.hpp"

namespace {

namespace fs = std::filesystem;

struct Site {
  int line = 0;
  long bytes = 0;
  long count = 0;
};

// ecosystem_target as a process; its sites by name once run() made them.
class Target {
 public:
  // env: extra variables, e.g. LIVEHEAP_MODE=sampled.
  explicit Target(const std::vector<std::string>& env = {}) : process_({LIVEHEAP_ECOSYSTEM_TARGET}, env) {
    const auto first = process_.read_line(10000);
    if (!first || !first->starts_with("port "))
      throw std::runtime_error("ecosystem_target did not print its port");
    port_ = static_cast<std::uint16_t>(std::stoi(first->substr(5)));
  }
  void run(const std::string& step) {
    process_.write_line(step);
    while (auto line = process_.read_line(10000)) {
      if (*line == "ok") return;
      std::istringstream in(*line);
      std::string name;
      Site s;
      in >> name >> s.line >> s.bytes >> s.count;
      sites[name] = s;
    }
    throw std::runtime_error("ecosystem_target did not finish " + step);
  }
  std::uint16_t port() const { return port_; }
  std::map<std::string, Site> sites;

 private:
  http_test::ChildProcess process_;
  std::uint16_t port_ = 0;
};

struct CommandResult {
  int status = -1;
  std::string output;  // stdout and stderr
};

CommandResult run_command(const std::string& command) {
  CommandResult r;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  char buffer[4096];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) r.output.append(buffer, n);
  const int status = ::pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

bool executable(const char* path) { return ::access(path, X_OK) == 0; }

const char* kGo = "/usr/bin/go";
const char* kPprofSource = "/usr/share/gocode/src/github.com/google/pprof/profile/profile.go";
const char* kPrometheus = "/usr/bin/prometheus";

// A scratch directory of the test's own under the build tree, removed at the end: ctest -j
// runs the tests of this binary side by side.
std::unique_ptr<test_support::TempDir> scratch() {
  fs::create_directories(LIVEHEAP_ECOSYSTEM_WORK);
  return std::make_unique<test_support::TempDir>(LIVEHEAP_ECOSYSTEM_WORK);
}

std::string go_env(const fs::path& work) {
  // Debian's Go libraries live in a GOPATH tree; no module download, no network.
  return "GO111MODULE=off GOPATH=/usr/share/gocode GOFLAGS= GOPROXY=off GOCACHE=" +
         (work / "gocache").string() + " HOME=" + work.string() + " ";
}

void save(const fs::path& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

class Pprof : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!executable(kGo)) GTEST_SKIP() << kGo << " is missing (Debian package golang-go)";
    if (!fs::exists(kPprofSource))
      GTEST_SKIP() << kPprofSource << " is missing (golang-github-google-pprof-dev)";
    scratch_ = scratch();
    work_ = scratch_->path();
    const CommandResult build =
        run_command("cd " + work_.string() + " && cp " LIVEHEAP_PPROF_DUMP_SOURCE " pprof_dump.go && " +
                    go_env(work_) + kGo + " build -o pprof_dump pprof_dump.go");
    ASSERT_EQ(build.status, 0) << build.output;
  }

  std::string profile(const Target& target, const std::string& route, const std::string& name) {
    const http_test::Reply r = http_test::get(target.port(), route);
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.header("content-type"), "application/octet-stream");
    const fs::path path = work_ / name;
    save(path, r.body);
    return path.string();
  }

  // "file:line" -> {alloc_objects, alloc_space, inuse_objects, inuse_space}, by pprof's parser.
  std::map<std::string, std::vector<long>> parse(const std::string& path, std::string* header) {
    const CommandResult r =
        run_command((work_ / "pprof_dump").string() + " " + path + " ecosystem_target.cpp");
    EXPECT_EQ(r.status, 0) << r.output;
    std::map<std::string, std::vector<long>> out;
    std::istringstream in(r.output);
    std::getline(in, *header);
    std::string key;
    std::vector<long> v(4);
    while (in >> key >> v[0] >> v[1] >> v[2] >> v[3]) out[key] = v;
    return out;
  }

  static std::string at(int line) { return "ecosystem_target.cpp:" + std::to_string(line); }

  std::unique_ptr<test_support::TempDir> scratch_;
  fs::path work_;
};

TEST_F(Pprof, GoParserReadsExactInuseAndAllocValuesAtKnownLines) {
  Target target;
  target.run("step1");
  std::string header;
  const auto values = parse(profile(target, "/debug/pprof/heap", "heap.pb.gz"), &header);
  EXPECT_EQ(header, "period space/bytes 1 default ");
  for (const char* leak : {"leak_a", "leak_b"}) {
    const Site& s = target.sites.at(leak);
    ASSERT_TRUE(values.contains(at(s.line))) << leak;
    EXPECT_EQ(values.at(at(s.line)), (std::vector<long>{s.count, s.bytes, s.count, s.bytes})) << leak;
  }
  // The transient loop: every allocation counted, nothing of it alive.
  const Site& t = target.sites.at("transient");
  ASSERT_TRUE(values.contains(at(t.line)));
  EXPECT_EQ(values.at(at(t.line)), (std::vector<long>{123, 123 * 64, 0, 0}));

  // /allocs: the same values, alloc_space first; under the liveheap prefix too.
  std::string allocs_header;
  const auto allocs = parse(profile(target, "/debug/memory/pprof/allocs", "allocs.pb.gz"), &allocs_header);
  EXPECT_EQ(allocs_header, "period space/bytes 1 default alloc_space");
  EXPECT_EQ(allocs.at(at(t.line)), values.at(at(t.line)));
}

// Sampled mode gives estimates, and their error is stated: a block of s bytes is sampled
// with probability p = 1 - exp(-s/R) and weighs s/p bytes (1/p blocks), so N such blocks
// estimate N blocks with standard error sqrt(N(1-p)/p), and N*s bytes with s times that:
// docs/ecosystem.md's "about 1/sqrt(n) for n samples" (n = N*p; here ~1,200 and ~780).
// Held to 6 standard errors: a correct build fails one of the four about once in 100 million
// runs; one that forgot to scale the samples up (values ~16x and ~64x too small), every time.
TEST_F(Pprof, GoParserReadsSampledEstimatesWithinTheirStatedError) {
  constexpr double kInterval = 65536;
  Target target({"LIVEHEAP_MODE=sampled", "LIVEHEAP_SAMPLE_INTERVAL=65536"});
  target.run("many");
  std::string header;
  const auto values = parse(profile(target, "/debug/pprof/heap", "sampled.pb.gz"), &header);
  EXPECT_EQ(header, "period space/bytes 65536 default ");
  // {blocks, bytes}: the estimate's standard error for N blocks of one size.
  const auto standard_error = [&](const Site& s) {
    const double size = static_cast<double>(s.bytes) / static_cast<double>(s.count);
    const double p = -std::expm1(-size / kInterval);
    const double blocks = std::sqrt(static_cast<double>(s.count) * (1 - p) / p);
    return std::pair{blocks, blocks * size};
  };

  const Site& kept = target.sites.at("kept");
  ASSERT_TRUE(values.contains(at(kept.line))) << "no sample at the kept line";
  const std::vector<long>& k = values.at(at(kept.line));  // alloc_objects, alloc_space, inuse_*
  const auto [kept_blocks_se, kept_bytes_se] = standard_error(kept);
  EXPECT_NEAR(k[3], kept.bytes, 6 * kept_bytes_se) << "inuse_space; standard error " << kept_bytes_se;
  EXPECT_NEAR(k[2], kept.count, 6 * kept_blocks_se) << "inuse_objects; standard error " << kept_blocks_se;
  // Nothing of it was freed: what was allocated there is what is in use, sample for sample.
  EXPECT_EQ(k[1], k[3]);
  EXPECT_EQ(k[0], k[2]);

  const Site& churn = target.sites.at("churn");
  ASSERT_TRUE(values.contains(at(churn.line))) << "no sample at the transient line";
  const std::vector<long>& c = values.at(at(churn.line));
  const auto [churn_blocks_se, churn_bytes_se] = standard_error(churn);
  EXPECT_NEAR(c[1], churn.bytes, 6 * churn_bytes_se) << "alloc_space; standard error " << churn_bytes_se;
  EXPECT_NEAR(c[0], churn.count, 6 * churn_blocks_se) << "alloc_objects; standard error " << churn_blocks_se;
  EXPECT_EQ(c[2], 0) << "every block there was freed";
  EXPECT_EQ(c[3], 0);
}

TEST_F(Pprof, GoToolPprofShowsTopAndDiffBase) {
  Target target;
  target.run("step1");
  const std::string before = profile(target, "/debug/pprof/heap", "before.pb.gz");
  target.run("step2");
  const std::string after = profile(target, "/debug/pprof/heap", "after.pb.gz");
  const CommandResult top = run_command(go_env(work_) + kGo + " tool pprof -top -lines " + after);
  ASSERT_EQ(top.status, 0) << top.output;
  EXPECT_NE(top.output.find("Type: inuse_space"), std::string::npos) << top.output;
  EXPECT_NE(top.output.find(at(target.sites.at("leak_c").line)), std::string::npos) << top.output;
  // -diff_base: only leak C (7 x 2048 = 14336 B = 14kB) grew between the two.
  const CommandResult diff =
      run_command(go_env(work_) + kGo + " tool pprof -top -lines -diff_base " + before + " " + after);
  ASSERT_EQ(diff.status, 0) << diff.output;
  EXPECT_NE(diff.output.find("14kB"), std::string::npos) << diff.output;
  EXPECT_NE(diff.output.find(at(target.sites.at("leak_c").line)), std::string::npos) << diff.output;
  EXPECT_EQ(diff.output.find(at(target.sites.at("leak_a").line)), std::string::npos) << diff.output;
}

// The route a request's blocks carry is a pprof sample label: -tagfocus keeps that route's
// bytes alone (4 x 2500 B = 10000 B = 9.77kB), -tagignore everything else.
TEST_F(Pprof, TagfocusOnTheRouteLabelSelectsOneRoutesBytes) {
  Target target;
  target.run("step1");
  target.run("request");
  const std::string heap = profile(target, "/debug/pprof/heap", "routes.pb.gz");
  const std::string upload = at(target.sites.at("upload").line);
  const CommandResult focus = run_command(go_env(work_) + kGo +
                                          " tool pprof -top -lines -sample_index=inuse_space "
                                          "'-tagfocus=route=POST /upload' " +
                                          heap);
  ASSERT_EQ(focus.status, 0) << focus.output;
  EXPECT_NE(focus.output.find("9.77kB"), std::string::npos) << focus.output;
  EXPECT_NE(focus.output.find(upload), std::string::npos) << focus.output;
  EXPECT_EQ(focus.output.find(at(target.sites.at("leak_a").line)), std::string::npos) << focus.output;
  const CommandResult ignore = run_command(go_env(work_) + kGo +
                                           " tool pprof -top -lines -sample_index=inuse_space "
                                           "'-tagignore=route=POST /upload' " +
                                           heap);
  ASSERT_EQ(ignore.status, 0) << ignore.output;
  EXPECT_EQ(ignore.output.find(upload), std::string::npos) << ignore.output;
  EXPECT_NE(ignore.output.find(at(target.sites.at("leak_a").line)), std::string::npos) << ignore.output;
}

// The flat column names the user's line, not the allocator's plumbing that the text
// reports fold (std::string's code, std::__new_allocator, operator new), and the bytes are
// all still there.
TEST_F(Pprof, FlatNamesTheUsersLineNotThePlumbing) {
  Target target;
  target.run("strings");
  const Site& s = target.sites.at("strings");
  const std::string heap = profile(target, "/debug/pprof/heap", "strings.pb.gz");
  const CommandResult top = run_command(go_env(work_) + kGo + " tool pprof -top -lines -nodecount=3 " + heap);
  ASSERT_EQ(top.status, 0) << top.output;
  // The first row under the column headings is the biggest flat entry.
  const std::size_t headings = top.output.find("flat%");
  ASSERT_NE(headings, std::string::npos) << top.output;
  const std::size_t row = top.output.find('\n', headings) + 1;
  const std::string first = top.output.substr(row, top.output.find('\n', row) - row);
  EXPECT_NE(first.find(at(s.line)), std::string::npos) << top.output;
  EXPECT_EQ(first.find("std::"), std::string::npos) << top.output;
  std::string header;
  const auto values = parse(heap, &header);
  EXPECT_EQ(values.at(at(s.line)), (std::vector<long>{s.count, s.bytes, s.count, s.bytes}));
}

TEST_F(Pprof, SecondsGivesADeltaProfile) {
  Target target;
  target.run("step1");
  std::thread later([&] {
    // Inside the window: once it holds its first profile.
    EXPECT_TRUE(http_test::windows_waiting(target.port())) << "the delta's window never opened";
    target.run("step2");
  });
  // Three seconds: step2 falls inside even when its thread runs late on a loaded machine.
  const std::string delta = profile(target, "/debug/pprof/allocs?seconds=3", "delta.pb.gz");
  later.join();
  std::string header;
  const auto values = parse(delta, &header);
  const Site& c = target.sites.at("leak_c");
  EXPECT_EQ(values.at(at(c.line)), (std::vector<long>{7, 7 * 2048, 7, 7 * 2048}));
  // What step1 did happened before the window: not in the delta.
  EXPECT_FALSE(values.contains(at(target.sites.at("leak_a").line)));
}

TEST(Prometheus, RealServerScrapesCallsiteGaugesExact) {
  if (!executable(kPrometheus)) GTEST_SKIP() << kPrometheus << " is missing (Debian package prometheus)";
  Target target;
  target.run("step1");
  const auto scratch_dir = scratch();
  const fs::path work = scratch_dir->path();
  std::ofstream(work / "prometheus.yml")
      << "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: liveheap\n"
      << "    static_configs:\n      - targets: ['127.0.0.1:" << target.port() << "']\n";
  const std::uint16_t port = http_test::free_port();
  http_test::ChildProcess prometheus(
      {kPrometheus, "--config.file=" + (work / "prometheus.yml").string(),
       "--storage.tsdb.path=" + (work / "data").string(),
       "--web.listen-address=127.0.0.1:" + std::to_string(port), "--log.level=error"},
      {});
  std::map<std::string, double> gauges;  // callsite -> value
  std::string last;                      // the last answer, for the message
  // Prometheus scrapes every second; not listening yet counts as "not yet".
  const testing::AssertionResult scraped = http_test::wait_until(
      std::chrono::seconds(60),
      [&] {
        const http_test::Reply r = http_test::get(port, "/api/v1/query?query=liveheap_callsite_inuse_bytes");
        last = std::to_string(r.status) + " " + r.body;
        if (r.status != 200) return false;
        const nlohmann::json answer = r.json();
        for (const auto& series : answer["data"]["result"])
          gauges[series["metric"]["callsite"].get<std::string>()] =
              std::stod(series["value"][1].get<std::string>());
        return !gauges.empty();
      },
      std::chrono::milliseconds(500));
  ASSERT_TRUE(scraped) << "Prometheus never scraped the target; last answer: " << last;
  for (const char* leak : {"leak_a", "leak_b"}) {
    const Site& s = target.sites.at(leak);
    bool found = false;
    for (const auto& [callsite, value] : gauges) {
      if (!callsite.ends_with("ecosystem_target.cpp:" + std::to_string(s.line))) continue;
      found = true;
      EXPECT_EQ(value, static_cast<double>(s.bytes)) << callsite;
    }
    EXPECT_TRUE(found) << leak << " has no gauge";
  }
  // A request's route: its live bytes and its requests, exact, stored as the callsites are.
  target.run("request");
  for (const auto& [query, expected] : {std::pair<std::string, double>{"liveheap_route_inuse_bytes", 10000},
                                        {"liveheap_route_requests_total", 1}}) {
    std::string value;
    EXPECT_TRUE(http_test::wait_until(
        std::chrono::seconds(30),
        [&] {
          const http_test::Reply r =
              http_test::get(port, "/api/v1/query?query=" + query + "%7Broute%3D%22POST%20%2Fupload%22%7D");
          if (r.status != 200 || r.json()["data"]["result"].empty()) return false;
          value = r.json()["data"]["result"][0]["value"][1].get<std::string>();
          return std::stod(value) == expected;
        },
        std::chrono::milliseconds(500)))
        << query << " stored " << value << ", expected " << expected;
  }
  // The allocator's own figures, from the same scrape: glibc serves at least the traced bytes.
  const http_test::Reply held = http_test::get(
      port,
      "/api/v1/query?query=liveheap_allocator_bytes%7Ballocator%3D%22glibc%22%2Cfigure%3D%22uordblks%22%7D");
  ASSERT_EQ(held.status, 200) << held.body;
  const nlohmann::json result = held.json()["data"]["result"];
  ASSERT_EQ(result.size(), 1u) << held.body;
  EXPECT_GE(std::stod(result[0]["value"][1].get<std::string>()),
            static_cast<double>(target.sites.at("leak_a").bytes + target.sites.at("leak_b").bytes))
      << held.body;
}

}  // namespace

namespace {

// Folded stacks (flamegraph.pl's input) of a known stack: root first, exact value.
TEST(Folded, TopAndDiffFoldKnownStacks) {
  Target target;
  target.run("step1");
  const std::string stack =
      "_start;__libc_start_main;__libc_start_call_main;main;(anonymous namespace)::step1()";
  const http_test::Reply top = http_test::get(target.port(), "/debug/memory/top?format=folded");
  ASSERT_EQ(top.status, 200) << top.body;
  // step1()'s 5000 B and what the plumbing under it holds for it (its vector's growth,
  // stdout's first write), one line: what /top counts for the function step1(), exactly.
  const http_test::Reply by_function = http_test::get(
      target.port(), "/debug/memory/top?format=json&key=function&limit=10000&include=function:*step1*");
  ASSERT_EQ(by_function.status, 200) << by_function.body;
  const nlohmann::json stats = by_function.json()["stats"];
  ASSERT_EQ(stats.size(), 1u) << by_function.body;
  EXPECT_GE(stats[0]["size"].get<long>(), 5000);
  EXPECT_NE(("\n" + top.body).find("\n" + stack + " " + std::to_string(stats[0]["size"].get<long>()) + "\n"),
            std::string::npos)
      << top.body;
  ASSERT_EQ(http_test::post(target.port(), "/debug/memory/baseline").status, 200);
  target.run("step2");
  const std::string grown =
      "_start;__libc_start_main;__libc_start_call_main;main;(anonymous namespace)::step2()";
  const http_test::Reply diff = http_test::get(target.port(), "/debug/memory/diff?format=folded");
  EXPECT_EQ(diff.body, grown + " 14336\n");
  const http_test::Reply diff2 = http_test::get(target.port(), "/debug/memory/diff?format=folded2");
  EXPECT_EQ(diff2.body, grown + " 0 14336\n");
  EXPECT_EQ(http_test::get(target.port(), "/debug/memory/top?format=folded2").status, 400);
}

// A stack's leaf is the user's line: the plumbing under it (std::string's code, operator new)
// is left out as the text reports fold it, and the bytes stay exact.
TEST(Folded, PlumbingIsLeftOutOfTheLeaf) {
  Target target;
  target.run("strings");
  const http_test::Reply top = http_test::get(target.port(), "/debug/memory/top?format=folded");
  ASSERT_EQ(top.status, 200) << top.body;
  // Two stacks fold into one line: the strings' 5 x 3001 B and the vector's reserve(5),
  // 5 x 32 B, both asked for by strings() itself.
  const std::string leaf = ";main;(anonymous namespace)::strings() 15165\n";
  EXPECT_NE(top.body.find(leaf), std::string::npos) << top.body;
  EXPECT_EQ(top.body.find("operator new"), std::string::npos) << top.body;
}

}  // namespace
