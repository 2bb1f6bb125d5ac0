// Every route end to end over a real socket, in text and JSON, and its error paths.
#include <chrono>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "embedded_assets.hpp"
#include "server_fixture.hpp"

namespace http_test {
namespace {

constexpr const char* kJson = "Accept: application/json\r\n";

// A failure is one line of text, or {"error": "..."} in JSON.
void expect_error(const Reply& reply, int status, const std::string& reason_part) {
  EXPECT_EQ(reply.status, status) << reply.body;
  std::string reason = reply.body;
  if (reply.header("content-type") == "application/json") {
    reason = reply.json().at("error").get<std::string>();
  } else {
    ASSERT_TRUE(reason.ends_with("\n")) << reason;
    reason.pop_back();
  }
  EXPECT_EQ(reason.find('\n'), std::string::npos) << reason;
  EXPECT_NE(reason.find(reason_part), std::string::npos) << reason;
}

using RoutesTest = ServerTest;

TEST_F(RoutesTest, IndexListsTheRoutesOrServesTheDashboard) {
  const Reply text = get(port(), "/debug/memory/?format=text");
  EXPECT_EQ(text.status, 200);
  EXPECT_NE(text.body.find("GET  /debug/memory/stats"), std::string::npos) << text.body;
  EXPECT_NE(text.body.find("POST /debug/memory/trim"), std::string::npos) << text.body;
  const Reply json = get(port(), "/debug/memory/?format=json");
  EXPECT_EQ(json.json().at("routes").size(), 19u);
  const Reply page = get(port(), "/debug/memory/");
  EXPECT_EQ(page.status, 200);
  if (web::find_asset("index.html") != nullptr) {
    EXPECT_EQ(page.header("content-type"), "text/html; charset=utf-8");
  }
  const Reply bare = get(port(), "/debug/memory?format=json");
  EXPECT_EQ(bare.status, 308);
  EXPECT_EQ(bare.header("location"), "/debug/memory/?format=json");
}

TEST_F(RoutesTest, StatsInTextAndJson) {
  const Reply text = get(port(), "/debug/memory/stats");
  EXPECT_EQ(text.status, 200);
  EXPECT_EQ(text.header("content-type"), "text/plain; charset=utf-8");
  EXPECT_TRUE(text.body.starts_with("tracing: on, mode=exact")) << text.body;
  EXPECT_NE(text.body.find("mallinfo2: arena="), std::string::npos);

  for (const auto& [target, headers] :
       {std::pair{"/debug/memory/stats?format=json", ""}, std::pair{"/debug/memory/stats", kJson}}) {
    const Reply reply = get(port(), target, headers);
    ASSERT_EQ(reply.status, 200);
    EXPECT_EQ(reply.header("content-type"), "application/json");
    EXPECT_EQ(reply.header("cache-control"), "no-store");
    const auto stats = reply.json();
    EXPECT_EQ(stats["mode"], "exact");
    EXPECT_EQ(stats["tracing"], true);
    EXPECT_EQ(stats["sample_interval"], 0);
    for (const char* field : {"max_frames", "tracker_memory", "stacks", "live_blocks", "dropped",
                              "fallback_walks", "rss", "peak_rss"})
      EXPECT_TRUE(stats.at(field).is_number()) << field;
    EXPECT_EQ(stats["windows"], 0);  // no ?seconds= window open
    EXPECT_GT(stats["traced"]["current"].get<long>(), 0);
    EXPECT_GE(stats["traced"]["peak"], stats["traced"]["current"]);
    EXPECT_GT(stats["rss"].get<long>(), 0);
    EXPECT_GE(stats["peak_rss"], stats["rss"]);
    for (const char* field : {"arena", "hblkhd", "uordblks", "fordblks", "keepcost"})
      EXPECT_TRUE(stats["mallinfo"].at(field).is_number()) << field;
  }
  // ?format= wins over Accept.
  EXPECT_EQ(get(port(), "/debug/memory/stats?format=text", kJson).header("content-type"),
            "text/plain; charset=utf-8");
}

TEST_F(RoutesTest, BaselineThenDiffFindsTheKnownLine) {
  expect_error(get(port(), "/debug/memory/baseline"), 409, "POST /debug/memory/baseline");
  expect_error(get(port(), "/debug/memory/diff?format=json"), 409, "POST /debug/memory/baseline");

  const Reply taken = post(port(), "/debug/memory/baseline?format=json");
  ASSERT_EQ(taken.status, 200) << taken.body;
  EXPECT_GT(taken.json()["taken_at_ms"].get<long>(), 0);
  EXPECT_GT(taken.json()["total"]["size"].get<long>(), 0);
  const Reply said = get(port(), "/debug/memory/baseline");
  EXPECT_EQ(said.status, 200);
  EXPECT_TRUE(said.body.starts_with("baseline taken ")) << said.body;

  KnownAllocations known(10, 100000);
  const Reply json = get(port(), "/debug/memory/diff?format=json&limit=100");
  ASSERT_EQ(json.status, 200) << json.body;
  const auto report = json.json();
  EXPECT_EQ(report["mode"], "exact");
  EXPECT_EQ(report["sample_interval"], 0);
  EXPECT_EQ(report["key"], "line");
  EXPECT_TRUE(report["include"].empty());
  for (const char* field : {"size", "size_diff", "count", "count_diff"})
    EXPECT_TRUE(report["total"].at(field).is_number()) << field;
  const auto stat = find_known(report);
  ASSERT_FALSE(stat.is_null()) << report.dump(1);
  EXPECT_EQ(stat["size_diff"], 1000000);
  EXPECT_EQ(stat["count_diff"], 10);
  EXPECT_EQ(stat["size"], 1000000);
  EXPECT_EQ(stat["count"], 10);
  EXPECT_EQ(stat["average"], 100000);
  for (const char* field : {"key", "function", "module"}) EXPECT_TRUE(stat.contains(field)) << field;
  EXPECT_FALSE(stat.contains("traceback")) << "whole stacks only where asked";

  const Reply text = get(port(), "/debug/memory/diff?limit=100");
  ASSERT_EQ(text.status, 200);
  EXPECT_TRUE(text.body.starts_with("Top ")) << text.body;
  EXPECT_NE(text.body.find(" against the baseline: size="), std::string::npos) << text.body;
  const std::string line = std::string(kKnownFile) + ":" + std::to_string(kKnownLine) +
                           ": size=977 KiB (+977 KiB), count=10 (+10), average=97.7 KiB";
  EXPECT_NE(text.body.find(line), std::string::npos) << text.body;
}

TEST_F(RoutesTest, DiffKeysFiltersAndCumulative) {
  ASSERT_EQ(post(port(), "/debug/memory/baseline").status, 200);
  KnownAllocations known(4, 5000);
  const auto diff = [&](const std::string& query) {
    const Reply reply = get(port(), "/debug/memory/diff?format=json&limit=10000&" + query);
    EXPECT_EQ(reply.status, 200) << query << ": " << reply.body;
    return reply.json();
  };
  const auto has = [](const nlohmann::json& report, const std::string& field, const std::string& part) {
    for (const auto& stat : report["stats"])
      if (stat.value(field, "").find(part) != std::string::npos && stat["size_diff"] >= 20000) return true;
    return false;
  };
  EXPECT_TRUE(has(diff("key=file"), "file", kKnownFile));
  EXPECT_TRUE(has(diff("key=function"), "function", kKnownFunction));
  const auto by_traceback = diff("key=traceback");
  EXPECT_EQ(by_traceback["key"], "traceback");
  bool whole = false;
  for (const auto& stat : by_traceback["stats"])
    if (stat["size_diff"] == 20000 && stat["traceback"].size() > 1) whole = true;
  EXPECT_TRUE(whole);
  EXPECT_TRUE(diff("cumulative=1")["cumulative"].get<bool>());

  const auto included = diff(std::string("include=*") + kKnownFile);
  EXPECT_EQ(included["include"], nlohmann::json::array({std::string("*") + kKnownFile}));
  ASSERT_FALSE(find_known(included).is_null());
  for (const auto& stat : included["stats"])
    EXPECT_TRUE(stat["file"].get<std::string>().ends_with(kKnownFile));
  EXPECT_TRUE(find_known(diff(std::string("exclude=*") + kKnownFile)).is_null());
  EXPECT_FALSE(find_known(diff(std::string("include=function:*") + kKnownFunction + "*")).is_null());
  EXPECT_TRUE(find_known(diff("include=function:no_such_function")).is_null());
  // Repeatable, percent-encoded.
  const auto both = diff("include=%2Anowhere.cpp&include=%2A" + std::string(kKnownFile));
  EXPECT_EQ(both["include"].size(), 2u);
  EXPECT_FALSE(find_known(both).is_null());
}

TEST_F(RoutesTest, TopInTextAndJson) {
  KnownAllocations known(3, 70000);
  const Reply json = get(port(), "/debug/memory/top?format=json&limit=10000");
  ASSERT_EQ(json.status, 200) << json.body;
  const auto report = json.json();
  EXPECT_EQ(report["limit"], 10000);
  EXPECT_GE(report["keys"].get<std::size_t>(), report["stats"].size());
  EXPECT_FALSE(report["total"].contains("size_diff"));
  const auto stat = find_known(report);
  ASSERT_FALSE(stat.is_null());
  EXPECT_EQ(stat["size"], 210000);
  EXPECT_EQ(stat["count"], 3);
  EXPECT_FALSE(stat.contains("size_diff"));
  EXPECT_EQ(get(port(), "/debug/memory/top?format=json&limit=1").json()["stats"].size(), 1u);

  const Reply text = get(port(), "/debug/memory/top?limit=3");
  EXPECT_TRUE(text.body.starts_with("Top 3 of ")) << text.body;
  EXPECT_NE(text.body.find("(mode=exact)"), std::string::npos) << text.body;
  EXPECT_EQ(std::count(text.body.begin(), text.body.end(), '\n'), 4) << text.body;
  const Reply file = get(port(), std::string("/debug/memory/top?key=file&include=*") + kKnownFile);
  EXPECT_NE(file.body.find(std::string(kKnownFile) + ": size="), std::string::npos) << file.body;
}

TEST_F(RoutesTest, TracebacksAreWholeAndSymbolized) {
  KnownAllocations known(2, 1 << 20);  // the biggest stack of the test process
  const Reply text = get(port(), std::string("/debug/memory/tracebacks?limit=1&include=*") + kKnownFile);
  ASSERT_EQ(text.status, 200) << text.body;
  EXPECT_TRUE(text.body.starts_with("Top 1 of ")) << text.body;
  EXPECT_NE(text.body.find("  File \""), std::string::npos) << text.body;
  EXPECT_NE(text.body.find(kKnownFunction), std::string::npos) << text.body;
  EXPECT_NE(text.body.find("size=2048 KiB, count=2"), std::string::npos) << text.body;

  const Reply json = get(port(), std::string("/debug/memory/tracebacks?format=json&include=*") + kKnownFile);
  const auto report = json.json();
  EXPECT_EQ(report["key"], "traceback");
  ASSERT_FALSE(report["stats"].empty());
  const auto& frames = report["stats"][0]["traceback"];
  ASSERT_GT(frames.size(), 1u);
  for (const char* field : {"function", "short_function", "file", "line", "module", "address"})
    EXPECT_TRUE(frames[0].contains(field)) << field;
  std::string known_file;  // as the symbolizer names it: absolute, or relative to the build
  for (const auto& frame : frames)
    if (frame["function"].get<std::string>().find(kKnownFunction) != std::string::npos) {
      EXPECT_EQ(frame["short_function"], std::string("http_test::(anonymous namespace)::") + kKnownFunction);
      known_file = frame["file"].get<std::string>();
    }
  ASSERT_FALSE(known_file.empty()) << json.body;

  // The readable text: short names, the source line under the frame, every line in 200 columns.
  const std::string frame_line = "  File \"" + known_file + "\", line " + std::to_string(kKnownLine) +
                                 ", in http_test::(anonymous namespace)::" + kKnownFunction + "\n";
  EXPECT_NE(text.body.find(frame_line), std::string::npos) << text.body;
  if (std::ifstream(known_file).good()) {  // the test runs where the build put relative paths
    EXPECT_NE(text.body.find(frame_line + "    blocks[static_cast<std::size_t>(i)] = std::malloc(size);\n"),
              std::string::npos)
        << text.body;
  }
  std::istringstream lines(text.body);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 200u) << line;
}

TEST_F(RoutesTest, WindowDiffsOverSeconds) {
  for (const char* route : {"diff", "top"}) {
    const auto started = std::chrono::steady_clock::now();
    // Two seconds: the allocations below must fall inside the window even when this thread
    // is descheduled for a while on a loaded machine.
    auto reply = std::async(std::launch::async, [&] {
      return get(port(), std::string("/debug/memory/") + route + "?seconds=2&format=json&limit=10000");
    });
    ASSERT_TRUE(windows_waiting(port())) << route << ": the window never took its first snapshot";
    KnownAllocations known(5, 3000);  // during the window
    const auto allocated = std::chrono::steady_clock::now() - started;
    const Reply window = reply.get();
    EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::seconds(2));
    ASSERT_EQ(window.status, 200) << window.body;
    const auto stat = find_known(window.json());
    ASSERT_FALSE(stat.is_null()) << route << ": allocated "
                                 << std::chrono::duration_cast<std::chrono::milliseconds>(allocated).count()
                                 << " ms after asking for the window (past its end?)";
    EXPECT_EQ(stat["size_diff"], 15000);
    EXPECT_EQ(stat["count_diff"], 5);
    EXPECT_EQ(window.json()["against"], "the heap 2 s ago");
  }
}

