// Every setting's limits and parser, defined once: the LIVEHEAP_* variables
// (options_from_environment), the routes' query parameters, liveheap::start(Options) and
// liveheap-watch's options all take their ranges and their messages from here, so a value
// one of them accepts, the others accept too (HTTP may be stricter: kHttpSampleInterval).
// Thread-safety: constants and pure functions.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "liveheap/export.hpp"
#include "liveheap/snapshot.hpp"

LIVEHEAP_API_BEGIN

namespace settings {

// The whole numbers a setting takes, both ends included.
struct Range {
  std::uint64_t min = 0;
  std::uint64_t max = 0;
  constexpr bool contains(std::uint64_t value) const noexcept { return value >= min && value <= max; }
};

inline constexpr Range kFrames{1, 128};                             // max_frames, LIVEHEAP_FRAMES, frames=
inline constexpr Range kSampleInterval{1, std::uint64_t{1} << 40};  // bytes between samples
// Below 4096, sampling costs a page per small block (20,000 malloc(16) grew RSS
// by 79 MiB at 1 B): HTTP refuses it; LIVEHEAP_SAMPLE_INTERVAL and Options may go lower, for tests.
inline constexpr Range kHttpSampleInterval{4096, kSampleInterval.max};
inline constexpr Range kHistoryInterval{0, 86400};  // seconds between history points; 0: off
inline constexpr Range kLimit{1, 10000};            // lines of a report
inline constexpr Range kSeconds{1, 60};             // a ?seconds= window
inline constexpr Range kPid{1, 4194304};            // Linux's PID_MAX_LIMIT
inline constexpr Range kMetricsCallsites{0, 1000};  // callsites given a /metrics gauge
inline constexpr Range kTrackerMemory{std::uint64_t{1} << 20, std::uint64_t{1} << 40};  // bytes

// The parsers' cores, inline: the preload library reads the LIVEHEAP_* variables with them
// before the rest of liveheap (and the functions below) is loaded. Use the functions below.
namespace detail {

inline std::optional<std::uint64_t> whole_number(std::string_view text, Range range) noexcept {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !range.contains(value))
    return std::nullopt;
  return value;
}

inline std::optional<std::uint64_t> size_in_bytes(std::string_view text, Range range) noexcept {
  constexpr std::string_view kUnits[] = {"", "B", "KiB", "MiB", "GiB", "TiB"};
  constexpr unsigned kShifts[] = {0, 0, 10, 20, 30, 40};
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data()) return std::nullopt;
  const std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
  for (std::size_t i = 0; i < std::size(kUnits); ++i) {
    if (unit != kUnits[i]) continue;
    if (value > (range.max >> kShifts[i]) || (value << kShifts[i]) < range.min) return std::nullopt;
    return value << kShifts[i];
  }
  return std::nullopt;
}

}  // namespace detail

// The number `text` spells: decimal digits only (no sign, space or suffix), within `range`;
// nullopt otherwise.
std::optional<std::uint64_t> parse_whole(std::string_view text, Range range) noexcept;

// A size, "256MiB" -> 268435456: a whole number of bytes with an optional unit B, KiB,
// MiB, GiB or TiB, within `range`; else std::invalid_argument naming `name` and the units.
std::uint64_t size(std::string_view name, std::string_view text, Range range);
// The one message for a bad number: "<name>=<quoted> is not a whole number from MIN to MAX".
// `quoted` is the value as the caller quotes it ('text', or a sanitized excerpt).
std::string not_a_whole_number(std::string_view name, std::string_view quoted, Range range);

// parse_whole, or std::invalid_argument(not_a_whole_number(name, "'text'", range)).
std::uint64_t whole(std::string_view name, std::string_view text, Range range);

// The message for a value of Options (or Config) outside its range:
// "<name> must be MIN..MAX<unit>, got VALUE"; `max_text` spells the top (e.g. "2^40").
std::string out_of_range(std::string_view name, std::uint64_t value, Range range, std::string_view unit = "",
                         std::string_view max_text = "");

// A 0 or 1 flag (cumulative=, traceback=, verdicts=); nullopt for anything else.
std::optional<bool> parse_flag(std::string_view text) noexcept;

// The modes tracing can be started in: exact or sampled; nullopt for anything else ("off"
// included: stopping is not a start option).
std::optional<Mode> parse_start_mode(std::string_view text) noexcept;

// A plumbing list, "a, function:b*": comma-separated Filter specs, blanks around each
// trimmed, none empty. Throws std::invalid_argument with Filter::parse's reason.
std::vector<std::string> parse_plumbing(std::string_view text);

}  // namespace settings

LIVEHEAP_API_END
