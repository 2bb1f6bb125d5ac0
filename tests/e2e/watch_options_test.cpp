// liveheap-watch's command line, parsed without running it (src/cli/options.hpp).
#include <gtest/gtest.h>

#include "options.hpp"

namespace liveheap::cli {
namespace {

TEST(WatchOptionsTest, SizesTakeBinaryUnits) {
  EXPECT_EQ(parse_size("0"), 0);
  EXPECT_EQ(parse_size("1048576"), 1048576);
  EXPECT_EQ(parse_size("512KiB"), 512 * 1024);
  EXPECT_EQ(parse_size("1.5 MiB"), 1536 * 1024);
  EXPECT_EQ(parse_size("2g"), 2LL << 30);
  EXPECT_EQ(parse_size("10B"), 10);
  for (const char* bad : {"", "ten", "-1", "1TiB", "1 KB", "1e30", "MiB", "1.5.2"})
    EXPECT_THROW(parse_size(bad), UsageError) << bad;
}

TEST(WatchOptionsTest, UrlsAreHttpWithOptionalPortAndPrefix) {
  const Endpoint e = parse_url("http://10.0.0.7:9000/admin/memory/");
  EXPECT_EQ(e.host, "10.0.0.7");
  EXPECT_EQ(e.port, 9000);
  EXPECT_EQ(e.prefix, "/admin/memory");
  EXPECT_EQ(e.url(), "http://10.0.0.7:9000/admin/memory");
  EXPECT_EQ(parse_url("http://localhost").port, 80);
  EXPECT_EQ(parse_url("http://localhost").prefix, "");
  EXPECT_EQ(parse_url("http://[::1]:8080/debug/memory").host, "::1");
  for (const char* bad :
       {"https://x/", "x:80", "http://:80/", "http://h:0/", "http://h:65536/", "http://h/p?q=1"})
    EXPECT_THROW(parse_url(bad), UsageError) << bad;
}

TEST(WatchOptionsTest, FlagsAndTheirDefaults) {
  const char* argv[] = {"liveheap-watch", "--port",      "9090",       "--prefix",  "/mem/",
                        "--rounds",       "3",           "--interval", "0.25",      "--key",
                        "traceback",      "--fail-over", "1MiB",       "--include", "*server*",
                        "--json",         "--baseline"};
  const auto options = parse_command_line(std::size(argv), argv, "from-env");
  ASSERT_TRUE(options);
  EXPECT_EQ(options->endpoint.url(), "http://127.0.0.1:9090/mem");
  EXPECT_EQ(options->rounds, 3u);
  EXPECT_EQ(options->interval.count(), 250);
  EXPECT_EQ(options->key, "traceback");
  EXPECT_EQ(options->fail_over, 1 << 20);
  EXPECT_EQ(options->include, std::vector<std::string>{"*server*"});
  EXPECT_TRUE(options->json);
  EXPECT_TRUE(options->baseline);
  EXPECT_EQ(options->token, "from-env");
  EXPECT_EQ(options->limit, 10u);

  EXPECT_EQ(options->pid, "");
  EXPECT_FALSE(options->fail_on_growing);

  // --flag=value is the same as --flag value.
  const char* growing[] = {"liveheap-watch", "--fail-on-growing", "10MiB", "--limit=20", "--key=file"};
  const auto g = parse_command_line(std::size(growing), growing, nullptr);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->fail_on_growing, 10 << 20);
  EXPECT_EQ(g->limit, 20u);
  EXPECT_EQ(g->key, "file");
  const char* inline_size[] = {"liveheap-watch", "--fail-on-growing=1.5KiB"};
  EXPECT_EQ(parse_command_line(2, inline_size, nullptr)->fail_on_growing, 1536);
  for (const char* bad :
       {"--fail-on-growing=abc", "--fail-on-growing=", "--fail-on-growing=-1", "--json=yes", "--limit="}) {
    const char* args[] = {"liveheap-watch", bad};
    EXPECT_THROW(parse_command_line(2, args, nullptr), UsageError) << bad;
  }

  const char* pid[] = {"liveheap-watch", "--pid", "4242"};
  EXPECT_EQ(parse_command_line(3, pid, nullptr)->pid, "4242");
  const char* all[] = {"liveheap-watch", "--pid", "all"};
  EXPECT_EQ(parse_command_line(3, all, nullptr)->pid, "all");
  const char* port[] = {"liveheap-watch", "--pid", "port"};
  EXPECT_EQ(parse_command_line(3, port, nullptr)->pid, "port");
  for (const char* bad : {"0", "-1", "all1", "All", "1.5", "", "4194305", "Port"}) {
    const char* args[] = {"liveheap-watch", "--pid", bad};
    try {
      parse_command_line(3, args, nullptr);
      ADD_FAILURE() << bad;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--pid"), std::string::npos) << e.what();
    }
  }

  const char* help[] = {"liveheap-watch", "--help"};
  EXPECT_FALSE(parse_command_line(2, help, nullptr));
  const char* token[] = {"liveheap-watch", "--token", "flag"};
  EXPECT_EQ(parse_command_line(3, token, "env")->token, "flag");
}

}  // namespace
}  // namespace liveheap::cli
