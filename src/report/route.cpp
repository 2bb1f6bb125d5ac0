// The route of the request that allocated a trace: its stack's outermost frame, when the
// engine added one (src/engine/request_route.hpp).
#include <stdexcept>
#include <string>

#include "glob.hpp"
#include "liveheap/snapshot.hpp"

LIVEHEAP_NAMESPACE_BEGIN

bool is_route_frame(const Frame& frame) noexcept {
  return frame.module == kRouteModule && frame.file.empty();
}

bool is_python_frame(const Frame& frame) noexcept { return frame.module == kPythonModule; }

std::string_view route_of(const Traceback& traceback) noexcept {
  if (traceback.empty() || !is_route_frame(traceback.back())) return kNoRequest;
  return traceback.back().function;
}

Frame route_frame(std::string_view route) {
  return Frame{std::string(route), "", 0, std::string(kRouteModule), 0};
}

bool route_matches(std::string_view route, const std::vector<std::string>& globs) {
  if (globs.empty()) return true;
  for (const std::string& glob : globs) {
    if (const std::string error = report::glob_error(glob); !error.empty())
      throw std::invalid_argument("bad glob '" + glob + "': " + error);
    if (report::glob_match(glob, route)) return true;
  }
  return false;
}

LIVEHEAP_NAMESPACE_END
