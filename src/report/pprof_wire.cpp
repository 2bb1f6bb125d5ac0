// Protocol buffers' wire format (pprof_wire.hpp), written by hand: no protobuf library.
#include "pprof_wire.hpp"

#include <stdexcept>

#include <zlib.h>

#include "liveheap/pprof.hpp"

namespace liveheap::report {
namespace {

constexpr unsigned kVarint = 0;
constexpr unsigned kLengthDelimited = 2;

}  // namespace

void ProtoWriter::varint(std::uint64_t v) {
  while (v >= 0x80) {
    out_.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out_.push_back(static_cast<char>(v));
}

void ProtoWriter::integer(unsigned field, std::uint64_t value) {
  tag(field, kVarint);
  varint(value);
}

void ProtoWriter::bytes(unsigned field, std::string_view value) {
  tag(field, kLengthDelimited);
  varint(value.size());
  out_.append(value);
}

void ProtoWriter::packed(unsigned field, const std::vector<std::uint64_t>& values) {
  ProtoWriter body;
  for (const std::uint64_t v : values) body.varint(v);
  bytes(field, body.data());
}

void ProtoWriter::packed(unsigned field, const std::vector<std::int64_t>& values) {
  ProtoWriter body;
  for (const std::int64_t v : values) body.varint(static_cast<std::uint64_t>(v));
  bytes(field, body.data());
}

}  // namespace liveheap::report

LIVEHEAP_NAMESPACE_BEGIN

std::string gzip(std::string_view bytes) {
  z_stream z{};
  // windowBits 15 + 16: a gzip header and trailer around the deflate stream.
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("gzip: deflateInit2 failed");
  std::string out(deflateBound(&z, bytes.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  const auto written = z.total_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw std::runtime_error("gzip: deflate failed");
  out.resize(written);
  return out;
}

LIVEHEAP_NAMESPACE_END