TEST_F(RoutesTest, ControlRoutes) {
  const Reply stopped = post(port(), "/debug/memory/stop?format=json");
  ASSERT_EQ(stopped.status, 200);
  EXPECT_EQ(stopped.json()["tracing"], false);
  EXPECT_EQ(stopped.json()["mode"], "off");
  for (const char* target : {"/debug/memory/diff", "/debug/memory/top?format=json",
                             "/debug/memory/tracebacks", "/debug/memory/diff?seconds=1"})
    expect_error(get(port(), target), 409, "POST /debug/memory/start");
  expect_error(post(port(), "/debug/memory/baseline"), 409, "POST /debug/memory/start");

  const Reply started = post(port(), "/debug/memory/start?format=json&frames=16&mode=exact");
  ASSERT_EQ(started.status, 200) << started.body;
  EXPECT_EQ(started.json()["tracing"], true);
  EXPECT_EQ(started.json()["max_frames"], 16);
  expect_error(post(port(), "/debug/memory/start"), 409, "already on");
  ASSERT_EQ(post(port(), "/debug/memory/stop").status, 200);
  ASSERT_EQ(post(port(), "/debug/memory/start").status, 200);  // keeps the options
  EXPECT_EQ(get(port(), "/debug/memory/stats?format=json").json()["max_frames"], 16);
  ASSERT_EQ(post(port(), "/debug/memory/stop").status, 200);
  const Reply capped = post(port(), "/debug/memory/start?format=json&max_tracker_memory=24MiB");
  ASSERT_EQ(capped.status, 200) << capped.body;
  EXPECT_EQ(capped.json()["tracker_memory_cap"]["max_bytes"], 24 << 20);

  KnownAllocations known(2, 1 << 20);
  const auto before = get(port(), "/debug/memory/stats?format=json").json();
  const Reply cleared = post(port(), "/debug/memory/clear?format=json");
  ASSERT_EQ(cleared.status, 200);
  EXPECT_LT(cleared.json()["traced"]["current"], before["traced"]["current"]);
  const Reply reset = post(port(), "/debug/memory/reset-peak?format=json");
  ASSERT_EQ(reset.status, 200);
  EXPECT_LT(reset.json()["traced"]["peak"].get<long>(), 2 << 20);
  EXPECT_TRUE(post(port(), "/debug/memory/reset-peak").body.starts_with("tracing: on"));
  post(port(), "/debug/memory/stop");
  start();  // the fixture's options
}

