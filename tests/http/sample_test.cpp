// The sample Beast server (samples/beast_server.cpp) run as a user would: its own routes
// and liveheap's in one single-threaded server, over a socket.
#include <chrono>
#include <future>

#include "child_process.hpp"
#include "client.hpp"
#include "gtest/gtest.h"

namespace http_test {
namespace {

TEST(BeastSample, ServesItsOwnRoutesAndLiveheaps) {
  ChildProcess server({LIVEHEAP_BEAST_SERVER, "--host", "127.0.0.1", "--port", "0"}, {"LIVEHEAP_MODE=exact"});
  const auto line = server.read_line(10000);
  ASSERT_TRUE(line && line->starts_with("listening on http://127.0.0.1:")) << line.value_or("EOF");
  const auto port = static_cast<std::uint16_t>(std::stoi(line->substr(line->rfind(':') + 1)));

  EXPECT_EQ(get(port, "/hello").body, "hello\n");
  ASSERT_EQ(post(port, "/debug/memory/baseline").status, 200);
  EXPECT_EQ(get(port, "/leak?kb=64").status, 200);
  EXPECT_EQ(get(port, "/leak?kb=64").status, 200);
  const auto report = get(port, "/debug/memory/diff?format=json&limit=100").json();
  bool found = false;
  for (const auto& stat : report["stats"])
    if (stat["file"].get<std::string>().ends_with("beast_server.cpp") && stat["size_diff"] == 2 * 64 * 1024 &&
        stat["count_diff"] == 2)
      found = true;
  EXPECT_TRUE(found) << report.dump(1);
  // A window does not block the single-threaded server's other clients: /hello comes back
  // long before the window's four seconds end (a loaded machine may be slow, not that slow).
  auto window = std::async(std::launch::async, [&] { return get(port, "/debug/memory/diff?seconds=4"); });
  ASSERT_TRUE(windows_waiting(port)) << "the window never opened";
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(get(port, "/hello").status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2));
  EXPECT_EQ(window.get().status, 200);
}

}  // namespace
}  // namespace http_test
