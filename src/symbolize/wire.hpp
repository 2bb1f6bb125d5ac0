// What a traced process asks liveheap-symbolizer and what it answers. One request per
// connection: the client writes a message, the symbolizer writes one back and closes. A
// message is the 8-byte magic "LHSYMB01", an 8-byte little-endian length and that many bytes
// of JSON. Addresses travel relative to their object's load bias, so every process that maps
// a file asks about the same numbers, wherever the loader put it.
// Thread-safety: pure functions; read_message/write_message block on their descriptor.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace liveheap::symbolize::wire {

// A file of code as the asking process has it mapped.
struct Object {
  std::string path;      // absolute
  std::string build_id;  // hex; "" when the object has no build-id note
  bool operator==(const Object&) const = default;
};

// One code address: the call's own address (a return address less one), minus the bias the
// loader added to the object's addresses (dl_iterate_phdr's dlpi_addr).
struct Query {
  std::uint32_t object = 0;  // index into Request::objects
  std::uint64_t pc = 0;
};

struct Request {
  std::vector<Object> objects;
  std::vector<Query> queries;
};

// A function at a source line, as the debug information names it (demangled).
struct Located {
  std::string function;
  std::string file;
  unsigned line = 0;
};

// What the symbolizer found for one query.
struct Answer {
  std::vector<Located> chain;  // the inlined functions innermost first, then the one the code is in
  std::string symbol;          // the symbol table's name for the code (demangled); "" if none
};

struct Reply {
  std::vector<Answer> answers;  // one per query, in order
  std::int64_t pid = 0;         // the symbolizer's
  std::int64_t rss_bytes = 0;   // its resident memory after answering
  std::int64_t files = 0;       // files whose debug information it holds
  std::string error;            // non-empty: the request was refused, answers is empty
};

std::string encode(const Request& request);
std::string encode(const Reply& reply);
// Throw std::runtime_error on a body that is not what encode() writes.
Request decode_request(std::string_view body);
Reply decode_reply(std::string_view body);

// The address of `name` (at most 107 bytes) in Linux's abstract socket namespace, and its
// length in *length.
sockaddr_un abstract_address(std::string_view name, socklen_t& length);

// A message's body, or nullopt on end of file, a bad magic, a length past `max_bytes` or a
// read error (a timeout set on the socket included).
std::optional<std::string> read_message(int fd, std::uint64_t max_bytes);
// False on a write error (a timeout set on the socket included). Never raises SIGPIPE.
bool write_message(int fd, std::string_view body);

}  // namespace liveheap::symbolize::wire
