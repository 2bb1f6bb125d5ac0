// The http tests' requests: send() through the library's one HTTP client (src/client);
// send_raw and Connection on plain POSIX sockets, so that what is sent is exactly what the
// test wrote (malformed requests, slow clients).
#include "client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <stdexcept>
#include <utility>

#include <boost/beast/core/string.hpp>

#include "exchange.hpp"

namespace http_test {

using namespace std::chrono_literals;

std::string Reply::header(const std::string& name) const {
  const auto it = headers.find(name);
  return it == headers.end() ? std::string() : it->second;
}

Connection::Connection(std::uint16_t port) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0)
    throw std::runtime_error("cannot connect to 127.0.0.1:" + std::to_string(port));
}

Connection::~Connection() { ::close(fd_); }

void Connection::write(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return;  // the server may close early (e.g. after 431): read what it said
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

void Connection::half_close() { ::shutdown(fd_, SHUT_WR); }

bool Connection::read_some(std::string& out, std::chrono::steady_clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  pollfd pfd{fd_, POLLIN, 0};
  if (left.count() <= 0 || ::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) return false;
  char buffer[4096];
  const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
  if (n <= 0) return false;
  out.append(buffer, static_cast<std::size_t>(n));
  return true;
}

std::string Connection::read_all(int timeout_ms) {
  std::string out = std::exchange(unread_, {});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (read_some(out, deadline)) {
  }
  return out;
}

std::string Connection::read_response(int timeout_ms) {
  std::string out = std::exchange(unread_, {});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const auto head_end = out.find("\r\n\r\n");
    if (head_end != std::string::npos) {
      std::string head = out.substr(0, head_end + 2);
      for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      const auto field = head.find("\r\ncontent-length:");
      const std::size_t body = field == std::string::npos ? 0 : std::stoul(head.substr(field + 17));
      const std::size_t end = head_end + 4 + body;
      if (out.size() >= end) {
        unread_ = out.substr(end);
        out.resize(end);
        return out;
      }
    }
    if (!read_some(out, deadline)) return out;
  }
}

std::string send_raw(std::uint16_t port, std::string_view bytes, bool half_close, int timeout_ms) {
  Connection connection(port);
  connection.write(bytes);
  if (half_close) connection.half_close();
  return connection.read_all(timeout_ms);
}

int status_of(std::string_view raw) {
  if (!raw.starts_with("HTTP/1.") || raw.size() < 12) return 0;
  return std::stoi(std::string(raw.substr(9, 3)));
}

Reply send(std::uint16_t port, std::string_view method, std::string_view target, std::string_view headers,
           std::string_view body) {
  namespace bh = boost::beast::http;
  liveheap::client::Request request;
  request.method_string(method);
  request.target(target);
  request.version(11);
  // Host: 127.0.0.1 unless the test writes its own; each of its lines as it wrote it.
  bool own_host = false;
  for (std::size_t at = 0; at < headers.size();) {
    const auto end = headers.find("\r\n", at);
    const std::string_view line = headers.substr(at, end - at);
    at = end == std::string_view::npos ? headers.size() : end + 2;
    const auto colon = line.find(':');
    if (line.empty() || colon == std::string_view::npos) continue;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    request.insert(line.substr(0, colon), value);
    own_host = own_host || boost::beast::iequals(line.substr(0, colon), "host");
  }
  if (!own_host) request.set(bh::field::host, "127.0.0.1");
  request.body() = std::string(body);
  const liveheap::client::Result result = liveheap::client::exchange_now(
      liveheap::client::Address::tcp("127.0.0.1", port), std::move(request), {15s, 15s, 15s});
  if (!result.response)
    throw std::runtime_error("no HTTP response to " + std::string(method) + " " + std::string(target) + ": " +
                             liveheap::client::why(result));
  Reply reply;
  reply.status = static_cast<int>(result.response->result_int());
  for (const auto& field : *result.response) {
    std::string name(field.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    reply.headers[name] = std::string(field.value());
  }
  reply.body = result.response->body();
  return reply;
}

testing::AssertionResult windows_waiting(std::uint16_t port, unsigned windows) {
  unsigned open = 0;
  testing::AssertionResult counted = wait_until(kPatience, [&] {
    open = get(port, "/debug/memory/stats?format=json").json().at("windows").get<unsigned>();
    return open == windows;
  });
  if (!counted) return counted << ": /stats counted " << open << " windows open, not " << windows;
  // The worker answers one request at a time, in order: this one runs after the windows'
  // first snapshots (its answer, even a 409, is all that matters). GET /baseline names no
  // frame, so the barrier takes none of the window's time: a /top here symbolized the heap
  // (a second and more, cold, on a loaded machine) inside a window that now starts at once.
  get(port, "/debug/memory/baseline");
  return testing::AssertionSuccess();
}

}  // namespace http_test
