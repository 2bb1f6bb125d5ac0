// Per-file libbacktrace states (file_debug_info.hpp).
#include "file_debug_info.hpp"

#include <backtrace.h>
#include <boost/core/demangle.hpp>

#include "build_id.hpp"
#include "presented_object.hpp"

namespace liveheap::symbolize::server {
namespace {

void quiet(void*, const char*, int) {}

std::vector<wire::Located> inline_chain(backtrace_state* state, std::uint64_t pc) {
  std::vector<wire::Located> chain;
  backtrace_pcinfo(
      state, pc,
      [](void* data, std::uintptr_t, const char* file, int line, const char* function) {
        if (file == nullptr && function == nullptr) return 0;
        static_cast<std::vector<wire::Located>*>(data)->push_back(
            {function == nullptr ? "" : boost::core::demangle(function), file == nullptr ? "" : file,
             static_cast<unsigned>(line < 0 ? 0 : line)});
        return 0;
      },
      quiet, &chain);
  return chain;
}

std::string symbol_at(backtrace_state* state, std::uint64_t pc) {
  std::string name;
  backtrace_syminfo(
      state, pc,
      [](void* out, std::uintptr_t, const char* symbol, std::uintptr_t, std::uintptr_t) {
        if (symbol != nullptr) *static_cast<std::string*>(out) = boost::core::demangle(symbol);
      },
      quiet, &name);
  return name;
}

}  // namespace

backtrace_state* FileDebugInfo::state_of(const wire::Object& object) {
  const auto key = std::make_pair(object.path, object.build_id);
  if (auto it = files_.find(key); it != files_.end()) return it->second;
  auto& [names, state] = *files_.emplace(key, nullptr).first;
  // The file at the path must be the build the process mapped: its lines, or none. The
  // state keeps the file name's pointer for its first use: the map's copy lives as long.
  const std::optional<std::string> on_disk = build_id_of_file(object.path);
  if (on_disk && (object.build_id.empty() || *on_disk == object.build_id))
    state = backtrace_create_state(names.first.c_str(), 0, quiet, nullptr);
  return state;
}

wire::Answer FileDebugInfo::resolve(const wire::Object& object, std::uint64_t pc) {
  const PresentingOneObject presenting;  // libbacktrace reads the file on its first use
  backtrace_state* state = state_of(object);
  if (state == nullptr) return {};
  return {inline_chain(state, pc), symbol_at(state, pc)};
}

}  // namespace liveheap::symbolize::server
