// The baseline and a ?seconds= window's start (of /diff, /top and the pprof routes) are
// StackSnapshots: taking them symbolizes
// nothing (the symbolizer's counters in /stats stay put), the /diff that shows them does;
// and a baseline whose code was unloaded since is a 409 that says to take it again.
#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <thread>

#include "server_fixture.hpp"

namespace http_test {
namespace {

class BaselineTest : public ServerTest {};

std::uint64_t addresses_asked(const nlohmann::json& stats) {
  return stats.at("symbolizer").at("addresses_asked").get<std::uint64_t>();
}

nlohmann::json stats_now(std::uint16_t port) { return get(port, "/debug/memory/stats?format=json").json(); }

TEST_F(BaselineTest, TakingTheBaselineSymbolizesNothingTheDiffDoes) {
  const nlohmann::json before = stats_now(port());
  ASSERT_TRUE(before.at("symbolizer").at("addresses_resolved").is_number());
  ASSERT_EQ(post(port(), "/debug/memory/baseline").status, 200);
  ASSERT_EQ(get(port(), "/debug/memory/baseline?format=json").status, 200);
  const std::uint64_t taken = addresses_asked(stats_now(port()));
  EXPECT_EQ(taken, addresses_asked(before));

  KnownAllocations known(10, 100000);
  const Reply diff = get(port(), "/debug/memory/diff?limit=100");
  ASSERT_EQ(diff.status, 200) << diff.body;
  const std::string line = std::string(kKnownFile) + ":" + std::to_string(kKnownLine) +
                           ": size=977 KiB (+977 KiB), count=10 (+10), average=97.7 KiB";
  EXPECT_NE(diff.body.find(line), std::string::npos) << diff.body;
  EXPECT_GT(addresses_asked(stats_now(port())), taken);
}

// A window asked for at `path`, checked to have asked the symbolizer nothing while it was
// open; its reply, and the addresses asked before it opened.
struct OpenedWindow {
  Reply reply;
  std::uint64_t asked_before = 0;
};
OpenedWindow window_that_started_unsymbolized(std::uint16_t port, const std::string& path) {
  OpenedWindow window;
  window.asked_before = addresses_asked(stats_now(port));
  std::thread asker([&] { window.reply = get(port, path); });
  // /stats counts the window once its first snapshot is taken (the worker is one thread).
  std::uint64_t at_start = 0;
  EXPECT_TRUE(wait_until(kPatience, [&] {
    const nlohmann::json stats = stats_now(port);
    at_start = addresses_asked(stats);
    return stats.at("windows").get<unsigned>() == 1;
  }));
  EXPECT_EQ(at_start, window.asked_before);
  asker.join();
  return window;
}

TEST_F(BaselineTest, AWindowsStartSymbolizesNothing) {
  const OpenedWindow window =
      window_that_started_unsymbolized(port(), "/debug/memory/diff?seconds=1&limit=100");
  ASSERT_EQ(window.reply.status, 200) << window.reply.body;
  EXPECT_NE(window.reply.body.find("against the heap 1 s ago"), std::string::npos) << window.reply.body;
  EXPECT_GT(addresses_asked(stats_now(port())), window.asked_before);
}

TEST_F(BaselineTest, APprofWindowsStartSymbolizesNothing) {
  const OpenedWindow window = window_that_started_unsymbolized(port(), "/debug/memory/pprof/heap?seconds=1");
  ASSERT_EQ(window.reply.status, 200) << window.reply.body;
  ASSERT_GE(window.reply.body.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(window.reply.body[0]), 0x1f);  // gzip's magic
  EXPECT_EQ(static_cast<unsigned char>(window.reply.body[1]), 0x8b);
  EXPECT_GT(addresses_asked(stats_now(port())), window.asked_before);
}

TEST_F(BaselineTest, ABaselineWhoseCodeWasUnloadedIs409) {
  void* plugin = dlopen(LIVEHEAP_STACK_SNAPSHOT_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(plugin, nullptr) << dlerror();
  const auto allocate = reinterpret_cast<void* (*)(std::size_t)>(dlsym(plugin, "plugin_allocate"));
  ASSERT_NE(allocate, nullptr);
  void* block = allocate(4321);
  ASSERT_EQ(post(port(), "/debug/memory/baseline").status, 200);
  std::free(block);
  ASSERT_EQ(dlclose(plugin), 0);

  const Reply refused = get(port(), "/debug/memory/diff");
  EXPECT_EQ(refused.status, 409);
  EXPECT_EQ(refused.body, std::string("the baseline cannot be shown: ") + LIVEHEAP_STACK_SNAPSHOT_PLUGIN +
                              " was unloaded or replaced (dlclose) since the snapshot was taken: its "
                              "stacks' return addresses may hold other code now; POST "
                              "/debug/memory/baseline again\n");
  EXPECT_EQ(get(port(), "/debug/memory/baseline").status, 200);  // when, and its totals: no names

  ASSERT_EQ(post(port(), "/debug/memory/baseline").status, 200);
  EXPECT_EQ(get(port(), "/debug/memory/diff").status, 200);
}

}  // namespace
}  // namespace http_test
