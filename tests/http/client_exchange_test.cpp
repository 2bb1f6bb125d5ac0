// The library's one HTTP client (src/client) against real sockets: an answer over TCP and
// over a Unix-domain socket, and each way of not getting one named by its step.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "../support/temp_dir.hpp"
#include "exchange.hpp"
#include "server_fixture.hpp"

namespace http_test {
namespace {

namespace client = liveheap::client;
namespace bh = boost::beast::http;
using namespace std::chrono_literals;

using ClientExchange = ServerTest;

client::Request get_request(const std::string& target) { return {bh::verb::get, target, 11}; }

TEST_F(ClientExchange, AnAnswerOverTcp) {
  const client::Result result = client::exchange_now(client::Address::tcp("127.0.0.1", port()),
                                                     get_request("/debug/memory/stats?format=json"), {});
  ASSERT_TRUE(result.response.has_value()) << client::why(result);
  EXPECT_EQ(result.response->result_int(), 200u);
  EXPECT_TRUE(nlohmann::json::parse(result.response->body()).contains("traced"));
  const client::Result missing = client::exchange_now(client::Address::tcp("localhost", port()),
                                                      get_request("/debug/memory/nowhere"), {});
  ASSERT_TRUE(missing.response.has_value()) << client::why(missing);
  EXPECT_EQ(missing.response->result_int(), 404u);  // any status is an answer
}

// A listening Unix-domain socket at `path` (its descriptor).
int listen_at(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 4) != 0)
    throw std::runtime_error("cannot listen at " + path);
  return fd;
}

TEST(ClientExchanges, AnAnswerOverAUnixSocketWithTheRequestAsSent) {
  test_support::TempDir dir;
  const std::string path = dir.path() + "/server.sock";
  const int listener = listen_at(path);
  std::string received;
  std::thread server([&] {
    const int fd = ::accept(listener, nullptr, nullptr);
    char buffer[4096];
    while (received.find("\r\n\r\n") == std::string::npos) {
      const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
      if (n <= 0) break;
      received.append(buffer, static_cast<std::size_t>(n));
    }
    const std::string answer = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
    (void)!::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL);
    ::close(fd);
  });
  const client::Result result =
      client::exchange_now(client::Address::unix_socket(path), get_request("/x?y=1"), {});
  server.join();
  ::close(listener);
  ASSERT_TRUE(result.response.has_value()) << client::why(result);
  EXPECT_EQ(result.response->body(), "hello");
  EXPECT_TRUE(received.starts_with("GET /x?y=1 HTTP/1.1\r\n")) << received;
  EXPECT_NE(received.find("Host: localhost\r\n"), std::string::npos) << received;
  EXPECT_NE(received.find("Connection: close\r\n"), std::string::npos) << received;
}

TEST(ClientExchanges, ARefusedConnectionIsTheConnectStep) {
  test_support::TempDir dir;
  const client::Result result =
      client::exchange_now(client::Address::unix_socket(dir.path() + "/nobody.sock"), get_request("/"), {});
  EXPECT_FALSE(result.response.has_value());
  EXPECT_EQ(result.failed, client::Step::connect);
  EXPECT_FALSE(result.cancelled);
  const client::Result unknown =
      client::exchange_now(client::Address::tcp("no-such-host.invalid", 80), get_request("/"), {});
  EXPECT_EQ(unknown.failed, client::Step::resolve);
}

// A server that accepts (its kernel does, from the backlog) and never answers: the answer's
// timeout ends the exchange, named as a timeout of the answer.
TEST(ClientExchanges, ASilentServerIsATimeoutOfTheAnswer) {
  test_support::TempDir dir;
  const std::string path = dir.path() + "/silent.sock";
  const int listener = listen_at(path);
  const auto started = std::chrono::steady_clock::now();
  const client::Result result =
      client::exchange_now(client::Address::unix_socket(path), get_request("/"), {1s, 300ms, 1s});
  ::close(listener);
  EXPECT_FALSE(result.response.has_value());
  EXPECT_EQ(result.failed, client::Step::answer);
  EXPECT_EQ(client::why(result), "no answer in time");
  EXPECT_LT(std::chrono::steady_clock::now() - started, 10s);
}

}  // namespace
}  // namespace http_test
