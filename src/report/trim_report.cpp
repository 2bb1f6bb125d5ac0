// The POST /trim value: JSON, strict reading, text.
#include "liveheap/trim_report.hpp"

#include "liveheap/format.hpp"
#include "strict_json.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace {

using namespace report;

std::string trim_size(std::int64_t bytes) { return format_size(static_cast<double>(bytes), false); }

TrimReport read_trim(const json& j) {
  return {boolean(j, "", "released"),         text(j, "", "allocator"),     text(j, "", "action"),
          integer(j, "", "tracker_released"), integer(j, "", "rss_before"), integer(j, "", "rss_after")};
}

}  // namespace

bool trim_released(std::string_view action, std::int64_t rss_before, std::int64_t rss_after) {
  return action.starts_with("malloc_trim") ? action.ends_with("released memory") : rss_after < rss_before;
}

std::string to_json(const TrimReport& r) {
  return dump({{"released", r.released},
               {"allocator", r.allocator},
               {"action", r.action},
               {"tracker_released", r.tracker_released},
               {"rss_before", r.rss_before},
               {"rss_after", r.rss_after}});
}

TrimReport trim_report_from_json(std::string_view text) {
  return read_strictly("trim JSON", text, read_trim);
}

std::string to_text(const TrimReport& r) {
  return r.action + ": rss " + trim_size(r.rss_before) + " -> " + trim_size(r.rss_after) +
         (r.tracker_released > 0
              ? "; liveheap gave back " + trim_size(r.tracker_released) + " of freed samples"
              : "");
}

LIVEHEAP_NAMESPACE_END
