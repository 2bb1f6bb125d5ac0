// Request targets and query parameters, parsed strictly (see query.hpp).
#include "query.hpp"

#include <array>

#include "liveheap/settings.hpp"
#include "liveheap/tracker.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {
namespace {

struct ParamName {
  std::string_view name;
  Param param;
};
constexpr std::array kParamNames{
    ParamName{"format", kFormat},   ParamName{"key", kKey},
    ParamName{"limit", kLimit},     ParamName{"cumulative", kCumulative},
    ParamName{"include", kFilters}, ParamName{"exclude", kFilters},
    ParamName{"seconds", kSeconds}, ParamName{"mode", kStartOptions},
    ParamName{"frames", kStartOptions}, ParamName{"sample_interval", kStartOptions},
    ParamName{"max_tracker_memory", kStartOptions},
    ParamName{"traceback", kTraceback},
    ParamName{"pid", kPid},
    ParamName{"verdicts", kVerdicts},
    ParamName{"missing_baseline", kMissingBaseline},
    ParamName{"route", kRouteFilter},
};

[[noreturn]] void bad_request(const std::string& reason) {
  throw RequestError(Status::bad_request, reason);
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Length of the well-formed UTF-8 sequence at text[at] (RFC 3629: no overlongs, no
// surrogates, nothing above U+10FFFF), or 0.
std::size_t utf8_length(std::string_view text, std::size_t at) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the allowed range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) length = 2;
  else if (lead == 0xE0) length = 3, low = 0xA0;
  else if (lead >= 0xE1 && lead <= 0xEF) length = 3, high = lead == 0xED ? 0x9F : 0xBF;
  else if (lead == 0xF0) length = 4, low = 0x90;
  else if (lead >= 0xF1 && lead <= 0xF3) length = 4;
  else if (lead == 0xF4) length = 4, high = 0x8F;
  else return 0;
  if (at + length > text.size() || byte(at + 1) < low || byte(at + 1) > high) return 0;
  for (std::size_t i = 2; i < length; ++i)
    if (byte(at + i) < 0x80 || byte(at + i) > 0xBF) return 0;
  return length;
}

// Strict percent-decoding; the result must be UTF-8 without control characters, since it
// ends up in globs, reasons and JSON. `what` names the part for the reason.
std::string decode(std::string_view text, bool plus_is_space, std::string_view what) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%') {
      const bool complete = i + 2 < text.size();
      const int high = complete ? hex_value(text[i + 1]) : -1;
      const int low = complete ? hex_value(text[i + 2]) : -1;
      if (high < 0 || low < 0)
        bad_request("bad percent-encoding " + excerpt(text.substr(i, 3)) + " in the " +
                    std::string(what) + " (expected %XX with two hex digits)");
      out += static_cast<char>(high * 16 + low);
      i += 2;
    } else {
      out += plus_is_space && c == '+' ? ' ' : c;
    }
  }
  for (std::size_t i = 0; i < out.size();) {
    const unsigned char c = static_cast<unsigned char>(out[i]);
    if (c < 0x20 || c == 0x7F)
      bad_request("control character in the " + std::string(what));
    const std::size_t length = utf8_length(out, i);
    if (length == 0) bad_request("the " + std::string(what) + " is not valid UTF-8");
    i += length;
  }
  return out;
}

// A whole number in the setting's range (liveheap/settings.hpp), or a 400 naming it.
std::uint64_t parse_number(std::string_view name, std::string_view text, settings::Range range) {
  if (const auto value = settings::parse_whole(text, range)) return *value;
  bad_request(settings::not_a_whole_number(name, excerpt(text), range));
}

// 0 or 1, or a 400 naming the parameter.
bool parse_flag(std::string_view name, const std::string& value) {
  if (const auto flag = settings::parse_flag(value)) return *flag;
  bad_request(std::string(name) + "=" + excerpt(value) + " is not 0 or 1");
}

// include=GLOB matches the user frame's file; include=function:GLOB its function.
void add_filter(Query& query, bool inclusive, const std::string& value) {
  constexpr std::string_view kFunction = "function:";
  const bool by_function = value.starts_with(kFunction);
  const std::string pattern = by_function ? value.substr(kFunction.size()) : value;
  const char* name = inclusive ? "include" : "exclude";
  if (pattern.empty()) bad_request(std::string(name) + "= needs a glob, e.g. " + name + "=*.cpp");
  try {
    query.filters.emplace_back(inclusive, pattern,
                               by_function ? Filter::Field::function : Filter::Field::file);
  } catch (const std::invalid_argument& e) {
    bad_request(std::string(name) + "=" + excerpt(value) + ": " + e.what());
  }
  (inclusive ? query.include : query.exclude).push_back(value);
}

std::string taken_names(ParamSet allowed) {
  std::string names;
  for (const ParamName& p : kParamNames)
    if (allowed & p.param) names += (names.empty() ? "" : ", ") + std::string(p.name);
  return names.empty() ? "no parameters" : names;
}

