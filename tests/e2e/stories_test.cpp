// End to end: the real leaky_server, real traffic, and liveheap's HTTP API must find each
// story where leak_stories.cpp marks it, with exactly the bytes the story says it kept.
#include <chrono>
#include <map>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "e2e_support.hpp"

namespace liveheap::e2e {
namespace {

using nlohmann::json;

// Noise a quiet server may add or remove between two snapshots: Asio's recycled handler
// memory and strand mutexes (at most 193 of 40 bytes, never freed once made), and the
// session of the request that took the baseline.
constexpr std::int64_t kServerNoise = 64 * 1024;

struct Story {
  std::string name;
  std::string target;
};

void PrintTo(const Story& story, std::ostream* out) { *out << story.target; }

class LeakTest : public ::testing::TestWithParam<Story> {};

// A leak grows with the requests: after 2 and after 6 of them, its site line holds exactly
// what the requests said they kept there, and its route line (cumulatively: every stack
// through it) holds all they kept.
TEST_P(LeakTest, FoundAtItsLineGrowingWithRequests) {
  const Story& story = GetParam();
  const int site = marked_line("site: " + story.name);
  const int route = marked_line("route: " + story.name);
  LeakyServer server;
  server.post("/debug/memory/baseline");

  std::vector<json> responses;
  for (const int requests : {2, 6}) {
    while (responses.size() < static_cast<std::size_t>(requests))
      responses.push_back(server.story(story.target));
    SCOPED_TRACE(story.name + " after " + std::to_string(requests) + " requests");

    const json diff = server.diff();
    const json at_site = stat_at(diff, site);
    ASSERT_FALSE(at_site.is_null()) << "leak_stories.cpp:" << site << " not in " << diff.dump();
    EXPECT_EQ(diff["stats"][0]["line"], site) << "the story's site is not the top line";
    EXPECT_EQ(at_site["size_diff"], sum(responses, "site_bytes"));
    EXPECT_EQ(at_site["count_diff"], sum(responses, "site_blocks"));
    EXPECT_EQ(at_site["size_diff"], requests * responses[0]["site_bytes"].get<std::int64_t>());

    const json at_route = stat_at(server.diff("&cumulative=1"), route);
    ASSERT_FALSE(at_route.is_null()) << "route line leak_stories.cpp:" << route;
    EXPECT_EQ(at_route["size_diff"], sum(responses, "retained_bytes"));
    EXPECT_EQ(at_route["count_diff"], sum(responses, "retained_blocks"));

    // Nothing else grew: the total is the story's, give or take the server's own noise.
    const std::int64_t total = diff["total"]["size_diff"];
    EXPECT_NEAR(total, sum(responses, "retained_bytes"), kServerNoise);
  }

  // The fix, deployed: what the story kept is gone from the diff.
  server.post("/release");
  const json after = server.diff("&cumulative=1");
  for (const int line : {site, route}) {
    if (const json stat = stat_at(after, line); !stat.is_null()) {
      EXPECT_EQ(stat["size_diff"], 0) << "line " << line;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Stories, LeakTest,
                         ::testing::Values(Story{"client", "/client"}, Story{"figure", "/figure"},
                                           Story{"convert", "/convert?rows=5000"}),
                         [](const auto& info) { return info.param.name; });

// The cache grows with distinct shapes up to its capacity, then stays there however many
// new or repeated shapes come: a plateau, not a leak.
TEST(CacheTest, PlateausAtItsCapacity) {
  const int site = marked_line("site: cache");
  const int route = marked_line("route: cache");
  LeakyServer server;
  server.post("/debug/memory/baseline");
  const auto shape = [](int i) { return "/cache?shape=" + std::to_string(i) + "x" + std::to_string(i); };

  json first;
  std::int64_t entry_bytes = 0;  // all an entry holds, wherever allocated
  std::int64_t capacity = 0;
  for (int i = 1;; ++i) {
    const json r = server.story(shape(i));
    if (i == 1) {
      first = r;
      entry_bytes = r["retained_bytes"];
    }
    capacity = r["capacity"];
    EXPECT_FALSE(r["hit"]);
    if (r["entries"] == capacity) break;
  }
  const std::int64_t plan_bytes = first["site_bytes"];
  const auto expect_full = [&](const char* when) {
    SCOPED_TRACE(when);
    const json at_site = stat_at(server.diff(), site);
    ASSERT_FALSE(at_site.is_null());
    EXPECT_EQ(at_site["size_diff"], capacity * plan_bytes);
    EXPECT_EQ(at_site["count_diff"], capacity);
    const json at_route = stat_at(server.diff("&cumulative=1"), route);
    ASSERT_FALSE(at_route.is_null());
    EXPECT_EQ(at_route["size_diff"], capacity * entry_bytes);
  };
  expect_full("filled to capacity");

  // Twice the capacity in new shapes: each evicts one, the cache stays full.
  for (int i = 1; i <= 2 * capacity; ++i) {
    const json r = server.story(shape(1000 + i));
    EXPECT_FALSE(r["hit"]);
    EXPECT_EQ(r["retained_bytes"], 0);
    EXPECT_EQ(r["entries"], capacity);
  }
  expect_full("after evicting");

  // The shapes now cached, again: hits that allocate nothing.
  for (int i = 2 * capacity; i > capacity; --i) EXPECT_TRUE(server.story(shape(1000 + i))["hit"]);
  expect_full("after hits");
}

// The README's walkthrough, then the server idles: two points after the work, the three
// leaks read growing and the full LRU plateaued, and fifteen idle seconds (two minutes when
// the README was measured) change no verdict. The server records a point a second.
TEST(WalkthroughTest, LeaksGrowingAndTheFullCachePlateauedAfterTheTrafficStops) {
  LeakyServer server;
  server.post("/debug/memory/baseline");
  for (int i = 0; i < 10; ++i) {
    server.story("/client");
    server.story("/figure");
    server.story("/convert?rows=20000");
  }
  for (int i = 1; i <= 64; ++i) {  // paced as the README's loop: the LRU turns over for seconds
    server.story("/cache?shape=" + std::to_string(i) + "x" + std::to_string(i));
    server.get("/ok");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const auto verdicts = [&] {
    const json diff = server.diff();
    std::map<std::string, std::string> by_site;
    for (const char* site : {"site: figure", "site: convert", "site: client", "site: cache"}) {
      const json stat = stat_at(diff, marked_line(site));
      by_site[site] = stat.is_null() ? "absent" : stat["verdict"].get<std::string>();
    }
    return by_site;
  };
  const std::map<std::string, std::string> expected = {{"site: figure", "growing"},
                                                       {"site: convert", "growing"},
                                                       {"site: client", "growing"},
                                                       {"site: cache", "plateaued"}};
  // Two points after the traffic: the LRU's last shapes were its largest, so the point taken
  // during them still rose (a report that took a second to name its frames used to give it
  // that time; names now come at once).
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_EQ(verdicts(), expected) << "two points after the traffic";
  std::this_thread::sleep_for(std::chrono::seconds(15));
  EXPECT_EQ(verdicts(), expected) << "fifteen idle seconds later";
  const std::string text = server.get("/debug/memory/diff?limit=8&verdicts=1").body;
  EXPECT_NE(text.find("leak_stories.cpp:" + std::to_string(marked_line("site: cache")) +
                      ": size=2048 KiB (+2048 KiB)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("[plateaued, retains "), std::string::npos) << text;
}

// A route that frees all it allocates shows no growth at any of its lines, nor in total.
TEST(WellBehavedTest, ShowsNoGrowth) {
  LeakyServer server;
  server.story("/ok?kb=64");  // let one-time server state settle before the baseline
  server.post("/debug/memory/baseline");
  for (int i = 0; i < 40; ++i) EXPECT_EQ(server.story("/ok?kb=512")["retained_bytes"], 0);

  const json diff = server.diff();
  for (const json& stat : diff["stats"]) {
    if (stat["file"].get<std::string>().ends_with("/leak_stories.cpp")) {
      EXPECT_EQ(stat["size_diff"], 0) << stat.dump();
    }
  }
  EXPECT_LT(diff["total"]["size_diff"].get<std::int64_t>(), kServerNoise) << diff.dump();
}

// Bad input to the sample's routes gets a 4xx with a reason, and the server stays up.
TEST(BadInputTest, AnsweredWithAReason) {
  LeakyServer server;
  for (const char* target :
       {"/cache", "/cache?shape=12", "/cache?shape=1x1&x=2", "/convert?rows=0", "/convert?rows=-1",
        "/convert?rows=99999999999", "/ok?kb=abc", "/nowhere", "/figure?id=1"}) {
    const Reply reply = http_test::get(server.port(), target);
    EXPECT_GE(reply.status, 400) << target;
    EXPECT_LT(reply.status, 500) << target;
    EXPECT_TRUE(reply.json().contains("error")) << target;
  }
  // Bytes that are not UTF-8, quoted back in the reason, must not break the JSON answer.
  const std::string raw = http_test::send_raw(
      server.port(), "GET /convert?rows=\xff\xfe HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(http_test::status_of(raw), 400) << raw;
  EXPECT_EQ(http_test::post(server.port(), "/figure").status, 405);
  EXPECT_EQ(http_test::get(server.port(), "/release").status, 405);
  EXPECT_EQ(server.story("/ok")["retained_bytes"], 0);
}

}  // namespace
}  // namespace liveheap::e2e
