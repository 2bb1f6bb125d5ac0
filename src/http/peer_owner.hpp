// Who is at the other end of a TCP connection from this machine: the uid owning the
// client's socket, read from the kernel's socket tables as identd does, for serving only
// this process's own user (and root) when there is no token.
// Thread-safety: pure functions plus reads of /proc.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/ip/tcp.hpp>

#include "liveheap/export.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {

// The owner of the socket whose local address is `client` and whose remote address is
// `server` (an accepted connection's remote and local endpoints), in one table's text
// (/proc/net/tcp or /proc/net/tcp6). nullopt when no live socket matches: rows in
// TIME_WAIT and rows without an inode (a socket its owner closed) name no owner.
std::optional<uid_t> find_socket_owner(std::string_view table, const boost::asio::ip::tcp::endpoint& client,
                                       const boost::asio::ip::tcp::endpoint& server);

// The same, in /proc/net/tcp and /proc/net/tcp6.
std::optional<uid_t> tcp_peer_owner(const boost::asio::ip::tcp::endpoint& client,
                                    const boost::asio::ip::tcp::endpoint& server);

// nullopt when a connection from `client` to `server` may be served without a token: its
// socket belongs to this process's effective uid or to root, or it comes from another
// machine (its socket is in no table here). Else the one-line reason for a 403. A loopback
// client whose owner cannot be found is refused: this machine's users are told apart only
// by that owner.
std::optional<std::string> check_peer_owner(const boost::asio::ip::tcp::endpoint& client,
                                            const boost::asio::ip::tcp::endpoint& server);

}  // namespace http
LIVEHEAP_NAMESPACE_END