TEST_F(RoutesTest, TrimReportsRssBeforeAndAfter) {
  const Reply json = post(port(), "/debug/memory/trim?format=json");
  ASSERT_EQ(json.status, 200);
  EXPECT_GT(json.json()["rss_before"].get<long>(), 0);
  EXPECT_GT(json.json()["rss_after"].get<long>(), 0);
  EXPECT_TRUE(json.json()["released"].is_boolean());
  EXPECT_TRUE(post(port(), "/debug/memory/trim").body.starts_with("malloc_trim(0) released"));
}

TEST_F(RoutesTest, WrongMethodIs405WithAllow) {
  const struct {
    const char* method;
    const char* path;
    const char* allow;
  } cases[] = {{"POST", "/stats", "GET"},
               {"GET", "/start", "POST"},
               {"GET", "/trim", "POST"},
               {"PUT", "/diff", "GET"},
               {"DELETE", "/baseline", "GET, POST"},
               {"OPTIONS", "/top", "GET"},
               {"POST", "/", "GET"},
               {"POST", "/static/x.js", "GET"}};
  for (const auto& c : cases) {
    const Reply reply = send(port(), c.method, std::string("/debug/memory") + c.path, kJson);
    expect_error(reply, 405, "is not allowed here");
    EXPECT_EQ(reply.header("allow"), c.allow) << c.method << " " << c.path;
  }
  // Unknown methods too, and HEAD's answer has no body.
  EXPECT_EQ(send(port(), "BREW", "/debug/memory/stats").status, 405);
  const Reply head = send(port(), "HEAD", "/debug/memory/stats");
  EXPECT_EQ(head.status, 405);
  EXPECT_EQ(head.body, "");
  EXPECT_EQ(head.header("content-length"), "0");
}

