// The Handler as a Beast server mounts it: prefix matching, declining, handle and
// handle_async; the admin server's prefix and bind errors.
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/http/message_generator.hpp>
#include <optional>
#include <thread>

#include "server_fixture.hpp"

namespace http_test {
namespace {

namespace bh = boost::beast::http;

Config with_prefix(std::string prefix) {
  Config config;
  config.prefix = std::move(prefix);
  return config;
}

Request make_request(bh::verb method, std::string_view target) {
  Request req{method, target, 11};
  req.set(bh::field::host, "localhost");
  return req;
}

TEST(Handler, ValidatesAndNormalizesThePrefix) {
  EXPECT_EQ(Handler(with_prefix("/admin/heap/")).config().prefix, "/admin/heap");
  EXPECT_EQ(Handler(with_prefix("")).config().prefix, "");
  EXPECT_EQ(Handler(with_prefix("/")).config().prefix, "");
  for (const char* bad : {"debug", "/a b", "/a?b", "/a%20", "/a#b"})
    EXPECT_THROW(Handler(with_prefix(bad)), std::invalid_argument) << bad;
}

TEST(Handler, AcceptsOnlyItsPrefix) {
  Handler handler;
  for (const char* yes : {"/debug/memory", "/debug/memory/", "/debug/memory/stats?format=json",
                          "/debug/memory?x", "/debug/memory/nope"})
    EXPECT_TRUE(handler.accepts(make_request(bh::verb::get, yes))) << yes;
  for (const char* no : {"/", "/debug", "/debug/memoryx", "/debug/memory%2Fstats", "*",
                         "http://x/debug/memory/stats", "/other/debug/memory"})
    EXPECT_FALSE(handler.accepts(make_request(bh::verb::get, no))) << no;
}

TEST(Handler, HandleAnswersOnTheCallingThreadAndDeclinesOthers) {
  if (!is_tracing()) start();
  Handler handler;
  EXPECT_FALSE(handler.handle(make_request(bh::verb::get, "/hello")));
  const auto res = handler.handle(make_request(bh::verb::get, "/debug/memory/stats?format=json"));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), bh::status::ok);
  EXPECT_EQ(nlohmann::json::parse(res->body())["tracing"], true);
  // Converts to the message_generator a Beast handle_request returns.
  const bh::message_generator generator =
      std::move(*handler.handle(make_request(bh::verb::post, "/debug/memory/baseline")));
  (void)generator;
  const auto diff = handler.handle(make_request(bh::verb::get, "/debug/memory/diff"));
  EXPECT_EQ(diff->result(), bh::status::ok) << diff->body();
}

TEST(Handler, HandleAsyncPostsTheAnswerToTheGivenExecutor) {
  if (!is_tracing()) start();
  Handler handler;
  boost::asio::io_context ioc;
  Request other = make_request(bh::verb::get, "/hello");
  EXPECT_FALSE(handler.handle_async(std::move(other), ioc.get_executor(), [](Response) {}));
  EXPECT_EQ(other.target(), "/hello");  // declined: left untouched

  std::vector<Response> answers;
  std::thread::id answered_on;
  for (const char* target :
       {"/debug/memory/stats", "/debug/memory/top?seconds=1", "/debug/memory/top?limit=0"}) {
    EXPECT_TRUE(
        handler.handle_async(make_request(bh::verb::get, target), ioc.get_executor(), [&](Response res) {
          answers.push_back(std::move(res));
          answered_on = std::this_thread::get_id();
        }));
  }
  const auto work = boost::asio::make_work_guard(ioc);  // the answers come from elsewhere
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (answers.size() < 3 && std::chrono::steady_clock::now() < deadline)
    ioc.run_for(std::chrono::milliseconds(50));
  ASSERT_EQ(answers.size(), 3u);
  EXPECT_EQ(answered_on, std::this_thread::get_id());
  // The window waits on a timer, not on the worker: the request after it is answered first.
  EXPECT_EQ(answers[0].result(), bh::status::ok);
  EXPECT_EQ(answers[1].result(), bh::status::bad_request);
  EXPECT_EQ(answers[2].result(), bh::status::ok);
  EXPECT_TRUE(answers[2].body().starts_with("Top ")) << answers[2].body();
}

TEST(Handler, PendingAnswersAreDroppedWhenTheHandlerGoes) {
  if (!is_tracing()) start();
  boost::asio::io_context ioc;
  bool called = false;
  {
    Handler handler;
    handler.handle_async(make_request(bh::verb::get, "/debug/memory/diff?seconds=30"), ioc.get_executor(),
                         [&](Response) { called = true; });
    // The worker runs one request at a time, in order: once this one is answered, the
    // window's first snapshot is taken and its timer waits.
    bool probed = false;
    auto work = boost::asio::make_work_guard(ioc);  // run_one_for waits for the answer
    handler.handle_async(make_request(bh::verb::get, "/debug/memory/top?limit=1"), ioc.get_executor(),
                         [&](Response) { probed = true; });
    const auto deadline = std::chrono::steady_clock::now() + kPatience;
    while (!probed && std::chrono::steady_clock::now() < deadline)
      ioc.run_one_for(std::chrono::milliseconds(100));
    work.reset();
    ASSERT_TRUE(probed) << "the request after the window was never answered";
  }  // must not wait 30 s
  ioc.run_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(called);
}

