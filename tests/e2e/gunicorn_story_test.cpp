// The founding story on its real libraries, all from Debian's packages: a Flask app that
// draws a matplotlib figure per request and never closes it (stories/figure_app.py),
// served by `gunicorn -w 2` under LD_PRELOAD. Through the one port, POST /baseline?pid=all,
// K requests over both workers, then GET /diff?pid=all: the merged diff names matplotlib's
// Agg renderer buffer (RendererAgg's pixel buffer, width x height x 4 bytes) with one block
// per request, and each worker's own /diff?pid= has the blocks of the requests it served.
#include <signal.h>
#include <stdlib.h>

#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "../support/temp_dir.hpp"
#include "e2e_support.hpp"

namespace liveheap::e2e {
namespace {

using nlohmann::json;

constexpr const char* kPython = "/usr/bin/python3";  // Debian's, with its packages
constexpr int kRequests = 10;                        // K, in pairs over the two workers

// The statistic of a diff in matplotlib's RendererAgg constructor whose blocks are
// `bytes` each, or null.
json renderer_stat(const json& diff, std::int64_t bytes) {
  for (const json& stat : diff.at("stats"))
    if (stat.value("function", "").find("RendererAgg::RendererAgg") != std::string::npos &&
        stat.value("count", std::int64_t{0}) > 0 &&
        stat.value("size", std::int64_t{0}) == bytes * stat.value("count", std::int64_t{0}))
      return stat;
  return nullptr;
}

class GunicornStory : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("/usr/bin/python3 -c 'import flask, gunicorn, matplotlib' 2>/dev/null") != 0)
      GTEST_SKIP() << "needs Debian's python3-flask, gunicorn and python3-matplotlib "
                      "(./build.sh test installs them)";
    dir_.emplace();
    app_port_ = http_test::free_port();
    port_ = http_test::free_port();
    gunicorn_ = std::make_unique<http_test::ChildProcess>(
        std::vector<std::string>{kPython, "-m", "gunicorn", "-w", "2", "-b",
                                 "127.0.0.1:" + std::to_string(app_port_), "--chdir", LIVEHEAP_STORIES_DIR,
                                 app_},
        std::vector<std::string>{std::string("LD_PRELOAD=") + LIVEHEAP_PRELOAD_LIBRARY,
                                 "LIVEHEAP_ADDR=127.0.0.1:" + std::to_string(port_), "LIVEHEAP_MODE=exact",
                                 "XDG_RUNTIME_DIR=" + dir_->path(), "MPLCONFIGDIR=" + (*dir_ / "mpl"),
                                 "MPLBACKEND=Agg", "PYTHONDONTWRITEBYTECODE=1",
                                 std::string("LIVEHEAP_SAMPLES_PYTHON=") + LIVEHEAP_SAMPLES_PYTHON});
  }
  void TearDown() override {
    if (!gunicorn_) return;
    ::kill(gunicorn_->pid(), SIGTERM);  // the arbiter stops its workers
    gunicorn_->wait(10000);
    gunicorn_.reset();
  }

  json processes() const {
    const auto reply = http_test::get(port_, "/debug/memory/processes?format=json");
    return reply.status == 200 ? reply.json()["processes"] : json::array();
  }

  // The arbiter and its two workers, each with its endpoint, once /processes lists them
  // (refused until the port is bound); fewer when it never does.
  json wait_for_the_three() const {
    json list;
    EXPECT_TRUE(http_test::wait_until(
        std::chrono::seconds(60), [&] { return (list = processes()).size() == 3; },
        std::chrono::milliseconds(100)))
        << "/processes never listed the arbiter and its two workers: " << list.dump();
    return list;
  }

  // Draws until both workers have served (one may still be importing matplotlib), and on
  // `also` too when given: each worker's first figure loads fonts and fills caches once.
  // The pids that answered (0: a request that failed).
  std::set<long> warm_up(const std::string& also = "") const {
    std::set<long> workers;
    for (int i = 0; i < 20 && workers.size() < 2; ++i) {
      for (const json& a : plot(1)) workers.insert(a.value("pid", 0L));
      if (!also.empty()) plot(1, also);
    }
    return workers;
  }

  // `pairs` x 2 concurrent GET /plot: a worker holds each request 100 ms, so the two of a
  // pair are served by different workers. Their answers.
  std::vector<json> plot(int pairs, const std::string& target = "/plot") const {
    std::vector<json> answers;
    for (int i = 0; i < pairs; ++i) {
      json a, b;
      std::thread other([&] {
        try {
          a = http_test::get(app_port_, target).json();
        } catch (const std::exception& e) {  // a thread must not throw: the check below fails
          a = {{"error", e.what()}};
        }
      });
      b = http_test::get(app_port_, target).json();
      other.join();
      answers.push_back(a);
      answers.push_back(b);
    }
    return answers;
  }

  std::string app_ = "figure_app:app";
  std::optional<test_support::TempDir> dir_;  // the registry (XDG_RUNTIME_DIR), matplotlib's cache
  std::uint16_t app_port_ = 0, port_ = 0;
  std::unique_ptr<http_test::ChildProcess> gunicorn_;
};