TEST_F(RoutesTest, BadParametersAre400NamingThem) {
  const struct {
    const char* target;
    const char* reason;
  } cases[] = {
      {"/stats?limit=5", "unknown parameter 'limit' (this route takes format, pid)"},
      {"/stats?pid=x", "pid='x' is not a process id (1 to 4194304) or all"},
      {"/top?key=route&route=%5B", "route='[': bad glob"},
      {"/routes?route=x", "unknown parameter 'route'"},
      {"/stats?pid=all", "pid=all applies to GET diff, GET top, GET routes and POST baseline"},
      {"/top?foo=1", "unknown parameter 'foo'"},
      {"/tracebacks?key=line", "unknown parameter 'key'"},
      {"/tracebacks?seconds=1", "unknown parameter 'seconds'"},
      {"/top?key=lines", "key='lines' is not one of line, file, function, traceback, route"},
      {"/top?limit=0", "limit='0' is not a whole number from 1 to 10000"},
      {"/top?limit=10001", "from 1 to 10000"},
      {"/top?limit=5x", "limit='5x'"},
      {"/top?limit=-1", "limit='-1'"},
      {"/top?limit=99999999999999999999999", "limit='9999"},
      {"/top?limit=", "limit=''"},
      {"/top?limit", "needs a value"},
      {"/top?format=xml", "format='xml' is not text or json, folded"},
      {"/top?cumulative=yes", "cumulative='yes' is not 0 or 1"},
      {"/top?key=traceback&cumulative=1", "does not apply to key=traceback"},
      {"/top?key=line&key=file", "given twice"},
      {"/diff?seconds=61", "seconds='61' is not a whole number from 1 to 60"},
      {"/diff?seconds=0", "seconds='0'"},
      {"/top?include=", "include= needs a glob"},
      {"/top?exclude=function:", "exclude= needs a glob"},
      {"/top?include=%5Babc", "include='[abc'"},
      {"/top?include=%zz", "bad percent-encoding '%zz'"},
      {"/top?include=abc%", "bad percent-encoding '%'"},
      {"/top?include=%00", "control character"},
      {"/top?include=%C3%28", "not valid UTF-8"},
      {"/start?mode=off", "mode='off' is not exact or sampled"},
      {"/start?frames=129", "frames='129' is not a whole number from 1 to 128"},
      {"/start?max_tracker_memory=5", "max_tracker_memory='5' is not a size from 1 MiB to 1 TiB"},
      {"/start?max_tracker_memory=2TiB", "max_tracker_memory='2TiB' is not a size"},
      {"/start?max_tracker_memory=24mb", "max_tracker_memory='24mb' is not a size"},
  };
  for (const auto& c : cases) {
    const std::string target = std::string("/debug/memory") + c.target;
    const bool post_route = target.find("/start") != std::string::npos;
    expect_error(send(port(), post_route ? "POST" : "GET", target), 400, c.reason);
    expect_error(send(port(), post_route ? "POST" : "GET", target, kJson), 400, c.reason);
  }
}

