// The owner of a connection's client socket, from /proc/net/tcp{,6} (see peer_owner.hpp).
#include "peer_owner.hpp"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <utility>

#include "file_lines.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {
namespace {

using tcp = boost::asio::ip::tcp;

constexpr std::string_view kTimeWait = "06";  // its row's uid is always 0, whoever owned it

// An address as the kernel prints it in these tables: each 32-bit word of the address in
// network order, printed as a number in the machine's byte order ("%08X"), then ":%04X" of
// the port. `v6` picks /proc/net/tcp6's form (an IPv4 address there is ::ffff:a.b.c.d).
std::string kernel_form(const tcp::endpoint& endpoint, bool v6) {
  std::array<unsigned char, 16> bytes{};
  std::size_t size = 16;
  const auto address = endpoint.address();
  if (address.is_v4()) {
    const auto v4 = address.to_v4().to_bytes();
    if (v6) {
      bytes[10] = bytes[11] = 0xff;
      std::memcpy(bytes.data() + 12, v4.data(), 4);
    } else {
      std::memcpy(bytes.data(), v4.data(), 4);
      size = 4;
    }
  } else {
    const auto v6_address = address.to_v6();
    if (!v6 && !v6_address.is_v4_mapped()) return {};  // cannot be in /proc/net/tcp
    if (v6) {
      const auto all = v6_address.to_bytes();
      std::memcpy(bytes.data(), all.data(), 16);
    } else {
      const auto v4 = boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, v6_address).to_bytes();
      std::memcpy(bytes.data(), v4.data(), 4);
      size = 4;
    }
  }
  std::string out;
  char word[16];
  for (std::size_t at = 0; at < size; at += 4) {
    std::uint32_t value;
    std::memcpy(&value, bytes.data() + at, 4);
    std::snprintf(word, sizeof word, "%08X", value);
    out += word;
  }
  std::snprintf(word, sizeof word, ":%04X", static_cast<unsigned>(endpoint.port()));
  return out + word;
}

// The whitespace-separated fields of one row.
std::size_t split_fields(std::string_view line, std::array<std::string_view, 10>& fields) {
  std::size_t n = 0;
  while (n < fields.size()) {
    const auto start = line.find_first_not_of(' ');
    if (start == std::string_view::npos) break;
    line.remove_prefix(start);
    const auto end = line.find(' ');
    fields[n++] = line.substr(0, end);
    if (end == std::string_view::npos) break;
    line.remove_prefix(end);
  }
  return n;
}

std::optional<uid_t> find_in(std::string_view table, std::string_view local, std::string_view remote) {
  if (local.empty() || remote.empty()) return std::nullopt;
  while (!table.empty()) {
    const auto newline = table.find('\n');
    const std::string_view line = table.substr(0, newline);
    table = newline == std::string_view::npos ? std::string_view() : table.substr(newline + 1);
    // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
    std::array<std::string_view, 10> f;
    if (split_fields(line, f) < 10 || f[1] != local || f[2] != remote) continue;
    if (f[3] == kTimeWait || f[9] == "0") continue;  // no owner to name
    uid_t uid = 0;
    for (const char c : f[7]) {
      if (c < '0' || c > '9') return std::nullopt;
      uid = uid * 10 + static_cast<uid_t>(c - '0');
    }
    return uid;
  }
  return std::nullopt;
}

bool is_loopback(const boost::asio::ip::address& address) {
  if (address.is_v6() && address.to_v6().is_v4_mapped())
    return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, address.to_v6()).is_loopback();
  return address.is_loopback();
}

}  // namespace

std::optional<uid_t> find_socket_owner(std::string_view table, const tcp::endpoint& client,
                                       const tcp::endpoint& server) {
  // Either table's form: the other never matches (its addresses are longer or shorter).
  for (const bool form : {false, true})
    if (auto uid = find_in(table, kernel_form(client, form), kernel_form(server, form))) return uid;
  return std::nullopt;
}

std::optional<uid_t> tcp_peer_owner(const tcp::endpoint& client, const tcp::endpoint& server) {
  const std::pair<const char*, bool> tables[] = {{"/proc/net/tcp", false}, {"/proc/net/tcp6", true}};
  for (const auto& [path, v6] : tables) {
    const std::string local = kernel_form(client, v6);
    const std::string remote = kernel_form(server, v6);
    if (local.empty()) continue;
    // A row at a time: a busy host's table is megabytes.
    tracker::FileLines in(path);
    for (std::string line; in.next(line);)
      if (auto uid = find_in(line, local, remote)) return uid;
  }
  return std::nullopt;
}

std::optional<std::string> check_peer_owner(const tcp::endpoint& client, const tcp::endpoint& server) {
  const uid_t self = ::geteuid();
  const std::optional<uid_t> owner = tcp_peer_owner(client, server);
  if (owner && (*owner == self || *owner == 0)) return std::nullopt;
  if (!owner && !is_loopback(client.address())) return std::nullopt;  // another machine
  const std::string serves =
      "without a token this server answers only its own user (uid " + std::to_string(self) + ") and root";
  if (owner)
    return serves + "; this connection's socket belongs to uid " + std::to_string(*owner) +
           ": set LIVEHEAP_TOKEN (Config::token) to let other users in";
  return serves +
         "; the owner of this connection's socket could not be found in /proc/net/tcp "
         "or /proc/net/tcp6, so it is refused: set LIVEHEAP_TOKEN (Config::token)";
}

}  // namespace http
LIVEHEAP_NAMESPACE_END
