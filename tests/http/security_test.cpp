// Attacks found by a security pass, each replayed against a real admin server: a cross-site form POST
// (CSRF), a rebound DNS name (Host), and what must still work (scripts, the dashboard).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <thread>
#include <vector>

#include "auth.hpp"
#include "peer_owner.hpp"
#include "request_policy.hpp"
#include "server_fixture.hpp"

namespace http_test {
namespace {

class BrowserTest : public ServerTest {};

// What a plain HTML form on another site sends: no preflight, the browser adds Origin.
Reply form_post(std::uint16_t port, const std::string& route, const std::string& extra) {
  return post(port, "/debug/memory" + route, "Content-Type: application/x-www-form-urlencoded\r\n" + extra);
}

TEST_F(BrowserTest, ACrossSiteFormCannotChangeState) {
  for (const char* route :
       {"/stop", "/clear", "/trim", "/reset-peak", "/baseline", "/start?mode=exact&frames=128"}) {
    const Reply reply =
        form_post(port(), route, "Origin: http://attacker.example\r\nSec-Fetch-Site: cross-site\r\n");
    EXPECT_EQ(reply.status, 403) << route;
  }
  EXPECT_TRUE(is_tracing());  // /stop was refused
  // Each signal alone is enough: an old browser sends only Origin, a new one both.
  const Reply origin_only = form_post(port(), "/stop", "Origin: http://attacker.example\r\n");
  EXPECT_EQ(origin_only.status, 403);
  EXPECT_EQ(origin_only.body,
            "Origin 'http://attacker.example' is not this server ('127.0.0.1'): a page elsewhere "
            "may not change liveheap's state; send it from the dashboard or a script\n");
  for (const char* site : {"cross-site", "same-site"}) {
    const Reply fetch_only = form_post(port(), "/stop", std::string("Sec-Fetch-Site: ") + site + "\r\n");
    EXPECT_EQ(fetch_only.status, 403) << site;
    EXPECT_EQ(fetch_only.body, "a " + std::string(site) +
                                   " request may not change liveheap's state (Sec-Fetch-Site); "
                                   "send it from the dashboard or a script\n");
  }
  // A sandboxed frame or a file: page says "null"; another port is another origin.
  EXPECT_EQ(form_post(port(), "/stop", "Origin: null\r\n").status, 403);
  EXPECT_EQ(post(port(), "/debug/memory/stop", "Host: 127.0.0.1:1\r\nOrigin: http://127.0.0.1:2\r\n").status,
            403);
  EXPECT_TRUE(is_tracing());
}

TEST_F(BrowserTest, TheDashboardAndScriptsStillWork) {
  const std::string self = "127.0.0.1:" + std::to_string(port());
  // The dashboard: same origin, as Chromium sends it.
  const Reply dashboard =
      post(port(), "/debug/memory/reset-peak?format=json",
           "Host: " + self + "\r\nOrigin: http://" + self + "\r\nSec-Fetch-Site: same-origin\r\n");
  EXPECT_EQ(dashboard.status, 200) << dashboard.body;
  // Default ports are left out of Origin by browsers and may be spelt in Host.
  EXPECT_EQ(
      post(port(), "/debug/memory/reset-peak", "Host: localhost:80\r\nOrigin: http://localhost\r\n").status,
      200);
  // curl, scripts: no Origin, no Sec-Fetch-Site.
  EXPECT_EQ(post(port(), "/debug/memory/clear").status, 200);
  // Reads are not state changes: a GET's Origin does not matter (the same-origin policy
  // keeps a foreign page from reading the answer).
  EXPECT_EQ(get(port(), "/debug/memory/stats", "Origin: http://attacker.example\r\n").status, 200);
}

TEST_F(BrowserTest, AReboundNameIsRefusedWithoutAToken) {
  const std::string at_port = ":" + std::to_string(port());
  for (const std::string& host :
       std::vector<std::string>{"attacker.example" + at_port, "attacker.example", "10.1.2.3" + at_port,
                                "localhost.attacker.example", "127.0.0.1.nip.io", ""}) {
    const Reply reply = get(port(), "/debug/memory/stats", "Host: " + host + "\r\n");
    EXPECT_EQ(reply.status, 403) << host;
    EXPECT_EQ(reply.body, "Host '" + host +
                              "' is not served without a token: only localhost, 127.0.0.0/8, "
                              "[::1] and the bound address are; set LIVEHEAP_TOKEN, or add the "
                              "name to LIVEHEAP_ALLOWED_HOSTS (Config::allowed_hosts)\n")
        << host;
    // The dashboard and its files, too: the page would run under the attacker's name.
    EXPECT_EQ(get(port(), "/debug/memory/", "Host: " + host + "\r\n").status, 403) << host;
  }
  for (const std::string& host :
       std::vector<std::string>{"localhost" + at_port, "LOCALHOST", "127.0.0.1" + at_port, "127.5.6.7",
                                "[::1]" + at_port, "[::1]"})
    EXPECT_EQ(get(port(), "/debug/memory/stats", "Host: " + host + "\r\n").status, 200) << host;
}

class AllowedHostsTest : public ServerTest {
  Config config() const override { return {.allowed_hosts = {"heap.internal", "box:6060"}}; }
};

TEST_F(AllowedHostsTest, ListedNamesAreServed) {
  EXPECT_EQ(get(port(), "/debug/memory/stats", "Host: heap.internal:6060\r\n").status, 200);
  EXPECT_EQ(get(port(), "/debug/memory/stats", "Host: HEAP.internal\r\n").status, 200);
  EXPECT_EQ(get(port(), "/debug/memory/stats", "Host: box:6060\r\n").status, 200);
  EXPECT_EQ(get(port(), "/debug/memory/stats", "Host: box:6061\r\n").status, 403);
  EXPECT_EQ(get(port(), "/debug/memory/stats", "Host: other.internal\r\n").status, 403);
}

class TokenHostTest : public ServerTest {
  Config config() const override { return {.token = "t0ken"}; }
};

TEST_F(TokenHostTest, WithATokenAnyHostIsServed) {
  EXPECT_EQ(
      get(port(), "/debug/memory/stats", "Host: heap.example.com\r\nAuthorization: Bearer t0ken\r\n").status,
      200);
  EXPECT_EQ(get(port(), "/debug/memory/stats", "Host: heap.example.com\r\n").status, 401);
  // The token does not make a cross-site POST acceptable: a browser may hold it.
  EXPECT_EQ(
      post(port(), "/debug/memory/stop", "Authorization: Bearer t0ken\r\nOrigin: http://attacker.example\r\n")
          .status,
      403);
  EXPECT_TRUE(is_tracing());
}

TEST_F(BrowserTest, NoPageMayFrameTheDashboardOrInjectIntoIt) {
  for (const char* target : {"/debug/memory/", "/debug/memory/static/app.js", "/debug/memory/stats",
                             "/debug/memory/top?format=json", "/debug/memory/nope"}) {
    const Reply reply = get(port(), target);
    EXPECT_EQ(reply.header("x-frame-options"), "DENY") << target;
    EXPECT_EQ(reply.header("x-content-type-options"), "nosniff") << target;
    EXPECT_EQ(reply.header("content-security-policy"),
              "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'")
        << target;
  }
  // The policy allows no inline script or style: the page must not rely on any.
  const std::string page = get(port(), "/debug/memory/").body;
  ASSERT_NE(page.find("<script type=\"module\" src=\"static/app.js\"></script>"), std::string::npos);
  EXPECT_EQ(page.find("<script>"), std::string::npos);
  EXPECT_EQ(page.find("<style"), std::string::npos);
  EXPECT_EQ(page.find(" style="), std::string::npos);
  EXPECT_EQ(page.find(" onclick="), std::string::npos);
}

class BoundedWorkTest : public ServerTest {};

TEST_F(BoundedWorkTest, SampleIntervalHasAFloorOverHttp) {
  for (const char* interval : {"1", "16", "4095"}) {
    const Reply reply =
        post(port(), std::string("/debug/memory/start?mode=sampled&sample_interval=") + interval);
    EXPECT_EQ(reply.status, 400) << interval;
    EXPECT_EQ(reply.body, std::string("sample_interval='") + interval +
                              "' is not a whole number from 4096 to 1099511627776\n");
  }
  // 4096 passes the parser; tracing is already on, so it is the usual 409.
  EXPECT_EQ(post(port(), "/debug/memory/start?mode=sampled&sample_interval=4096").status, 409);
}

TEST_F(BoundedWorkTest, JsonTracebacksOnlyWhereAsked) {
  KnownAllocations known(3, 1000);
  const auto has_stacks = [&](const std::string& query) {
    const auto report = get(port(), "/debug/memory/top?format=json&limit=10000" + query).json();
    std::size_t with = 0;
    for (const auto& stat : report["stats"]) with += stat.contains("traceback");
    EXPECT_GT(report["stats"].size(), 0u);
    return with == report["stats"].size() ? "all" : with == 0 ? "none" : "some";
  };
  EXPECT_STREQ(has_stacks(""), "none");
  EXPECT_STREQ(has_stacks("&key=function"), "none");
  EXPECT_STREQ(has_stacks("&traceback=0"), "none");
  EXPECT_STREQ(has_stacks("&traceback=1"), "all");
  EXPECT_STREQ(has_stacks("&key=traceback"), "all");
  EXPECT_EQ(get(port(), "/debug/memory/top?traceback=yes").status, 400);
}

TEST(BoundedWork, HandleRefusesAWindowInsteadOfSleepingOnTheHostsThread) {
  if (!is_tracing()) start();
  Handler handler;
  Request req{boost::beast::http::verb::get, "/debug/memory/top?seconds=5", 11};
  req.set(boost::beast::http::field::host, "localhost");
  const auto started = std::chrono::steady_clock::now();
  const auto res = handler.handle(req);
  // Less than the 5 s window it was asked for (the machine may be loaded: not a timing test).
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(4500));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result_int(), 400);
  EXPECT_EQ(res->body(),
            "seconds= windows are not served by Handler::handle (it would sleep on "
            "this thread); mount liveheap with handle_async, or use the admin server\n");
}