TEST_F(RoutesTest, NotFoundInsideAndOutsideThePrefix) {
  expect_error(get(port(), "/debug/memory/nope"), 404, "no route '/debug/memory/nope'");
  expect_error(get(port(), "/debug/memory/stats/", kJson), 404, "no route");
  expect_error(get(port(), "/elsewhere"), 404, "only under /debug/memory/");
  expect_error(get(port(), "/debug/memoryx/stats"), 404, "only under /debug/memory/");
}

TEST_F(RoutesTest, StaticFilesStayInTheirFolder) {
  const auto assets = web::assets();
  if (!assets.empty()) {
    const Reply file = get(port(), "/debug/memory/static/" + std::string(assets[0].path));
    EXPECT_EQ(file.status, 200);
    EXPECT_EQ(file.header("content-type"), assets[0].content_type);
    EXPECT_EQ(file.body, assets[0].body);
    EXPECT_EQ(get(port(), "/debug/memory/" + std::string(assets[0].path)).body, assets[0].body);
  }
  expect_error(get(port(), "/debug/memory/static/no-such.js"), 404, "no file 'no-such.js'");
  for (const char* target :
       {"/debug/memory/static/", "/debug/memory/static/../stats", "/debug/memory/static/%2e%2e",
        "/debug/memory/static/%2E%2E%2Fetc%2Fpasswd", "/debug/memory/static/a/b.js",
        "/debug/memory/static/..%5c..%5cx", "/debug/memory/static/.hidden"})
    expect_error(get(port(), target), 400, "bad file name");
  expect_error(get(port(), "/debug/memory/static/%zz"), 400, "bad percent-encoding");
}

