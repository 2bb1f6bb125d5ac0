// Where code addresses lie, as the loader sees them now: all a traced process works out
// itself before the symbolizer names them. dladdr and the loaded objects' notes only, both
// already in memory: no debug information is read here.
// Thread-safety: any thread (the loader holds its lock while it answers).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "wire.hpp"

namespace liveheap::symbolize {

struct CodeLocation {
  std::string
      module;  // as Frame::module: the object's file, the main program by its path; "" when none holds it
  std::string symbol;         // the dynamic symbol dladdr finds there, mangled; "" when none
  bool in_object = false;     // some object holds the address
  std::uintptr_t offset = 0;  // from the object's first mapped byte (its dladdr base): module+offset names
  std::optional<wire::Query> query;  // what to ask the symbolizer; none when no object holds it
};

struct CodeLocations {
  std::vector<CodeLocation> at;       // one per address, in order
  std::vector<wire::Object> objects;  // the queries' objects
};

// `addresses` are return addresses: each is located by the call before it (address - 1).
CodeLocations locate(std::span<const std::uintptr_t> addresses);

}  // namespace liveheap::symbolize