// A report is built in the host's memory; 10,000 stacks with tracebacks would be
// ~0.5 GB. Past Config::max_report_bytes it stops, says so, and stays valid JSON.
// The cap holds a few of this test's rows: a row of a deep stack is 4-8 KB, more where the
// checkout's path is longer (each frame names its file).
constexpr std::size_t kSmallCap = 16384;  // said "16.0 KiB"
class SmallReportTest : public ServerTest {
  Config config() const override {
    Config config;
    config.max_report_bytes = kSmallCap;
    return config;
  }
};

TEST_F(SmallReportTest, ABigReportIsCutAtTheCapAndSaysSo) {
  KnownAllocations known(3, 1000);
  std::vector<void*> deep;
  for (int depth = 0; depth < 64; ++depth) deep.push_back(keep_at_depth(depth));
  AdminServer whole({}, "127.0.0.1", 0);  // the default cap: the same report, uncut
  IgnoreScope quiet;                      // this thread's requests and parsing leave the heap as it is
  const std::string target = "/debug/memory/top?format=json&key=traceback&limit=10000";
  const auto cut = get(port(), target);
  ASSERT_EQ(cut.status, 200);
  EXPECT_LE(cut.body.size(), kSmallCap + 1024u) << "rows within the cap, plus the report's header";
  const auto report = cut.json();
  const auto full = get(whole.port(), target).json();
  EXPECT_EQ(report["truncated"], true);
  EXPECT_EQ(full["truncated"], false);
  ASSERT_GT(report["stats"].size(), 0u);
  ASSERT_LT(report["stats"].size(), full["stats"].size());
  for (std::size_t i = 0; i < report["stats"].size(); ++i)  // the first rows, exactly
    EXPECT_EQ(report["stats"][i]["key"], full["stats"][i]["key"]) << i;
  EXPECT_EQ(report["keys"], full["keys"]);  // the totals still cover everything
  EXPECT_EQ(report["total"], full["total"]);
  EXPECT_EQ(get(port(), "/debug/memory/top?format=json&limit=1").json()["truncated"], false);

  const std::string text = get(port(), "/debug/memory/tracebacks?limit=10000").body;
  EXPECT_LE(text.size(), kSmallCap + 256u);
  const auto note = text.rfind("(truncated at 16.0 KiB: ");
  ASSERT_NE(note, std::string::npos) << text;
  EXPECT_TRUE(text.ends_with(" rows shown; ask for a smaller limit= or narrow with include=)\n")) << text;
  for (void* block : deep) std::free(block);
}

