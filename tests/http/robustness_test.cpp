// Bad input of every kind gets a 4xx (never a 5xx, never a crash), slow clients never block
// others, and looking at the heap does not make it grow.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>

#include "server_fixture.hpp"

namespace http_test {
namespace {

std::string request(const std::string& method, const std::string& target, const std::string& headers = "") {
  return method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + headers + "\r\n";
}

std::vector<std::string> malformed_requests() {
  std::vector<std::string> out;
  const std::string p = "/debug/memory";
  // Bad keys, limits, formats, flags, windows, start options.
  for (const char* query : {"key=",
                            "key=lines",
                            "key=LINE",
                            "key=line%00",
                            "key=tracebacks",
                            "key=%ff",
                            "key=line&key=line",
                            "limit=0",
                            "limit=-1",
                            "limit=10001",
                            "limit=abc",
                            "limit=1.5",
                            "limit=1e3",
                            "limit=",
                            "limit=%201",
                            "limit=1%20",
                            "limit=0x10",
                            "limit=+5",
                            "limit=18446744073709551616",
                            "limit=99999999999999999999999999",
                            "format=",
                            "format=XML",
                            "format=json&format=text",
                            "cumulative=2",
                            "cumulative=true",
                            "cumulative=",
                            "key=traceback&cumulative=1",
                            "seconds=0",
                            "seconds=61",
                            "seconds=-1",
                            "seconds=1s",
                            "seconds=99999999999",
                            "nosuch=1",
                            "=1",
                            "&&=&&",
                            "limit",
                            "Key=line",
                            "include=",
                            "exclude=",
                            "include=function:",
                            "include=%5B",
                            "include=%5Babc",
                            "include=%5B%21",
                            "exclude=function:%5Bx",
                            "include=%",
                            "include=%4",
                            "include=%zz",
                            "include=%G0",
                            "include=%C3%28",
                            "include=%ED%A0%80",
                            "include=%C0%AF",
                            "include=%F5%80%80%80",
                            "include=%00",
                            "include=%0A",
                            "include=%7F",
                            "include=a%0Db",
                            "key=routes",
                            "route=",
                            "route=%5B",
                            "route=%ff",
                            "route=a%00"})
    out.push_back(request("GET", p + "/top?" + query));
  for (const char* target : {"/stats?limit=1",
                             "/stats?seconds=1",
                             "/tracebacks?key=line",
                             "/tracebacks?cumulative=1",
                             "/baseline?key=line",
                             "/tracebacks?seconds=5",
                             "/%zz",
                             "/st%61ts%",
                             "/%00",
                             "/static/..",
                             "/static/%2e%2e",
                             "/static/%2e%2e%2fx",
                             "/static/",
                             "/static/a/b",
                             "/static/%5c",
                             "/static/.x",
                             "/static/nope.js",
                             "/nope",
                             "/stats/extra",
                             "/stats#fragment",
                             "/diff?seconds=61",
                             "/routes?route=GET*",
                             "/routes?key=route",
                             "/history?route=x",
                             "/routes?pid=x"})
    out.push_back(request("GET", p + target));
  for (const char* query : {"mode=off", "mode=", "mode=EXACT", "frames=0", "frames=129", "frames=x",
                            "sample_interval=0", "sample_interval=-5", "limit=5",
                            "max_tracker_memory=", "max_tracker_memory=1KiB", "max_tracker_memory=%ff"})
    out.push_back(request("POST", p + "/start?" + query));
  // Methods.
  for (const char* method : {"PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "TRACE", "FOO"})
    out.push_back(request(method, p + "/stats"));
  out.push_back(request("GET", p + "/trim"));
  out.push_back(request("GET", p + "/start"));
  out.push_back(request("POST", p + "/top"));
  out.push_back(request("CONNECT", "127.0.0.1:80"));
  // Oversized headers, targets and bodies.
  out.push_back(request("GET", p + "/stats", "X-Big: " + std::string(9000, 'a') + "\r\n"));
  std::string many;
  for (int i = 0; i < 600; ++i) many += "X-" + std::to_string(i) + ": 0123456789\r\n";  // 10 KiB
  out.push_back(request("GET", p + "/stats", many));
  out.push_back(request("GET", p + "/top?include=" + std::string(10000, 'x')));
  out.push_back("POST " + p + "/baseline HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5000\r\n\r\n" +
                std::string(5000, 'b'));
  out.push_back("POST " + p +
                "/baseline HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                "1000\r\n" +
                std::string(4096, 'c') + "\r\n0\r\n\r\n");
  out.push_back("POST " + p + "/clear HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: abc\r\n\r\n");
  out.push_back("POST " + p + "/clear HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -1\r\n\r\n");
  out.push_back("POST " + p +
                "/clear HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab");
  out.push_back("POST " + p + "/clear HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n\r\nshort");
  out.push_back("POST " + p +
                "/clear HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n");
  // Raw garbage and broken HTTP.
  for (const char* raw :
       {"GARBAGE\r\n\r\n", "\r\n\r\n", "GET\r\n\r\n", "GET /debug/memory/stats\r\n\r\n",
        "GET /debug/memory/stats HTTP/9.9\r\n\r\n", "GET /debug/memory/stats HTTP/1.1\r\nHost\r\n\r\n",
        "GET /debug/memory/stats HTTP/1.1\r\n: empty-name\r\n\r\n",
        "GET /debug/memory/stats HTTP/1.1\r\nBad Header: x\r\n\r\n",
        "GET http://x/debug/memory/stats HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "GET * HTTP/1.1\r\n\r\n",
        "GET /debug/memory/st ats HTTP/1.1\r\n\r\n", "G ET /debug/memory/stats HTTP/1.1\r\n\r\n",
        "GET /debug/memory/stats HTTP/1.1\nHost: 127.0.0.1\n\n",
        "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
        "GET /debug/memory/stats HTTP/1.1\r\nHost: 127.0.0.1\r\nX: \x01\r\n\r\n", "\xff\xfe\xfd",
        "GET /debug/memory/stats HTTP/1.1\r\nHost: x", "GET /debug/memory/sta"})
    out.push_back(raw);
  std::mt19937 random(42);
  for (int i = 0; i < 10; ++i) {
    std::string noise(1 + random() % 300, '\0');
    for (char& c : noise) c = static_cast<char>(random());
    out.push_back(noise);
  }
  using namespace std::string_literals;  // the NUL is part of the request
  out.push_back("GET /debug/memory/stats HTTP/1.1\r\nHost: 127.0.0.1\r\n\0\r\n\r\n"s);
  return out;
}

using RobustnessTest = ServerTest;

TEST_F(RobustnessTest, MalformedRequestsGet4xxAndTheServerLivesOn) {
  const std::vector<std::string> requests = malformed_requests();
  ASSERT_GE(requests.size(), 100u);
  int answered_4xx = 0;
  for (const std::string& bytes : requests) {
    const std::string raw = send_raw(port(), bytes);
    const int status = status_of(raw);
    // The connection may close without a word when there is no request at all (empty
    // input); anything that is answered is answered with a 4xx.
    if (status != 0) {
      EXPECT_GE(status, 400) << bytes.substr(0, 200) << "\n->\n" << raw;
      EXPECT_LT(status, 500) << bytes.substr(0, 200) << "\n->\n" << raw;
      ++answered_4xx;
      const auto body = raw.find("\r\n\r\n");
      ASSERT_NE(body, std::string::npos);
      const std::string reason = raw.substr(body + 4);
      EXPECT_EQ(std::count(reason.begin(), reason.end(), '\n'), reason.empty() ? 0 : 1)
          << "one line: " << reason;
    }
  }
  EXPECT_GE(answered_4xx, 100);
  EXPECT_EQ(get(port(), "/debug/memory/stats").status, 200);
  EXPECT_TRUE(is_tracing());
}

TEST_F(RobustnessTest, OversizedRequestsGetTheirOwnStatus) {
  const std::string p = "/debug/memory";
  EXPECT_EQ(
      status_of(send_raw(port(), request("GET", p + "/stats", "X: " + std::string(9000, 'a') + "\r\n"))),
      431);
  EXPECT_EQ(status_of(send_raw(port(), "POST " + p + "/clear HTTP/1.1\r\nContent-Length: 2000\r\n\r\n" +
                                           std::string(2000, 'x'))),
            413);
  EXPECT_EQ(status_of(send_raw(port(), "GARBAGE\r\n\r\n")), 400);
}

TEST_F(RobustnessTest, SlowClientsNeverBlockOthers) {
  std::vector<std::unique_ptr<Connection>> slow;
  for (int i = 0; i < 10; ++i) {
    slow.push_back(std::make_unique<Connection>(port()));
    slow.back()->write("GET /debug/memory/stats HTTP/1.1\r\nHo");  // and then nothing
  }
  const auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(get(port(), "/debug/memory/stats").status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
  // The slow ones finish their requests and are answered too.
  slow[0]->write("st: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(status_of(slow[0]->read_all(5000)), 200);
}

// A client that sends `request` and never reads: its receive buffer is small, so the
// server's answer stalls in the socket at once.
int ask_and_never_read(std::uint16_t port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int small = 4096;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0)
    (void)!::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  return fd;
}

class SlowReaderTest : public ServerTest {
  Config config() const override {
    Config config;
    config.max_report_bytes = 1 << 20;  // big enough to stall, quick to make 66 times
    return config;
  }
};

// 66 clients ask for a big report and never read it: each answer stalls in its socket for
// the write deadline, and every one of the 64 sessions was taken, renewably. The operator
// must still get /stats at once.
TEST_F(SlowReaderTest, ClientsThatNeverReadCannotLockTheOperatorOut) {
  std::vector<void*> deep;
  for (int depth = 0; depth < 200; ++depth) deep.push_back(keep_at_depth(depth));
  IgnoreScope quiet;
  const Reply sample = get(port(), "/debug/memory/tracebacks?limit=10000");
  ASSERT_GE(sample.body.size(), 64u * 1024) << "a report too small to stall";
  // Asked again and again on the connection (pipelined): the answers stall once its buffers
  // are full, whatever their size.
  std::string request;
  for (int i = 0; i < 16; ++i)
    request += "GET /debug/memory/tracebacks?limit=10000 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  // The worker makes one report at a time and queues 8 (more get a quick 503): ask in
  // batches, each made -- a request behind them on the worker answered -- before the next.
  const auto barrier = [&] {
    try {
      get(port(), "/debug/memory/baseline");
    } catch (const std::exception&) {  // no room for it: what the test is about
    }
  };
  std::vector<int> slow;
  for (int i = 0; i < 66; ++i) {
    slow.push_back(ask_and_never_read(port(), request));
    if (i % 6 == 5) barrier();
  }
  barrier();
  const auto started = std::chrono::steady_clock::now();
  Reply stats;
  EXPECT_NO_THROW(stats = get(port(), "/debug/memory/stats"));
  EXPECT_EQ(stats.status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2));
  EXPECT_NO_THROW(stats = get(port(), "/debug/memory/"));
  EXPECT_EQ(stats.status, 200);
  for (const int fd : slow) ::close(fd);
  for (void* block : deep) std::free(block);
}

TEST_F(RobustnessTest, AHalfSentRequestTimesOut) {
  Connection slow(port());
  slow.write("GET /debug/memory/stats HTTP/1.1\r\n");
  const auto started = std::chrono::steady_clock::now();
  const std::string raw = slow.read_all(20000);  // returns when the server closes
  const auto waited = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(raw, "");
  EXPECT_GE(waited, std::chrono::seconds(4));
  EXPECT_LT(waited, std::chrono::seconds(8));
}

TEST_F(RobustnessTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  Connection connection(port());
  connection.write(
      "GET /debug/memory/stats HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
      "GET /debug/memory/top?limit=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
      "GET /debug/memory/stats?format=json HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  const std::string raw = connection.read_all(5000);
  std::size_t answers = 0;
  for (std::size_t at = 0; (at = raw.find("HTTP/1.1 200 OK", at)) != std::string::npos; ++at) ++answers;
  EXPECT_EQ(answers, 3u) << raw;
}

// The routes' own allocations must not show up as growth: under IgnoreScope nothing the
// server, the worker or a report allocates is traced.
TEST_F(RobustnessTest, LookingDoesNotShowUpAsGrowth) {
  ASSERT_EQ(post(port(), "/debug/memory/baseline").status, 200);
  for (int i = 0; i < 5; ++i)
    for (const char* target : {"/debug/memory/stats", "/debug/memory/top?format=json&key=traceback",
                               "/debug/memory/diff?limit=50", "/debug/memory/tracebacks?format=json",
                               "/debug/memory/baseline", "/debug/memory/top?limit=0", "/debug/memory/nope"})
      get(port(), target);
  const auto report = get(port(), "/debug/memory/diff?format=json&key=traceback&limit=10000").json();
  for (const auto& stat : report["stats"]) {
    if (stat["size_diff"].get<long>() <= 0) continue;
    for (const auto& frame : stat["traceback"]) {
      const std::string file = frame.value("file", "");
      const std::string function = frame.value("function", "");
      EXPECT_EQ(file.find("/src/http/"), std::string::npos) << stat.dump(1);
      EXPECT_EQ(function.find("liveheap::v1::http::"), std::string::npos) << stat.dump(1);
    }
  }
}

}  // namespace
}  // namespace http_test
