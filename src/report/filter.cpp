// tracemalloc.Filter for C++ frames: a glob on the file or the function.
#include <stdexcept>
#include <string>
#include <string_view>

#include "frame_memo.hpp"
#include "glob.hpp"
#include "liveheap/snapshot.hpp"

LIVEHEAP_NAMESPACE_BEGIN

Filter::Filter(bool inclusive_, std::string pattern_, Field field_, bool all_frames_)
    : inclusive(inclusive_), pattern(std::move(pattern_)), field(field_), all_frames(all_frames_) {
  if (const std::string error = report::glob_error(pattern); !error.empty())
    throw std::invalid_argument("bad glob '" + pattern + "': " + error);
}

Filter Filter::parse(bool inclusive, std::string_view spec) {
  constexpr std::string_view kFunction = "function:";
  const bool by_function = spec.starts_with(kFunction);
  const std::string_view pattern = by_function ? spec.substr(kFunction.size()) : spec;
  if (pattern.empty()) throw std::invalid_argument("empty glob in '" + std::string(spec) + "'");
  return Filter(inclusive, std::string(pattern), by_function ? Field::function : Field::file);
}

bool Filter::matches(const Frame& frame) const noexcept {
  return report::glob_match(pattern, field == Field::file ? frame.file : frame.function);
}

bool Filter::matches(const Traceback& traceback) const noexcept {
  return report::traceback_matches(
      *this, traceback, [](const Traceback& tb) { return user_frame_index(tb); },
      [&](std::size_t i) { return matches(traceback[i]); });
}

LIVEHEAP_NAMESPACE_END