// Folded stacks are built in the host's memory as every report is: cut at the cap, with a
// last comment line (flamegraph.pl skips it: a stack line ends with its count).
TEST_F(SmallReportTest, FoldedStacksAreCutAtTheCapAndSaySo) {
  std::vector<void*> deep;
  for (int depth = 0; depth < 64; ++depth) deep.push_back(keep_at_depth(depth));
  {
    IgnoreScope quiet;
    ASSERT_EQ(post(port(), "/debug/memory/baseline").status, 200);
  }
  std::vector<void*> more;  // the stacks that grew since, for /diff
  for (int depth = 0; depth < 64; ++depth) more.push_back(keep_at_depth(depth));
  IgnoreScope quiet;
  for (const char* target : {"/debug/memory/top?format=folded", "/debug/memory/tracebacks?format=folded",
                             "/debug/memory/diff?format=folded", "/debug/memory/diff?format=folded2"}) {
    const Reply reply = get(port(), target);
    ASSERT_EQ(reply.status, 200) << target << ": " << reply.body;
    EXPECT_LE(reply.body.size(), kSmallCap) << target;
    const auto last_line = reply.body.rfind('\n', reply.body.size() - 2);
    ASSERT_NE(last_line, std::string::npos) << target << ": " << reply.body;
    const std::string note = reply.body.substr(last_line + 1);
    EXPECT_TRUE(note.starts_with("# truncated at 16.0 KiB: ")) << target << ": " << note;
    EXPECT_TRUE(note.ends_with(" stacks shown; narrow with include= or exclude=\n"))
        << target << ": " << note;
    // Every other line is a whole stack with its count(s).
    std::size_t at = 0;
    for (std::size_t end; (end = reply.body.find('\n', at)) < last_line + 1; at = end + 1)
      EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(reply.body[end - 1])))
          << target << ": " << reply.body.substr(at, end - at);
  }
  for (void* block : deep) std::free(block);
  for (void* block : more) std::free(block);
}

