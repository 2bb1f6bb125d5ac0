// tracemalloc.Filter for C++ frames: a glob on the file or the function.
#include <stdexcept>

#include "glob.hpp"
#include "liveheap/snapshot.hpp"

namespace liveheap {

Filter::Filter(bool inclusive_, std::string pattern_, Field field_, bool all_frames_)
    : inclusive(inclusive_), pattern(std::move(pattern_)), field(field_), all_frames(all_frames_) {
  if (const std::string error = report::glob_error(pattern); !error.empty())
    throw std::invalid_argument("bad glob '" + pattern + "': " + error);
}

bool Filter::matches(const Frame& frame) const noexcept {
  return report::glob_match(pattern, field == Field::file ? frame.file : frame.function);
}

bool Filter::matches(const Traceback& traceback) const noexcept {
  if (traceback.empty()) return false;
  if (!all_frames) return matches(traceback[user_frame_index(traceback)]);
  for (const Frame& f : traceback)
    if (matches(f)) return true;
  return false;
}

}  // namespace liveheap