void set_param(Query& query, std::string_view name, const std::string& value, ParamSet allowed) {
  if (name == "format") {
    const std::string formats = std::string("text or json") +
                                (allowed & kFolded2 ? ", folded, folded2" : allowed & kFolded ? ", folded" : "");
    if (value == "folded" && (allowed & kFolded)) query.format = Format::folded;
    else if (value == "folded2" && (allowed & kFolded2)) query.format = Format::folded2;
    else if (value != "text" && value != "json") bad_request("format=" + excerpt(value) + " is not " + formats);
    else query.format = value == "json" ? Format::json : Format::text;
  } else if (name == "key") {
    try {
      query.key = parse_key_type(value);
    } catch (const std::invalid_argument&) {
      bad_request("key=" + excerpt(value) + " is not one of line, file, function, traceback, route");
    }
  } else if (name == "limit") {
    query.limit = parse_number(name, value, settings::kLimit);
  } else if (name == "cumulative") {
    query.cumulative = parse_flag(name, value);
  } else if (name == "include" || name == "exclude") {
    add_filter(query, name == "include", value);
  } else if (name == "route") {
    if (value.empty()) bad_request("route= needs a glob, e.g. route=GET*");
    try {
      route_matches("", {value});
    } catch (const std::invalid_argument& e) {
      bad_request("route=" + excerpt(value) + ": " + e.what());
    }
    query.routes.push_back(value);
  } else if (name == "seconds") {
    query.seconds = static_cast<unsigned>(parse_number(name, value, settings::kSeconds));
  } else if (name == "mode") {
    query.mode = settings::parse_start_mode(value);
    if (!query.mode) bad_request("mode=" + excerpt(value) + " is not exact or sampled");
  } else if (name == "frames") {
    query.frames = static_cast<unsigned>(parse_number(name, value, settings::kFrames));
  } else if (name == "sample_interval") {
    query.sample_interval = parse_number(name, value, settings::kHttpSampleInterval);
  } else if (name == "max_tracker_memory") {
    try {
      query.max_tracker_memory = settings::size(name, value, settings::kTrackerMemory);
    } catch (const std::invalid_argument&) {
      bad_request("max_tracker_memory=" + excerpt(value) +
                  " is not a size from 1 MiB to 1 TiB: a whole number with an optional unit B, "
                  "KiB, MiB, GiB or TiB (e.g. 256MiB)");
    }
  } else if (name == "traceback") {
    query.traceback = parse_flag(name, value);
  } else if (name == "verdicts") {
    query.verdicts = parse_flag(name, value);
  } else if (name == "missing_baseline") {
    if (value != "error" && value != "empty")
      bad_request("missing_baseline=" + excerpt(value) + " is not error or empty");
    query.diff_nothing_without_baseline = value == "empty";
  } else if (name == "pid") {
    const auto pid = settings::parse_whole(value, settings::kPid);
    if (value != "all" && !pid)
      bad_request("pid=" + excerpt(value) + " is not a process id (1 to " + std::to_string(kMaxPid) +
                  ") or all");
    query.pid = value == "all" ? kAllProcesses : static_cast<long>(*pid);
  }
}

}  // namespace

std::string excerpt(std::string_view text) {
  constexpr std::size_t kMaxQuoted = 60;
  std::string out = "'";
  for (std::size_t i = 0; i < text.size() && i < kMaxQuoted; ++i)
    out += text[i] >= 0x20 && text[i] < 0x7F ? text[i] : '?';
  if (text.size() > kMaxQuoted) out += "...";
  return out + "'";
}

Target split_target(std::string_view target) {
  if (target.empty() || target.front() != '/')
    bad_request("the request target must be an absolute path, e.g. /debug/memory/stats");
  const auto mark = target.find('?');
  const std::string_view path = target.substr(0, mark);
  if (target.find('#') != std::string_view::npos) bad_request("a request target has no #fragment");
  return {decode(path, false, "path"),
          mark == std::string_view::npos ? std::string_view() : target.substr(mark + 1)};
}

Query parse_query(std::string_view text, ParamSet allowed) {
  Query query;
  ParamSet seen = 0;
  while (!text.empty()) {
    const auto amp = text.find('&');
    const std::string_view pair = text.substr(0, amp);
    text = amp == std::string_view::npos ? std::string_view() : text.substr(amp + 1);
    if (pair.empty()) continue;  // "a=1&&b=2", a trailing '&': nothing was said
    const auto eq = pair.find('=');
    const std::string name = decode(pair.substr(0, eq), true, "parameter name");
    const ParamName* known = nullptr;
    for (const ParamName& p : kParamNames)
      if (p.name == name) known = &p;
    if (known == nullptr || !(allowed & known->param))
      bad_request("unknown parameter " + excerpt(name) + " (this route takes " +
                  taken_names(allowed) + ")");
    if (eq == std::string_view::npos) bad_request("parameter " + excerpt(name) + " needs a value");
    const std::string value = decode(pair.substr(eq + 1), true, "value of " + name);
    // One bit per name, so that the filters (which share a Param) may repeat.
    const unsigned bit = 1u << (known - kParamNames.data());
    if ((seen & bit) && known->param != kFilters && known->param != kRouteFilter)
      bad_request("parameter " + excerpt(name) + " given twice");
    seen |= bit;
    set_param(query, name, value, allowed);
  }
  if (query.cumulative && query.key == KeyType::traceback)
    bad_request("cumulative=1 does not apply to key=traceback");
  return query;
}

}  // namespace http
LIVEHEAP_NAMESPACE_END