// What a page on another site can make a browser send without CORS: an <img>, a <script>,
// fetch(url, {mode: "no-cors"}). It cannot read the answer, but each would build a report
// in the host's memory: refused, except the dashboard's page and files.
TEST_F(BrowserTest, ACrossSiteReadIsRefused) {
  const std::string no_cors = "Sec-Fetch-Mode: no-cors\r\nSec-Fetch-Dest: image\r\n";
  for (const char* site : {"cross-site", "same-site"}) {
    for (const char* target :
         {"/debug/memory/stats", "/debug/memory/top?format=folded", "/debug/memory/tracebacks",
          "/debug/memory/diff", "/debug/memory/history", "/debug/memory/pprof/heap", "/debug/pprof/allocs",
          "/debug/memory/metrics", "/metrics", "/debug/memory/processes", "/debug/memory/top?seconds=5"}) {
      const Reply reply = get(port(), target, no_cors + "Sec-Fetch-Site: " + site + "\r\n");
      EXPECT_EQ(reply.status, 403) << site << " " << target;
      EXPECT_EQ(reply.body, "a " + std::string(site) +
                                " request may not make liveheap build an answer (Sec-Fetch-Site): "
                                "a page elsewhere could not read it; open the dashboard, or use "
                                "curl or a script\n")
          << target;
    }
    // A frame is not a page the user sees (and frame-ancestors forbids showing it).
    EXPECT_EQ(get(port(), "/debug/memory/top",
                  std::string("Sec-Fetch-Site: ") + site +
                      "\r\nSec-Fetch-Mode: navigate\r\nSec-Fetch-Dest: iframe\r\n")
                  .status,
              403);
    // The dashboard's page and files hold no data: a link from a wiki still opens it.
    for (const char* target : {"/debug/memory/", "/debug/memory/static/app.js", "/debug/memory/app.js"})
      EXPECT_EQ(get(port(), target, no_cors + "Sec-Fetch-Site: " + site + "\r\n").status, 200) << target;
    // A link the user follows to a report: a top-level navigation, shown to the user only.
    EXPECT_EQ(get(port(), "/debug/memory/top",
                  std::string("Sec-Fetch-Site: ") + site +
                      "\r\nSec-Fetch-Mode: navigate\r\nSec-Fetch-Dest: document\r\n")
                  .status,
              200);
  }
  // The dashboard's own requests, a typed URL, curl.
  for (const char* served : {"Sec-Fetch-Site: same-origin\r\nSec-Fetch-Mode: cors\r\n",
                             "Sec-Fetch-Site: none\r\nSec-Fetch-Mode: navigate\r\n", ""})
    EXPECT_EQ(get(port(), "/debug/memory/top?limit=1", served).status, 200) << served;
}