TEST_F(GunicornStory, TheMergedDiffNamesTheAggRendererBufferOncePerRequest) {
  const json list = wait_for_the_three();
  ASSERT_EQ(list.size(), 3u);
  for (const json& p : list) EXPECT_EQ(p["mode"], "exact") << p.dump();
  const std::set<long> workers = warm_up();
  ASSERT_EQ(workers.size(), 2u) << "one worker never served a request";
  ASSERT_EQ(workers.count(0), 0u) << "a request failed";
  std::vector<json> answers;

  const auto baseline = http_test::post(port_, "/debug/memory/baseline?pid=all&format=json");
  ASSERT_EQ(baseline.status, 200) << baseline.body;
  const json baseline_answer = baseline.json();  // a range-for over a temporary's member dangles
  for (const json& p : baseline_answer["processes"]) ASSERT_EQ(p["status"], 200) << p.dump();

  answers = plot(kRequests / 2);
  std::map<long, int> served;  // worker pid -> requests
  for (const json& a : answers) ++served[a.value("pid", 0L)];
  ASSERT_EQ(served.size(), 2u);
  const std::int64_t width = answers[0]["width"], height = answers[0]["height"];
  ASSERT_EQ(width * height, 1560 * 1040);          // the seed's figure
  const std::int64_t buffer = width * height * 4;  // RGBA, one byte each

  const auto all = http_test::get(port_, "/debug/memory/diff?pid=all&format=json&limit=1000");
  ASSERT_EQ(all.status, 200) << all.body;
  EXPECT_EQ(all.json()["pids"].size(), 3u) << all.body;
  const json merged = renderer_stat(all.json(), buffer);
  ASSERT_FALSE(merged.is_null()) << all.json()["stats"].dump(1);
  EXPECT_TRUE(merged["file"].get<std::string>().ends_with("/_backend_agg.cpp")) << merged.dump();
  EXPECT_EQ(merged["count_diff"], kRequests) << merged.dump();
  EXPECT_EQ(merged["size_diff"], kRequests * buffer) << merged.dump();

  // Each worker's own diff: the requests it served.
  for (const auto& [pid, count] : served) {
    const auto one =
        http_test::get(port_, "/debug/memory/diff?format=json&limit=1000&pid=" + std::to_string(pid));
    ASSERT_EQ(one.status, 200) << one.body;
    const json stat = renderer_stat(one.json(), buffer);
    ASSERT_FALSE(stat.is_null()) << pid;
    EXPECT_EQ(stat["count_diff"], count) << pid;
    EXPECT_EQ(stat["size_diff"], count * buffer) << pid;
  }
  // The text report names it the same way, with one block per request.
  const auto text = http_test::get(port_, "/debug/memory/diff?pid=all&limit=1000");
  const std::string key = merged["key"];
  const auto at = text.body.find(key.substr(key.rfind('/') + 1) + ": size=");
  ASSERT_NE(at, std::string::npos) << text.body;
  const std::string line = text.body.substr(at, text.body.find('\n', at) - at);
  EXPECT_NE(line.find(" (+61.9 MiB), count="), std::string::npos) << line;  // 10 x 6,489,600 B
  EXPECT_NE(line.find(" (+" + std::to_string(kRequests) + "), average=6338 KiB"), std::string::npos) << line;
}

