// A C program preloaded (no link-time dependency on liveheap: it looks the C API up with
// dlsym) tags its requests on several threads; GET /routes counts them and what each left.
#include <string>

#include <nlohmann/json.hpp>

#include "child_process.hpp"
#include "client.hpp"
#include "gtest/gtest.h"

namespace http_test {
namespace {

nlohmann::json route_named(const nlohmann::json& routes, const std::string& name) {
  for (const nlohmann::json& line : routes["routes"])
    if (line["route"] == name) return line;
  return nullptr;
}

TEST(RouteTagging, APreloadedCProgramTagsItsRequestsOnSeveralThreads) {
  constexpr int kThreads = 4, kRequests = 25;
  const std::uint16_t port = free_port();
  ChildProcess program({LIVEHEAP_ROUTE_TAGGING_PROGRAM, std::to_string(kThreads), std::to_string(kRequests)},
                       {std::string("LD_PRELOAD=") + LIVEHEAP_PRELOAD_LIBRARY,
                        "LIVEHEAP_ADDR=127.0.0.1:" + std::to_string(port), "LIVEHEAP_MODE=exact"});
  ASSERT_EQ(program.read_line(20000).value_or("EOF"), "READY");
  const Reply reply = get(port, "/debug/memory/routes?format=json");
  ASSERT_EQ(reply.status, 200) << reply.body;
  const nlohmann::json routes = reply.json();
  SCOPED_TRACE(routes.dump());
  for (int t = 0; t < kThreads; ++t) {
    const nlohmann::json line = route_named(routes, "GET /thread/" + std::to_string(t));
    ASSERT_FALSE(line.is_null()) << "thread " << t;
    EXPECT_EQ(line["requests"], kRequests);
    EXPECT_EQ(line["live_bytes"], kRequests * (t + 1) * 1000);
    EXPECT_EQ(line["live_blocks"], kRequests);
    EXPECT_EQ(line["allocated_bytes"], kRequests * ((t + 1) * 1000 + 4096));
    EXPECT_EQ(line["retained_per_request"], (t + 1) * 1000.0);
  }
  // A name too long is cut at 127 bytes; a byte that is not UTF-8 reads '?'.
  const nlohmann::json cut = route_named(routes, std::string(127, 'a'));
  ASSERT_FALSE(cut.is_null());
  EXPECT_EQ(cut["live_bytes"], 100);
  const nlohmann::json odd = route_named(routes, "GET /caf?");
  ASSERT_FALSE(odd.is_null());
  EXPECT_EQ(odd["live_bytes"], 200);
  // Outside any request (begin(NULL) opened none): the program's own 777 bytes among them.
  const nlohmann::json none = route_named(routes, "(no request)");
  ASSERT_FALSE(none.is_null());
  EXPECT_GE(none["live_bytes"].get<std::int64_t>(), 777);

  const Reply by_route = get(port, "/debug/memory/top?key=route&route=GET%20/thread/*&format=json");
  ASSERT_EQ(by_route.status, 200) << by_route.body;
  EXPECT_EQ(by_route.json()["stats"].size(), static_cast<std::size_t>(kThreads)) << by_route.body;
  program.write_line("done");
}

}  // namespace
}  // namespace http_test