TEST(RequestPolicy, TokensThatCouldNeverMatchAreRefused) {
  for (const char* bad : {" abc", "abc ", " abc ", "\tabc", "a\nb", "abc\r",
                          "a\x01"
                          "b",
                          "a\x7f"})
    EXPECT_THROW(Handler(Config{.token = bad}), std::invalid_argument) << bad;
  EXPECT_NO_THROW(Handler(Config{.token = "t0ken-with.all~kinds+of/chars="}));
  EXPECT_NO_THROW(Handler(Config{.token = "inner space is kept"}));
  // The reason never repeats the token.
  EXPECT_EQ(token_problem("a\nsecret"),
            "holds a control character (0x0A at byte 2), which no Authorization header can "
            "carry: it could never match");
}

TEST(RequestPolicy, AllowedHostsMustBeHostNames) {
  for (const char* good : {"heap.internal", "box:6060", "[fd00::1]", "[::1]:6060", "a-b_c.example"})
    EXPECT_EQ(allowed_host_problem(good), std::nullopt) << good;
  for (const char* bad : {"http://heap.internal", "heap.internal/", "a b", "box:", "box:70000", "box:x",
                          "[fd00::1", "[nope]", "user@box", "box:6060:1"})
    EXPECT_NE(allowed_host_problem(bad), std::nullopt) << bad;
}

