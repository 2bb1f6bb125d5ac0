// Protocol buffers' wire format, only what profile.proto needs: varints, length-delimited
// strings and nested messages, packed repeated integers. Thread-safety: one writer per thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace liveheap::report {

class ProtoWriter {
 public:
  // Field `field` as a varint (int64 values are written as their two's complement).
  void integer(unsigned field, std::uint64_t value);
  // Left out when zero, as proto3 leaves out every default.
  void integer_opt(unsigned field, std::uint64_t value) {
    if (value != 0) integer(field, value);
  }
  void boolean(unsigned field, bool value) { integer_opt(field, value ? 1 : 0); }
  // A length-delimited field: a string, or a nested message's bytes.
  void bytes(unsigned field, std::string_view value);
  void packed(unsigned field, const std::vector<std::uint64_t>& values);
  void packed(unsigned field, const std::vector<std::int64_t>& values);

  const std::string& data() const noexcept { return out_; }
  std::string take() noexcept { return std::move(out_); }

 private:
  void varint(std::uint64_t v);
  void tag(unsigned field, unsigned wire_type) { varint((std::uint64_t{field} << 3) | wire_type); }
  std::string out_;
};

}  // namespace liveheap::report