class WindowLimitTest : public ServerTest {
  Config config() const override {
    Config config;
    config.max_windows = 1;
    return config;
  }
};

TEST_F(WindowLimitTest, TooManyWindowsAre429) {
  // Four seconds: still open when the next request comes, even on a loaded machine.
  auto first = std::async(std::launch::async, [&] { return get(port(), "/debug/memory/diff?seconds=4"); });
  ASSERT_TRUE(windows_waiting(port())) << "the first window never opened";
  expect_error(get(port(), "/debug/memory/top?seconds=1"), 429, "already waiting");
  EXPECT_EQ(get(port(), "/debug/memory/stats").status, 200);  // others go on meanwhile
  EXPECT_EQ(first.get().status, 200);
  EXPECT_EQ(get(port(), "/debug/memory/top?seconds=1").status, 200);
}

// A window whose client hung up once held its place (and the first snapshot) for its
// whole length: with max_windows = 1, nobody could open another for up to a minute.
TEST_F(WindowLimitTest, AWindowWhoseClientHungUpGivesItsPlaceBack) {
  {
    Connection gone(port());
    gone.write("GET /debug/memory/diff?seconds=60 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    ASSERT_TRUE(wait_until(std::chrono::seconds(10), [&] {
      return get(port(), "/debug/memory/top?seconds=1").status == 429;
    })) << "the first window never started waiting";
  }  // the client closes its connection
  const auto hung_up = std::chrono::steady_clock::now();
  Reply next;
  ASSERT_TRUE(wait_until(std::chrono::seconds(10), [&] {
    next = get(port(), "/debug/memory/top?seconds=1");
    return next.status != 429;
  })) << "the abandoned window still holds the only place";
  EXPECT_EQ(next.status, 200) << next.body;
  EXPECT_LT(std::chrono::steady_clock::now() - hung_up, std::chrono::seconds(10));
  // A client that half-closes after its request still gets its answer, unless it is a window.
  EXPECT_EQ(status_of(send_raw(port(), "GET /debug/memory/stats HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")), 200);
  EXPECT_EQ(
      status_of(send_raw(port(), "GET /debug/memory/top?key=lines HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")),
      400);
}

}  // namespace
}  // namespace http_test
