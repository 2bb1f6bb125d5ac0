// The debug information of the files processes ask about, read once per file (and build):
// what liveheap-symbolizer answers from. A libbacktrace state per file; a state cannot be
// freed, so the symbolizer retires (exits, to be started afresh) once it holds kMaxFiles.
// Thread-safety: none; the symbolizer's one thread uses it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "wire.hpp"

struct backtrace_state;

namespace liveheap::symbolize::server {

class FileDebugInfo {
 public:
  static constexpr std::size_t kMaxFiles = 512;

  // The functions inlined at `pc` (relative to the object's bias) innermost first, then the
  // one the code is in, and its symbol. Empty when the file cannot be read, is another build
  // than the one the process mapped, or has nothing at `pc`.
  wire::Answer resolve(const wire::Object& object, std::uint64_t pc);

  std::size_t files() const { return files_.size(); }

 private:
  backtrace_state* state_of(const wire::Object& object);

  // By (path, build-id); null where the file could not be read or was another build.
  std::map<std::pair<std::string, std::string>, backtrace_state*> files_;
};

}  // namespace liveheap::symbolize::server
