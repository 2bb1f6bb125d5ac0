// liveheap-watch's rounds. The server sends JSON; text is rendered here with the report
// layer's own formatting, so a line reads exactly as the server's text /diff?verdicts=1
// would print it (the verdict is the server's: this tool never classifies a trend itself).
#include "watch.hpp"

#include <cctype>
#include <chrono>
#include <ctime>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "http_client.hpp"
#include "liveheap/format.hpp"
#include "liveheap/history.hpp"

namespace liveheap::cli {
namespace {

using nlohmann::json;

// Query values are percent-encoded except for unreserved characters and what globs and
// "function:" need: * ? : /.
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

// "&pid=N" or "&pid=all" when --pid is given: every request is answered by that process
// (or by all of them, merged), through the process holding the port.
std::string pid_param(const WatchOptions& options) {
  return options.pid.empty() ? "" : "&pid=" + options.pid;
}

std::string diff_target(const WatchOptions& options) {
  std::string target = "/diff?format=json&key=" + options.key +
                       "&limit=" + std::to_string(options.limit) + pid_param(options);
  for (const std::string& glob : options.include) target += "&include=" + percent_encode(glob);
  for (const std::string& glob : options.exclude) target += "&exclude=" + percent_encode(glob);
  return target;
}

// The first line of `text`, at most 200 characters: enough to recognise what came back.
std::string excerpt(std::string_view text) {
  text = text.substr(0, text.find('\n'));
  if (text.size() > 200) return std::string(text.substr(0, 200)) + "...";
  return std::string(text);
}

// What a failed status means for someone running this tool. A 404 with --pid is usually
// the server saying that process is not in its group: its reason says so, no hint needed.
std::string_view hint(unsigned status, const WatchOptions& options) {
  switch (status) {
    case 401: return " (pass --token or set LIVEHEAP_TOKEN)";
    case 404:
      return options.pid.empty() ? " (is liveheap mounted at this URL? see --url/--prefix)" : "";
    case 409: return " (or run liveheap-watch with --baseline)";
    default: return "";
  }
}

// Sends the request and returns its JSON body; a failed status or a body that is not JSON
// is a ServerError quoting the server's one-line reason.
json fetch_json(const WatchOptions& options, std::string_view method, const std::string& target) {
  const HttpReply reply =
      send_request(options.endpoint, method, target, options.token, options.timeout);
  const std::string what = std::string(method) + " " + options.endpoint.url() + target;
  json body = json::parse(reply.body, nullptr, /*allow_exceptions=*/false);
  if (reply.status != 200) {
    const bool has_reason = body.is_object() && body.contains("error") && body["error"].is_string();
    const std::string reason = has_reason ? body["error"].get<std::string>() : excerpt(reply.body);
    throw ServerError(what + ": " + std::to_string(reply.status) + " " + reply.reason + ": " +
                      reason + std::string(hint(reply.status, options)));
  }
  if (!body.is_object())
    throw ServerError(what + " answered with something that is not JSON: '" +
                      excerpt(reply.body) + "'");
  return body;
}

// True when `diff` has the fields every round reads, as numbers.
bool is_diff(const json& diff) {
  if (!diff.contains("total") || !diff["total"].is_object() || !diff.contains("stats") ||
      !diff["stats"].is_array())
    return false;
  for (const char* field : {"size", "size_diff", "count", "count_diff"})
    if (!diff["total"].contains(field) || !diff["total"][field].is_number_integer()) return false;
  return true;
}

Frame frame_from_json(const json& j) {
  Frame frame;
  frame.function = j.value("function", "");
  frame.file = j.value("file", "");
  frame.line = j.value("line", 0u);
  frame.module = j.value("module", "");
  return frame;
}

// A statistic of the server's JSON back as a value, so that the report layer formats it.
// Its key is the user frame the server chose, or the whole stack for key=traceback.
StatisticDiff statistic_from_json(const json& stat, KeyType key) {
  std::vector<Frame> frames;
  if (key == KeyType::traceback && stat.contains("traceback") && stat["traceback"].is_array())
    for (const json& frame : stat["traceback"]) frames.push_back(frame_from_json(frame));
  if (frames.empty()) frames.push_back(frame_from_json(stat));
  return {Traceback(std::move(frames)), stat.value("size", std::int64_t{0}),
          stat.value("size_diff", std::int64_t{0}), stat.value("count", std::int64_t{0}),
          stat.value("count_diff", std::int64_t{0})};
}

// The server's verdict on a statistic, back as the report model's value; nullopt when the
// stat has none (a server older than the history) or an unknown word.
std::optional<Verdict> verdict_from_json(const json& stat) {
  if (!stat.contains("verdict") || !stat["verdict"].is_string()) return std::nullopt;
  const std::optional<Trend> trend = parse_trend(stat["verdict"].get<std::string>());
  if (!trend) return std::nullopt;
  Verdict verdict;
  verdict.trend = *trend;
  const auto number = [&](const char* field) {
    return stat.contains(field) && stat[field].is_number() ? stat[field].get<double>() : 0.0;
  };
  verdict.growth_per_min = number("growth_per_min");
  verdict.since_last_growth_s = number("since_last_growth_s");
  return verdict;
}

std::string signed_count(std::int64_t n) { return (n >= 0 ? "+" : "") + std::to_string(n); }

std::string clock_time() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[16];
  std::strftime(text, sizeof text, "%H:%M:%S", &local);
  return text;
}

void print_text(std::ostream& out, std::uint64_t round, const WatchOptions& options,
                const json& diff) {
  const json& total = diff["total"];
  out << "round " << round << " at " << clock_time() << ", " << options.endpoint.url()
      << ": size=" << format_size(total["size"].get<double>(), false) << " ("
      << format_size(total["size_diff"].get<double>(), true)
      << "), count=" << total["count"].get<std::int64_t>() << " ("
      << signed_count(total["count_diff"].get<std::int64_t>()) << ") since the baseline";
  if (diff.contains("pids") && diff["pids"].is_array())
    out << " of pids " << diff["pids"].dump();
  else if (!options.pid.empty())
    out << " of pid " << options.pid;
  if (diff.contains("mode") && diff["mode"].is_string())
    out << " (mode=" << diff["mode"].get<std::string>() << ")";
  out << "\n";
  if (diff.contains("failed") && diff["failed"].is_array())  // pid=all: who did not answer
    for (const json& f : diff["failed"])
      if (f.is_object())
        out << "pid " << f.value("pid", 0L) << " did not answer: " << f.value("error", "") << "\n";
  const KeyType key = parse_key_type(options.key);
  for (const json& stat : diff["stats"]) {
    if (!stat.is_object()) continue;
    const StatisticDiff diff_stat = statistic_from_json(stat, key);
    const std::optional<Verdict> verdict = verdict_from_json(stat);
    out << format_statistic_diff(diff_stat, key) << (verdict ? verdict_text(*verdict) : "") << "\n";
    if (key == KeyType::traceback)  // the whole stack, as /tracebacks prints it
      for (const std::string& line : format_traceback(diff_stat.traceback)) out << line << "\n";
  }
  out << std::endl;
}

void print_json(std::ostream& out, std::uint64_t round, const WatchOptions& options, json diff) {
  diff["round"] = round;
  diff["url"] = options.endpoint.url();
  diff["time_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
  out << diff.dump(-1, ' ', false, json::error_handler_t::replace) << std::endl;
}

}  // namespace

int watch(const WatchOptions& options, std::ostream& out, std::ostream& err) {
  if (options.baseline) fetch_json(options, "POST", "/baseline?format=json" + pid_param(options));
  const std::string target = diff_target(options);
  for (std::uint64_t round = 1; !options.rounds || round <= *options.rounds; ++round) {
    std::this_thread::sleep_for(options.interval);
    const json diff = fetch_json(options, "GET", target);
    if (!is_diff(diff))
      throw ServerError("GET " + options.endpoint.url() + target +
                        " answered JSON that is not a liveheap diff: '" + excerpt(diff.dump()) +
                        "'");
    if (options.json) print_json(out, round, options, diff);
    else print_text(out, round, options, diff);

    if (options.fail_on_growing) {
      // The first row (biggest growth first) the server calls growing over the threshold.
      const KeyType key = parse_key_type(options.key);
      for (const json& stat : diff["stats"]) {
        if (!stat.is_object()) continue;
        const std::optional<Verdict> verdict = verdict_from_json(stat);
        const StatisticDiff site = statistic_from_json(stat, key);
        if (!verdict || verdict->trend != Trend::growing || site.size_diff <= *options.fail_on_growing)
          continue;
        // The server's own name for the row ("file:line", a function, a file).
        const std::string name = stat.contains("key") && stat["key"].is_string()
                                     ? stat["key"].get<std::string>() : format_statistic_diff(site, key);
        err << "liveheap-watch: " << name << " is growing (+"
            << format_size(verdict->growth_per_min, false) << "/min): "
            << format_size(static_cast<double>(site.size_diff), true) << " since the baseline, size="
            << format_size(static_cast<double>(site.size), false) << ", at round " << round
            << ", over --fail-on-growing "
            << format_size(static_cast<double>(*options.fail_on_growing), false) << " ("
            << *options.fail_on_growing << " B)" << std::endl;
        return kExitOverThreshold;
      }
    }

    const std::int64_t growth = diff["total"]["size_diff"].get<std::int64_t>();
    if (options.fail_over && growth > *options.fail_over) {
      err << "liveheap-watch: total growth " << format_size(static_cast<double>(growth), true)
          << " (" << growth << " B) at round " << round << " is over --fail-over "
          << format_size(static_cast<double>(*options.fail_over), false) << " ("
          << *options.fail_over << " B)" << std::endl;
      return kExitOverThreshold;
    }
  }
  if (options.fail_over)
    err << "liveheap-watch: total growth stayed within --fail-over "
        << format_size(static_cast<double>(*options.fail_over), false) << std::endl;
  if (options.fail_on_growing)
    err << "liveheap-watch: no callsite the server calls growing grew by more than --fail-on-growing "
        << format_size(static_cast<double>(*options.fail_on_growing), false) << std::endl;
  return kExitOk;
}

}  // namespace liveheap::cli