// A window whose client has gone stops when the caller says so (Asio's
// per-operation cancellation): `done` comes at once with 503, not after 30 s.
TEST(Handler, ACancelledWindowStopsWaitingAndAnswersOnce) {
  if (!is_tracing()) start();
  Handler handler;
  boost::asio::io_context ioc;
  boost::asio::cancellation_signal hangup;
  std::vector<Response> answers;
  const auto asked = std::chrono::steady_clock::now();
  ASSERT_TRUE(handler.handle_async(
      make_request(bh::verb::get, "/debug/memory/diff?seconds=30"), ioc.get_executor(),
      [&](Response res) { answers.push_back(std::move(res)); }, hangup.slot()));
  const auto work = boost::asio::make_work_guard(ioc);
  ioc.run_for(std::chrono::milliseconds(300));  // the window is waiting on its timer now
  EXPECT_TRUE(answers.empty());
  hangup.emit(boost::asio::cancellation_type::terminal);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (answers.empty() && std::chrono::steady_clock::now() < deadline)
    ioc.run_for(std::chrono::milliseconds(20));
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].result(), bh::status::service_unavailable);
  EXPECT_TRUE(answers[0].body().starts_with("cancelled")) << answers[0].body();
  EXPECT_LT(std::chrono::steady_clock::now() - asked, std::chrono::seconds(10));
  hangup.emit(boost::asio::cancellation_type::terminal);  // again, after the answer: nothing
  ioc.run_for(std::chrono::milliseconds(100));
  EXPECT_EQ(answers.size(), 1u);
}

// 20 concurrent big reports once made /stats wait 390 ms. The queue holds 8 reports;
// more get 503 with Retry-After at once, and /stats never waits behind them.
TEST(Handler, ABoundedReportQueueAndStatsBypassIt) {
  if (!is_tracing()) start();
  Handler handler;
  boost::asio::io_context ioc;
  constexpr int kReports = 40;  // posted in microseconds; each report takes far longer
  std::vector<Response> reports;
  std::vector<Response> stats;
  for (int i = 0; i < kReports; ++i) {
    handler.handle_async(
        make_request(bh::verb::get, "/debug/memory/top?key=traceback&limit=10000&format=json"),
        ioc.get_executor(), [&](Response res) { reports.push_back(std::move(res)); });
    if (i == kReports / 2)
      handler.handle_async(make_request(bh::verb::get, "/debug/memory/stats?format=json"), ioc.get_executor(),
                           [&](Response res) { stats.push_back(std::move(res)); });
  }
  const auto work = boost::asio::make_work_guard(ioc);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (reports.size() < kReports && std::chrono::steady_clock::now() < deadline)
    ioc.run_for(std::chrono::milliseconds(20));
  ASSERT_EQ(reports.size(), static_cast<std::size_t>(kReports));
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].result(), bh::status::ok);
  int ok = 0;
  int busy = 0;
  for (const Response& res : reports) {
    if (res.result() == bh::status::ok) ++ok;
    if (res.result() != bh::status::service_unavailable) continue;
    ++busy;
    EXPECT_EQ(res[bh::field::retry_after], "1");
    EXPECT_EQ(res.body(), "{\"error\":\"busy: 8 reports are queued or running; retry in a second\"}\n");
  }
  EXPECT_EQ(ok + busy, kReports);
  EXPECT_GE(ok, 8);    // the queue's worth was served
  EXPECT_GE(busy, 1);  // and the rest refused rather than queued
  // The queue drains: a report after them is served.
  std::optional<Response> after;
  handler.handle_async(make_request(bh::verb::get, "/debug/memory/top"), ioc.get_executor(),
                       [&](Response res) { after = std::move(res); });
  while (!after && std::chrono::steady_clock::now() < deadline) ioc.run_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(after);
  EXPECT_EQ(after->result(), bh::status::ok);
}

class PrefixTest : public ServerTest {
  Config config() const override { return with_prefix("/admin/heap"); }
};

TEST_F(PrefixTest, RoutesLiveUnderTheConfiguredPrefix) {
  EXPECT_EQ(get(port(), "/admin/heap/stats").status, 200);
  EXPECT_EQ(get(port(), "/debug/memory/stats").status, 404);
  const Reply diff = get(port(), "/admin/heap/diff");
  EXPECT_EQ(diff.status, 409);
  EXPECT_NE(diff.body.find("POST /admin/heap/baseline"), std::string::npos) << diff.body;
}

// LIVEHEAP_METRICS_CALLSITES is read once, as the handler is made on the host's thread: a
// scrape never calls getenv on liveheap's threads, where the host's setenv may be freeing the
// environment (git crashed so). A bad value is the scrape's 500, naming it.
TEST(AdminServer, TheMetricsCallsitesAreReadWhenTheHandlerIsMade) {
  ::setenv("LIVEHEAP_METRICS_CALLSITES", "abc", 1);
  AdminServer bad(Config{}, "127.0.0.1", 0);
  ::setenv("LIVEHEAP_METRICS_CALLSITES", "3", 1);
  AdminServer good(Config{}, "127.0.0.1", 0);
  ::setenv("LIVEHEAP_METRICS_CALLSITES", "abc", 1);  // after: changes neither
  const Reply refused = get(bad.port(), "/debug/memory/metrics");
  EXPECT_EQ(refused.status, 500);
  EXPECT_NE(refused.body.find("LIVEHEAP_METRICS_CALLSITES must be 0..1000, got 'abc'"), std::string::npos)
      << refused.body;
  EXPECT_EQ(get(good.port(), "/debug/memory/metrics").status, 200);
  ::unsetenv("LIVEHEAP_METRICS_CALLSITES");
}

TEST(AdminServer, BindErrorsNameTheAddress) {
  AdminServer first(Config{}, "127.0.0.1", 0);
  try {
    AdminServer second(Config{}, "127.0.0.1", first.port());
    FAIL() << "bound the same port twice";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(first.port())), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(AdminServer(Config{}, "not an address", 0), std::runtime_error);
}

}  // namespace
}  // namespace http_test
