// JSON renderings of report values: the text reports' fields, as numbers.
#include <cstdio>

#include "liveheap/format.hpp"
#include "liveheap/json.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace {

// Addresses as hex strings: JSON numbers lose precision above 2^53.
std::string hex(std::uintptr_t address) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%zx", static_cast<std::size_t>(address));
  return text;
}

nlohmann::json key_fields(const Traceback& key, KeyType key_type, std::int64_t size, std::int64_t count) {
  static const Frame kNone;
  const Frame& f = key.empty()                      ? kNone
                   : key_type == KeyType::traceback ? key[user_frame_index(key)]
                                                    : key.front();
  return {{"key", format_key(key, key_type)},
          {"function", f.function},
          {"short_function", shown_function(f)},
          {"kind", frame_kind(f)},
          {"file", f.file},
          {"line", f.line},
          {"module", f.module},
          {"size", size},
          {"count", count},
          {"average", count == 0 ? 0.0 : static_cast<double>(size) / static_cast<double>(count)},
          {"traceback", to_json(key)}};
}

}  // namespace

nlohmann::json to_json(const Frame& frame) {
  return {{"function", frame.function},   {"short_function", shown_function(frame)},
          {"kind", frame_kind(frame)},    {"file", frame.file},
          {"line", frame.line},           {"module", frame.module},
          {"address", hex(frame.address)}};
}

nlohmann::json to_json(const Traceback& traceback) {
  nlohmann::json frames = nlohmann::json::array();
  for (const Frame& f : traceback) frames.push_back(to_json(f));
  return frames;
}

nlohmann::json to_json(const Statistic& stat, KeyType key_type) {
  return key_fields(stat.traceback, key_type, stat.size, stat.count);
}

nlohmann::json to_json(const StatisticDiff& stat, KeyType key_type) {
  nlohmann::json j = key_fields(stat.traceback, key_type, stat.size, stat.count);
  j["size_diff"] = stat.size_diff;
  j["count_diff"] = stat.count_diff;
  return j;
}

nlohmann::json to_json(const SnapshotInfo& info) {
  return {{"mode", to_string(info.mode)},          {"sample_interval", info.sample_interval},
          {"max_frames", info.max_frames},         {"taken_at_ms", info.taken_at_ms},
          {"traced_current", info.traced_current}, {"traced_peak", info.traced_peak},
          {"tracker_memory", info.tracker_memory}, {"tracker_memory_cap", to_json(info.cap)}};
}

nlohmann::json to_json(const TrackerMemoryCap& cap) {
  return {{"max_bytes", cap.max_bytes},           {"reached", cap.reached},
          {"folded_blocks", cap.folded_blocks},   {"folded_bytes", cap.folded_bytes},
          {"dropped_blocks", cap.dropped_blocks}, {"dropped_bytes", cap.dropped_bytes}};
}

LIVEHEAP_NAMESPACE_END