// The renderer's buffer with its Python frames: its traceback runs through the app's
// fig.savefig line, and the app's own lines, cumulative, hold the buffers at that line; in
// exact mode, then in sampled mode.
TEST_F(GunicornStory, TheBuffersTracebackReachesTheAppsSavefigLine) {
  ASSERT_EQ(wait_for_the_three().size(), 3u);
  ASSERT_EQ(warm_up().size(), 2u) << "one worker never served a request";
  ASSERT_EQ(http_test::post(port_, "/debug/memory/baseline?pid=all").status, 200);
  const std::vector<json> answers = plot(kRequests / 2);
  const std::int64_t buffer =
      answers[0]["width"].get<std::int64_t>() * answers[0]["height"].get<std::int64_t>() * 4;
  const std::string app = std::string(LIVEHEAP_STORIES_DIR) + "/figure_app.py";
  int savefig = 0, draw = 0;  // the lines marked "# site: savefig" and "# site: draw"
  {
    std::ifstream in(app);
    std::string text;
    for (int line = 1; std::getline(in, text); ++line) {
      if (text.ends_with("# site: savefig")) savefig = line;
      if (text.ends_with("# site: draw")) draw = line;
    }
  }
  ASSERT_NE(savefig, 0);
  ASSERT_NE(draw, 0);

  const auto all = http_test::get(port_, "/debug/memory/diff?pid=all&format=json&limit=1000&key=traceback");
  ASSERT_EQ(all.status, 200) << all.body;
  const json stat = renderer_stat(all.json(), buffer);
  ASSERT_FALSE(stat.is_null()) << all.json()["stats"].dump(1);
  EXPECT_EQ(stat["count_diff"], kRequests) << stat.dump();
  bool through_savefig = false;
  for (const json& frame : stat["traceback"])
    through_savefig =
        through_savefig || (frame["kind"] == "python" && frame["file"] == app && frame["line"] == savefig);
  EXPECT_TRUE(through_savefig) << stat["traceback"].dump(1);

  // On top of the app's own lines, cumulative: its outermost line that the figures go
  // through (plot's call of draw), then draw's savefig line holding at least the requests'
  // buffers.
  const auto expect_app_lines_on_top = [&](const char* mode) {
    const auto reply = http_test::get(
        port_,
        "/debug/memory/diff?pid=all&format=json&limit=5&key=line&cumulative=1&include=*/figure_app.py");
    ASSERT_EQ(reply.status, 200) << mode << ": " << reply.body;
    const json answer = reply.json();
    const json& lines = answer.at("stats");
    ASSERT_FALSE(lines.empty()) << mode << ": " << reply.body;
    EXPECT_EQ(lines.at(0)["file"], app) << mode << ": " << reply.body;
    EXPECT_EQ(lines.at(0)["line"], draw) << mode << ": " << reply.body;
    bool savefig_holds_the_buffers = false;
    for (const json& line : lines)
      savefig_holds_the_buffers =
          savefig_holds_the_buffers ||
          (line["line"] == savefig && line["size_diff"].get<std::int64_t>() >= kRequests * buffer);
    EXPECT_TRUE(savefig_holds_the_buffers) << mode << ": " << reply.body;
  };
  expect_app_lines_on_top("exact");

  // Sampled mode in the same processes (a session each, by pid): the same lines on top. A
  // 6.5 MB buffer is sampled with p = 1 - e^(-6.5 MB / 512 KiB), i.e. always, at a weight
  // of its size: the savefig line holds at least the requests' buffers again.
  for (const json& p : processes()) {
    const std::string pid = std::to_string(p["pid"].get<long>());
    ASSERT_EQ(http_test::post(port_, "/debug/memory/stop?pid=" + pid).status, 200) << pid;
    const auto started = http_test::post(port_, "/debug/memory/start?mode=sampled&pid=" + pid);
    ASSERT_EQ(started.status, 200) << pid << ": " << started.body;
  }
  ASSERT_EQ(http_test::post(port_, "/debug/memory/baseline?pid=all").status, 200);
  plot(kRequests / 2);
  expect_app_lines_on_top("sampled");
}

// The same story tagged by route (samples/python/liveheap_wsgi.py over the C API): through
// the one port, GET /routes?pid=all says what a request of each route left behind.
class GunicornRoutes : public GunicornStory {
 protected:
  GunicornRoutes() { app_ = "routes_app:app"; }
};

TEST_F(GunicornRoutes, ARouteThatKeepsItsFigureRetainsItAndOneThatClosesItNothing) {
  ASSERT_EQ(wait_for_the_three().size(), 3u);
  // Each worker draws with each route once (fonts, caches) before the baseline.
  ASSERT_EQ(warm_up("/plot/closed").size(), 2u) << "one worker never served a request";
  plot(1, "/plot/closed");
  const auto baseline = http_test::post(port_, "/debug/memory/baseline?pid=all&format=json");
  ASSERT_EQ(baseline.status, 200) << baseline.body;

  const std::vector<json> kept = plot(kRequests / 2);
  plot(kRequests / 2, "/plot/closed");
  const std::int64_t buffer =
      kept[0]["width"].get<std::int64_t>() * kept[0]["height"].get<std::int64_t>() * 4;

  const auto reply = http_test::get(port_, "/debug/memory/routes?pid=all&format=json");
  ASSERT_EQ(reply.status, 200) << reply.body;
  const json routes = reply.json();
  json plot_line, closed_line;
  for (const json& line : routes["routes"]) {
    if (line["route"] == "GET /plot") plot_line = line;
    if (line["route"] == "GET /plot/closed") closed_line = line;
  }
  ASSERT_FALSE(plot_line.is_null()) << routes.dump();
  ASSERT_FALSE(closed_line.is_null()) << routes.dump();
  std::cout << "GET /plot: " << plot_line.dump() << "\nGET /plot/closed: " << closed_line.dump() << "\n";
  EXPECT_EQ(plot_line["retained_requests"], kRequests);
  EXPECT_EQ(closed_line["retained_requests"], kRequests);
  EXPECT_EQ(buffer, 6'489'600);  // the seed's figure: 1560 x 1040 pixels
  // A kept figure holds its renderer's buffer and the figure's objects (~8% more).
  const double kept_each = plot_line["retained_per_request"];
  EXPECT_GE(kept_each, static_cast<double>(buffer));
  EXPECT_LT(kept_each, 1.15 * static_cast<double>(buffer));
  // A closed figure leaves (nearly) nothing: under 1% of a buffer a request.
  EXPECT_LT(std::abs(closed_line["retained_per_request"].get<double>()), 0.01 * static_cast<double>(buffer));
}

}  // namespace
}  // namespace liveheap::e2e
