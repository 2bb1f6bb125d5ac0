// What a request to the routes asks: the parameters' names, the strict parser, and the
// query written back (see liveheap/report_query.hpp).
#include "liveheap/report_query.hpp"

#include <array>
#include <cctype>

LIVEHEAP_NAMESPACE_BEGIN
namespace {

using namespace query;

// Every parameter's name, once: the parser's, to_query's and the refusals' list, in the
// order to_query writes them.
enum class Name : std::size_t {
  format,
  key,
  limit,
  cumulative,
  include,
  exclude,
  route,
  seconds,
  mode,
  frames,
  sample_interval,
  max_tracker_memory,
  traceback,
  verdicts,
  pid,
  missing_baseline
};
struct ParamName {
  std::string_view name;
  Param param;
};
constexpr std::array kParamNames{
    ParamName{"format", kFormat},
    ParamName{"key", kKey},
    ParamName{"limit", kLimit},
    ParamName{"cumulative", kCumulative},
    ParamName{"include", kFilters},
    ParamName{"exclude", kFilters},
    ParamName{"route", kRouteFilter},
    ParamName{"seconds", kSeconds},
    ParamName{"mode", kStartOptions},
    ParamName{"frames", kStartOptions},
    ParamName{"sample_interval", kStartOptions},
    ParamName{"max_tracker_memory", kStartOptions},
    ParamName{"traceback", kTraceback},
    ParamName{"verdicts", kVerdicts},
    ParamName{"pid", kPid},
    ParamName{"missing_baseline", kMissingBaseline},
};
static_assert(kParamNames.size() == static_cast<std::size_t>(Name::missing_baseline) + 1);

std::string_view name_of(Name name) { return kParamNames[static_cast<std::size_t>(name)].name; }

[[noreturn]] void bad_request(const std::string& reason) { throw QueryError(reason); }

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
std::string decode_strictly(std::string_view text, bool plus_is_space, std::string_view what) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%') {
      const bool complete = i + 2 < text.size();
      const int high = complete ? hex_value(text[i + 1]) : -1;
      const int low = complete ? hex_value(text[i + 2]) : -1;
      if (high < 0 || low < 0)
        bad_request("bad percent-encoding " + excerpt(text.substr(i, 3)) + " in the " + std::string(what) +
                    " (expected %XX with two hex digits)");
      out += static_cast<char>(high * 16 + low);
      i += 2;
    } else {
      out += plus_is_space && c == '+' ? ' ' : c;
    }
  }
  for (std::size_t i = 0; i < out.size();) {
    const unsigned char c = static_cast<unsigned char>(out[i]);
    if (c < 0x20 || c == 0x7F) bad_request("control character in the " + std::string(what));
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
void add_filter(ReportQuery& query, bool inclusive, const std::string& value) {
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

void set_param(ReportQuery& query, Name which, const std::string& value, ParamSet allowed) {
  using enum Name;
  const std::string_view name = name_of(which);
  if (which == format) {
    const std::string formats = std::string("text or json") + (allowed & kFolded2  ? ", folded, folded2"
                                                               : allowed & kFolded ? ", folded"
                                                                                   : "");
    if (value == "folded" && (allowed & kFolded)) query.format = AnswerFormat::folded;
    else if (value == "folded2" && (allowed & kFolded2)) query.format = AnswerFormat::folded2;
    else if (value != "text" && value != "json")
      bad_request("format=" + excerpt(value) + " is not " + formats);
    else query.format = value == "json" ? AnswerFormat::json : AnswerFormat::text;
  } else if (which == key) {
    try {
      query.key = parse_key_type(value);
    } catch (const std::invalid_argument&) {
      bad_request("key=" + excerpt(value) + " is not one of " + key_type_names(", "));
    }
  } else if (which == limit) {
    query.limit = parse_number(name, value, settings::kLimit);
  } else if (which == cumulative) {
    query.cumulative = parse_flag(name, value);
  } else if (which == include || which == exclude) {
    add_filter(query, which == include, value);
  } else if (which == route) {
    if (value.empty()) bad_request("route= needs a glob, e.g. route=GET*");
    try {
      route_matches("", {value});
    } catch (const std::invalid_argument& e) {
      bad_request("route=" + excerpt(value) + ": " + e.what());
    }
    query.routes.push_back(value);
  } else if (which == seconds) {
    query.seconds = static_cast<unsigned>(parse_number(name, value, settings::kSeconds));
  } else if (which == mode) {
    query.mode = settings::parse_start_mode(value);
    if (!query.mode) bad_request("mode=" + excerpt(value) + " is not exact or sampled");
  } else if (which == frames) {
    query.frames = static_cast<unsigned>(parse_number(name, value, settings::kFrames));
  } else if (which == sample_interval) {
    query.sample_interval = parse_number(name, value, settings::kHttpSampleInterval);
  } else if (which == max_tracker_memory) {
    try {
      query.max_tracker_memory = settings::size(name, value, settings::kTrackerMemory);
    } catch (const std::invalid_argument&) {
      bad_request("max_tracker_memory=" + excerpt(value) +
                  " is not a size from 1 MiB to 1 TiB: a whole number with an optional unit B, "
                  "KiB, MiB, GiB or TiB (e.g. 256MiB)");
    }
  } else if (which == traceback) {
    query.traceback = parse_flag(name, value);
  } else if (which == verdicts) {
    query.verdicts = parse_flag(name, value);
  } else if (which == missing_baseline) {
    if (value != "error" && value != "empty")
      bad_request("missing_baseline=" + excerpt(value) + " is not error or empty");
    query.diff_nothing_without_baseline = value == "empty";
  } else if (which == pid) {
    const auto pid = settings::parse_whole(value, settings::kPid);
    if (value != "all" && !pid)
      bad_request("pid=" + excerpt(value) + " is not a process id (1 to " + std::to_string(kMaxPid) +
                  ") or all");
    query.pid = value == "all" ? kAllProcesses : static_cast<long>(*pid);
  }
}

std::string_view format_name(AnswerFormat format) {
  switch (format) {
    case AnswerFormat::text: return "text";
    case AnswerFormat::json: return "json";
    case AnswerFormat::folded: return "folded";
    case AnswerFormat::folded2: return "folded2";
  }
  return "text";
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

std::string percent_decode(std::string_view text, bool plus_is_space, std::string_view what) {
  return decode_strictly(text, plus_is_space, what);
}

std::string percent_encode(std::string_view text) {
  constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || std::string_view("-._~*?:/").find(c) != std::string_view::npos) {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

ReportQuery parse_report_query(std::string_view text, ParamSet allowed) {
  ReportQuery query;
  ParamSet seen = 0;
  while (!text.empty()) {
    const auto amp = text.find('&');
    const std::string_view pair = text.substr(0, amp);
    text = amp == std::string_view::npos ? std::string_view() : text.substr(amp + 1);
    if (pair.empty()) continue;  // "a=1&&b=2", a trailing '&': nothing was said
    const auto eq = pair.find('=');
    const std::string name = decode_strictly(pair.substr(0, eq), true, "parameter name");
    const ParamName* known = nullptr;
    for (const ParamName& p : kParamNames)
      if (p.name == name) known = &p;
    if (known == nullptr || !(allowed & known->param))
      bad_request("unknown parameter " + excerpt(name) + " (this route takes " + taken_names(allowed) + ")");
    if (eq == std::string_view::npos) bad_request("parameter " + excerpt(name) + " needs a value");
    const std::string value = decode_strictly(pair.substr(eq + 1), true, "value of " + name);
    // One bit per name, so that the filters (which share a Param) may repeat.
    const unsigned bit = 1u << (known - kParamNames.data());
    if ((seen & bit) && known->param != kFilters && known->param != kRouteFilter)
      bad_request("parameter " + excerpt(name) + " given twice");
    seen |= bit;
    set_param(query, static_cast<Name>(known - kParamNames.data()), value, allowed);
  }
  if (query.cumulative && query.key == KeyType::traceback)
    bad_request("cumulative=1 does not apply to key=traceback");
  return query;
}

ReportRequest report_request(const ReportQuery& q) {
  return {q.key, q.limit, q.cumulative, q.include, q.exclude, q.traceback, q.routes};
}

std::string to_query(const ReportQuery& q) {
  using enum Name;
  std::string out;
  const auto add = [&out](Name name, std::string_view value) {
    out += (out.empty() ? "" : "&") + std::string(name_of(name)) + "=" + percent_encode(value);
  };
  const ReportQuery defaults;
  if (q.format) add(format, format_name(*q.format));
  if (q.key != defaults.key) add(key, to_string(q.key));
  if (q.limit != defaults.limit) add(limit, std::to_string(q.limit));
  if (q.cumulative) add(cumulative, "1");
  for (const std::string& glob : q.include) add(include, glob);
  for (const std::string& glob : q.exclude) add(exclude, glob);
  for (const std::string& glob : q.routes) add(route, glob);
  if (q.seconds != 0) add(seconds, std::to_string(q.seconds));
  if (q.mode) add(mode, to_string(*q.mode));
  if (q.frames) add(frames, std::to_string(*q.frames));
  if (q.sample_interval) add(sample_interval, std::to_string(*q.sample_interval));
  if (q.max_tracker_memory) add(max_tracker_memory, std::to_string(*q.max_tracker_memory));
  if (q.traceback) add(traceback, "1");
  if (q.verdicts) add(verdicts, "1");
  if (q.pid) add(pid, *q.pid == kAllProcesses ? "all" : std::to_string(*q.pid));
  if (q.diff_nothing_without_baseline) add(missing_baseline, "empty");
  return out;
}

LIVEHEAP_NAMESPACE_END
