// LIVEHEAP_* environment variables -> Options, strictly: a bad value is an error, not a guess.
#include <charconv>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "liveheap/tracker.hpp"

namespace liveheap {
namespace {

std::uint64_t parse_number(const char* name, std::string_view text, std::uint64_t min,
                           std::uint64_t max) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < min ||
      value > max)
    throw std::invalid_argument(std::string(name) + "='" + std::string(text) +
                                "' is not a whole number from " + std::to_string(min) + " to " +
                                std::to_string(max));
  return value;
}

// "256MiB" -> 268435456: a whole number of bytes with an optional binary unit, nothing else.
std::uint64_t parse_size(const char* name, std::string_view text, std::uint64_t min,
                         std::uint64_t max) {
  static constexpr std::pair<std::string_view, unsigned> kUnits[] = {
      {"", 0}, {"B", 0}, {"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40}};
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  const std::string_view unit = text.substr(static_cast<std::size_t>(end - text.data()));
  for (const auto& [suffix, shift] : kUnits) {
    if (ec != std::errc() || end == text.data() || unit != suffix) continue;
    if (value > (max >> shift) || (value << shift) < min) break;
    return value << shift;
  }
  throw std::invalid_argument(std::string(name) + "='" + std::string(text) +
                              "' is not a size from " + std::to_string(min) + " to " +
                              std::to_string(max) +
                              " bytes: a whole number with an optional unit B, KiB, MiB, GiB or "
                              "TiB (e.g. 268435456, 256MiB, 1GiB)");
}

// "a, function:b*" -> {"a", "function:b*"}: each item a Filter spec, none empty.
std::vector<std::string> parse_plumbing(std::string_view text) {
  std::vector<std::string> globs;
  for (std::size_t start = 0; start <= text.size();) {
    std::size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view item = text.substr(start, end - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    try {
      Filter::parse(true, item);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("LIVEHEAP_PLUMBING='" + std::string(text) + "': " + e.what() +
                                  " (expected comma-separated globs, e.g. "
                                  "function:arena_*,*/obmalloc.c)");
    }
    globs.emplace_back(item);
    start = end + 1;
  }
  return globs;
}

}  // namespace

std::optional<Options> options_from_environment(Mode default_mode) {
  Options options;
  options.mode = default_mode;
  if (const char* mode = std::getenv("LIVEHEAP_MODE")) {
    try {
      options.mode = parse_mode(mode);
    } catch (const std::invalid_argument&) {
      throw std::invalid_argument(std::string("LIVEHEAP_MODE='") + mode +
                                  "' is not one of off, exact, sampled");
    }
  }
  if (const char* frames = std::getenv("LIVEHEAP_FRAMES"))
    options.max_frames =
        static_cast<unsigned>(parse_number("LIVEHEAP_FRAMES", frames, 1, kMaxFrames));
  if (const char* interval = std::getenv("LIVEHEAP_SAMPLE_INTERVAL"))
    options.sample_interval =
        parse_number("LIVEHEAP_SAMPLE_INTERVAL", interval, 1, std::uint64_t{1} << 40);
  if (const char* plumbing = std::getenv("LIVEHEAP_PLUMBING"))
    options.plumbing = parse_plumbing(plumbing);
  if (const char* history = std::getenv("LIVEHEAP_HISTORY_INTERVAL"))
    options.history_interval_s =
        static_cast<unsigned>(parse_number("LIVEHEAP_HISTORY_INTERVAL", history, 0, kMaxHistoryInterval));
  if (const char* cap = std::getenv("LIVEHEAP_MAX_TRACKER_MEMORY"))
    options.max_tracker_memory =
        parse_size("LIVEHEAP_MAX_TRACKER_MEMORY", cap, kMinTrackerMemory, kMaxTrackerMemory);
  if (options.mode == Mode::off) return std::nullopt;
  return options;
}

}  // namespace liveheap
