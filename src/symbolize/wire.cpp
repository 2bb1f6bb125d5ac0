// The symbolizer's messages: framing and JSON (wire.hpp).
#include "wire.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace liveheap::symbolize::wire {
namespace {

using nlohmann::json;

constexpr char kMagic[8] = {'L', 'H', 'S', 'Y', 'M', 'B', '0', '1'};

bool read_exactly(int fd, char* out, std::size_t n) {
  while (n > 0) {
    const ssize_t got = ::recv(fd, out, n, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    out += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

bool write_all(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    const ssize_t put = ::send(fd, data, n, MSG_NOSIGNAL);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    data += put;
    n -= static_cast<std::size_t>(put);
  }
  return true;
}

json parse(std::string_view body) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) throw std::runtime_error("the symbolizer's message is not a JSON object");
  return j;
}

}  // namespace

std::string encode(const Request& request) {
  json objects = json::array();
  for (const Object& o : request.objects) objects.push_back({o.path, o.build_id});
  json queries = json::array();
  for (const Query& q : request.queries) queries.push_back({q.object, q.pc});
  return json{{"objects", std::move(objects)}, {"queries", std::move(queries)}}.dump();
}

std::string encode(const Reply& reply) {
  json answers = json::array();
  for (const Answer& a : reply.answers) {
    json chain = json::array();
    for (const Located& l : a.chain) chain.push_back({l.function, l.file, l.line});
    answers.push_back({std::move(chain), a.symbol});
  }
  json j = {{"answers", std::move(answers)},
            {"pid", reply.pid},
            {"rss_bytes", reply.rss_bytes},
            {"files", reply.files}};
  if (!reply.error.empty()) j["error"] = reply.error;
  // Debug information is not always valid UTF-8; the JSON must be.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Request decode_request(std::string_view body) {
  try {
    const json j = parse(body);
    Request request;
    for (const json& o : j.at("objects"))
      request.objects.push_back({o.at(0).get<std::string>(), o.at(1).get<std::string>()});
    for (const json& q : j.at("queries")) {
      Query query{q.at(0).get<std::uint32_t>(), q.at(1).get<std::uint64_t>()};
      if (query.object >= request.objects.size())
        throw std::runtime_error("a query names object " + std::to_string(query.object) + " of " +
                                 std::to_string(request.objects.size()));
      request.queries.push_back(query);
    }
    return request;
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("a malformed request: ") + e.what());
  }
}

Reply decode_reply(std::string_view body) {
  try {
    const json j = parse(body);
    Reply reply;
    for (const json& a : j.at("answers")) {
      Answer answer;
      for (const json& l : a.at(0))
        answer.chain.push_back(
            {l.at(0).get<std::string>(), l.at(1).get<std::string>(), l.at(2).get<unsigned>()});
      answer.symbol = a.at(1).get<std::string>();
      reply.answers.push_back(std::move(answer));
    }
    reply.pid = j.at("pid").get<std::int64_t>();
    reply.rss_bytes = j.at("rss_bytes").get<std::int64_t>();
    reply.files = j.at("files").get<std::int64_t>();
    if (j.contains("error")) reply.error = j.at("error").get<std::string>();
    return reply;
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("a malformed reply: ") + e.what());
  }
}

sockaddr_un abstract_address(std::string_view name, socklen_t& length) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  name = name.substr(0, sizeof address.sun_path - 1);
  std::memcpy(address.sun_path + 1, name.data(), name.size());
  length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return address;
}

std::optional<std::string> read_message(int fd, std::uint64_t max_bytes) {
  char head[16];
  if (!read_exactly(fd, head, sizeof head) || std::memcmp(head, kMagic, sizeof kMagic) != 0)
    return std::nullopt;
  std::uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = length << 8 | static_cast<unsigned char>(head[8 + i]);
  if (length > max_bytes) return std::nullopt;
  std::string body(length, '\0');
  if (!read_exactly(fd, body.data(), body.size())) return std::nullopt;
  return body;
}

bool write_message(int fd, std::string_view body) {
  char head[16];
  std::memcpy(head, kMagic, sizeof kMagic);
  std::uint64_t length = body.size();
  for (int i = 0; i < 8; ++i, length >>= 8) head[8 + i] = static_cast<char>(length & 0xff);
  return write_all(fd, head, sizeof head) && write_all(fd, body.data(), body.size());
}

}  // namespace liveheap::symbolize::wire
