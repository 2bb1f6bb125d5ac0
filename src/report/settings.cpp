// Every setting's limits and parser (see liveheap/settings.hpp).
#include "liveheap/settings.hpp"

#include <string>
#include <utility>
#include <stdexcept>

LIVEHEAP_NAMESPACE_BEGIN
namespace settings {

std::optional<std::uint64_t> parse_whole(std::string_view text, Range range) noexcept {
  return detail::whole_number(text, range);
}

std::string not_a_whole_number(std::string_view name, std::string_view quoted, Range range) {
  return std::string(name) + "=" + std::string(quoted) + " is not a whole number from " +
         std::to_string(range.min) + " to " + std::to_string(range.max);
}

std::uint64_t whole(std::string_view name, std::string_view text, Range range) {
  if (const auto value = parse_whole(text, range)) return *value;
  throw std::invalid_argument(not_a_whole_number(name, "'" + std::string(text) + "'", range));
}

std::string out_of_range(std::string_view name, std::uint64_t value, Range range, std::string_view unit,
                         std::string_view max_text) {
  return std::string(name) + " must be " + std::to_string(range.min) + ".." +
         (max_text.empty() ? std::to_string(range.max) : std::string(max_text)) + std::string(unit) +
         ", got " + std::to_string(value);
}

std::optional<bool> parse_flag(std::string_view text) noexcept {
  if (text == "0") return false;
  if (text == "1") return true;
  return std::nullopt;
}

std::optional<Mode> parse_start_mode(std::string_view text) noexcept {
  if (text == "exact") return Mode::exact;
  if (text == "sampled") return Mode::sampled;
  return std::nullopt;
}

std::vector<std::string> parse_plumbing(std::string_view text) {
  std::vector<std::string> globs;
  for (std::size_t start = 0; start <= text.size();) {
    std::size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view item = text.substr(start, end - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    Filter::parse(true, item);  // throws for an empty or malformed glob
    globs.emplace_back(item);
    start = end + 1;
  }
  return globs;
}

std::uint64_t size(std::string_view name, std::string_view text, Range range) {
  if (const auto value = detail::size_in_bytes(text, range)) return *value;
  throw std::invalid_argument(std::string(name) + "='" + std::string(text) + "' is not a size from " +
                              std::to_string(range.min) + " to " + std::to_string(range.max) +
                              " bytes: a whole number with an optional unit B, KiB, MiB, GiB or "
                              "TiB (e.g. 268435456, 256MiB, 1GiB)");
}

}  // namespace settings
LIVEHEAP_NAMESPACE_END