// The kernel's socket tables as identd reads them: the client's row is the one whose local
// address is our peer's; a socket in TIME_WAIT or without an inode names no owner.
TEST(PeerOwner, TheClientsRowNamesItsOwner) {
  using boost::asio::ip::make_address;
  using Endpoint = boost::asio::ip::tcp::endpoint;
  const Endpoint client(make_address("127.0.0.1"), 0xD431);
  const Endpoint server(make_address("127.0.0.1"), 0x1F90);
  const std::string header =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n";
  const auto row = [](const char* local, const char* remote, const char* state, const char* uid,
                      const char* inode) {
    return std::string("   1: ") + local + " " + remote + " " + state +
           " 00000000:00000000 00:00000000 00000000 " + uid + "        0 " + inode +
           " 1 0000000000000000 20 4 30 10 -1\n";
  };
  const std::string table = header + row("0100007F:1F90", "00000000:0000", "0A", "1000", "111") +
                            row("0100007F:1F90", "0100007F:D431", "01", "1000", "222") +
                            row("0100007F:D431", "0100007F:1F90", "01", "65534", "333");
  EXPECT_EQ(find_socket_owner(table, client, server), 65534u);
  EXPECT_EQ(find_socket_owner(table, server, client), 1000u);  // the server's own row
  EXPECT_EQ(find_socket_owner(header + row("0100007F:D431", "0100007F:1F90", "06", "0", "0"), client, server),
            std::nullopt);
  EXPECT_EQ(find_socket_owner(header + row("0100007F:D431", "0100007F:1F90", "05", "0", "0"), client, server),
            std::nullopt);
  // An IPv4 client of an IPv6 socket is ::ffff:127.0.0.1 in /proc/net/tcp6.
  const std::string v6 = header + row("0000000000000000FFFF00000100007F:D431",
                                      "0000000000000000FFFF00000100007F:1F90", "01", "42", "444");
  EXPECT_EQ(find_socket_owner(v6, client, server), 42u);
  const Endpoint mapped(make_address("::ffff:127.0.0.1"), 0xD431);
  const Endpoint mapped_server(make_address("::ffff:127.0.0.1"), 0x1F90);
  EXPECT_EQ(find_socket_owner(v6, mapped, mapped_server), 42u);
  EXPECT_EQ(find_socket_owner(table, mapped, mapped_server), 65534u);
  const std::string v6_loopback = header + row("00000000000000000000000001000000:D431",
                                               "00000000000000000000000001000000:1F90", "01", "7", "555");
  EXPECT_EQ(find_socket_owner(v6_loopback, Endpoint(make_address("::1"), 0xD431),
                              Endpoint(make_address("::1"), 0x1F90)),
            7u);
}

// GET /stats from a process that runs as `uid`, on a fresh connection: the raw answer.
// After fork only async-signal-safe calls: the parent's threads may hold any lock.
std::string get_stats_as(uid_t uid, std::uint16_t port, const std::string& headers = "") {
  const std::string request =
      "GET /debug/memory/stats HTTP/1.1\r\nHost: 127.0.0.1\r\n"
      "Connection: close\r\n" +
      headers + "\r\n";
  int out[2];
  if (::pipe(out) != 0) return "pipe failed";
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(out[0]);
    if (::setgid(uid) != 0 || ::setuid(uid) != 0) {
      (void)!::write(out[1], "setuid failed", 13);
      ::_exit(1);
    }
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) ::_exit(2);
    for (std::size_t sent = 0; sent < request.size();) {
      const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) ::_exit(3);
      sent += static_cast<std::size_t>(n);
    }
    char buffer[4096];
    for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;)
      (void)!::write(out[1], buffer, static_cast<std::size_t>(n));
    ::_exit(0);
  }
  ::close(out[1]);
  std::string raw;
  char buffer[4096];
  for (ssize_t n; (n = ::read(out[0], buffer, sizeof buffer)) > 0;)
    raw.append(buffer, static_cast<std::size_t>(n));
  ::close(out[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  return raw;
}

constexpr uid_t kNobody = 65534;

class PeerOwnerTest : public ServerTest {};

TEST_F(PeerOwnerTest, AnotherUsersClientIsRefusedWithoutAToken) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, to run a client as nobody";
  const std::string other = get_stats_as(kNobody, port());
  ASSERT_EQ(status_of(other), 403) << other;
  EXPECT_TRUE(
      other.ends_with("\r\n\r\nwithout a token this server answers only its own user (uid 0) "
                      "and root; this connection's socket belongs to uid 65534: set "
                      "LIVEHEAP_TOKEN (Config::token) to let other users in\n"))
      << other;
  EXPECT_EQ(status_of(get_stats_as(0, port())), 200);  // this process's own user (and root)
  EXPECT_EQ(get(port(), "/debug/memory/stats").status, 200);
}

class PeerOwnerTokenTest : public ServerTest {
  Config config() const override { return {.token = "t0ken"}; }
};

TEST_F(PeerOwnerTokenTest, WithATokenAnyUserWhoHoldsItIsServed) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, to run a client as nobody";
  EXPECT_EQ(status_of(get_stats_as(kNobody, port(), "Authorization: Bearer t0ken\r\n")), 200);
  EXPECT_EQ(status_of(get_stats_as(kNobody, port())), 401);
}

