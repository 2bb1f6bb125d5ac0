// LIVEHEAP_* environment variables -> Options, strictly: a bad value is an error, not a guess.
// The limits and parsers are the settings module's (liveheap/settings.hpp).
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "liveheap/settings.hpp"
#include "liveheap/tracker.hpp"
#include "preloaded_session.hpp"

LIVEHEAP_NAMESPACE_BEGIN

std::optional<Options> options_from_environment(Mode default_mode) {
  return tracker::options_from(default_mode,
                               [](const char* name) -> const char* { return std::getenv(name); });
}

LIVEHEAP_NAMESPACE_END

std::optional<liveheap::Options> liveheap::tracker::options_from(Mode default_mode,
                                                                 const char* (*lookup)(const char*)) {
  const auto getenv = lookup;
  Options options;
  options.mode = default_mode;
  if (const char* mode = getenv("LIVEHEAP_MODE")) {
    try {
      options.mode = parse_mode(mode);
    } catch (const std::invalid_argument&) {
      throw std::invalid_argument(std::string("LIVEHEAP_MODE='") + mode +
                                  "' is not one of off, exact, sampled");
    }
  }
  if (const char* frames = getenv("LIVEHEAP_FRAMES"))
    options.max_frames = static_cast<unsigned>(settings::whole("LIVEHEAP_FRAMES", frames, settings::kFrames));
  if (const char* interval = getenv("LIVEHEAP_SAMPLE_INTERVAL"))
    options.sample_interval =
        settings::whole("LIVEHEAP_SAMPLE_INTERVAL", interval, settings::kSampleInterval);
  if (const char* plumbing = getenv("LIVEHEAP_PLUMBING")) {
    try {
      options.plumbing = settings::parse_plumbing(plumbing);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("LIVEHEAP_PLUMBING='" + std::string(plumbing) + "': " + e.what() +
                                  " (expected comma-separated globs, e.g. "
                                  "function:arena_*,*/obmalloc.c)");
    }
  }
  if (const char* history = getenv("LIVEHEAP_HISTORY_INTERVAL"))
    options.history_interval_s = static_cast<unsigned>(
        settings::whole("LIVEHEAP_HISTORY_INTERVAL", history, settings::kHistoryInterval));
  if (const char* cap = getenv("LIVEHEAP_MAX_TRACKER_MEMORY"))
    options.max_tracker_memory = settings::size("LIVEHEAP_MAX_TRACKER_MEMORY", cap, settings::kTrackerMemory);
  if (options.mode == Mode::off) return std::nullopt;
  return options;
}