// 70 idle connections once made a new client get "Connection reset by peer".
TEST_F(BoundedWorkTest, IdleConnectionsCannotLockTheOperatorOut) {
  constexpr int kCap = 64;  // admin_server.cpp's kMaxSessions
  std::vector<std::unique_ptr<Connection>> idle;
  for (int i = 0; i < kCap + 10; ++i) {
    idle.push_back(std::make_unique<Connection>(port()));
    if (i % 2 == 0)  // half of them keep-alive connections that were served once
      idle.back()->write("GET /debug/memory/stats HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  }
  // The server has dealt with them all: each one that asked was answered (or, evicted before
  // its turn, closed). The first is read below, with its close.
  for (int i = 2; i < kCap + 10; i += 2) {
    const std::string answer = idle[static_cast<std::size_t>(i)]->read_response(kPatienceMs);
    EXPECT_TRUE(answer.empty() || status_of(answer) == 200) << i << ": " << answer;
  }
  for (int i = 0; i < 3; ++i) EXPECT_EQ(get(port(), "/debug/memory/stats").status, 200) << i;
  // The oldest idle ones were closed to make room: the first connection sees its end.
  const std::string first = idle.front()->read_all(2000);
  EXPECT_EQ(status_of(first), 200);  // its one answer, then the close
}

TEST(ListenPolicy, AnOpenPortNeedsATokenOrAnExplicitOptIn) {
  try {
    AdminServer open(Config{}, "0.0.0.0", 0);
    FAIL() << "served every interface without a token";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "refusing to serve 0.0.0.0:0 without a token: anyone who can reach it could read "
              "the heap and stop tracing; set LIVEHEAP_TOKEN (Config::token), listen on "
              "127.0.0.1, or opt in with LIVEHEAP_ALLOW_OPEN=1 (Config::allow_open_without_token)");
  }
  EXPECT_NO_THROW(AdminServer(Config{.token = "t"}, "0.0.0.0", 0));
  EXPECT_NO_THROW(AdminServer(Config{.allow_open_without_token = true}, "0.0.0.0", 0));
  EXPECT_NO_THROW(AdminServer(Config{}, "localhost", 0));
}

TEST(ListenPolicy, AddressesIncludingIpv6) {
  const auto parsed = [](std::string_view text) {
    const ListenAddress a = parse_listen_address(text);
    return a.host + " " + std::to_string(a.port);
  };
  EXPECT_EQ(parsed("6060"), "127.0.0.1 6060");
  EXPECT_EQ(parsed(":6060"), "127.0.0.1 6060");
  EXPECT_EQ(parsed("0.0.0.0:80"), "0.0.0.0 80");
  EXPECT_EQ(parsed("[::1]:6060"), "::1 6060");
  EXPECT_EQ(parsed("[fe80::1%lo]:0"), "fe80::1%lo 0");
  for (const char* bad :
       {"", "host:port", "::1:6060", "[::1]", "[::1]6060", "[]:1", "[::1:6060", "1:70000", "-1"})
    EXPECT_THROW(parse_listen_address(bad), std::invalid_argument) << bad;
}

TEST(RequestPolicy, AllowedHostsList) {
  EXPECT_EQ(parse_allowed_hosts(" a.example, b.example:8080,,[fd00::1] ,"),
            (std::vector<std::string>{"a.example", "b.example:8080", "[fd00::1]"}));
  EXPECT_TRUE(parse_allowed_hosts("").empty());
}

TEST(RequestPolicy, LoopbackHosts) {
  for (const char* yes : {"localhost", "localhost:8080", "127.0.0.1", "127.255.0.9:1", "[::1]", "[::1]:6060"})
    EXPECT_TRUE(is_loopback_host(yes)) << yes;
  for (const char* no : {"", "localhost.evil", "128.0.0.1", "[::2]", "::1", "0x7f000001", "127.1",
                         "127.0.0.1.evil", "[::ffff:10.0.0.1]", "10.0.0.1:80", "[::1"})
    EXPECT_FALSE(is_loopback_host(no)) << no;
}

}  // namespace
}  // namespace http_test
