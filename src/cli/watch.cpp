// liveheap-watch's rounds. The server sends the report document as JSON, read back with the
// report layer's report_from_json; text is rendered with its own formatting, so a line reads
// exactly as the server's text /diff?verdicts=1 would print it (the verdict is the server's:
// this tool never classifies a trend itself).
#include "watch.hpp"

#include <chrono>
#include <ctime>
#include <optional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "http_client.hpp"
#include "liveheap/format.hpp"
#include "liveheap/history.hpp"
#include "liveheap/json.hpp"
#include "liveheap/processes_report.hpp"
#include "liveheap/report.hpp"
#include "liveheap/report_query.hpp"

namespace liveheap::cli {
namespace {

using nlohmann::json;

// Without --pid: every process merged when the program has several (a prefork server's
// master serves no request: its own heap alone would say nothing grew), else the holder.
// A server that cannot list its processes is one process.
WatchOptions resolved(WatchOptions options) {
  if (!options.pid.empty()) return options;
  try {
    const HttpReply reply =
        send_request(options.endpoint, "GET", "/processes?format=json", options.token, options.timeout);
    if (reply.status == 200 && processes_report_from_json(reply.body).processes.size() > 1)
      options.pid = "all";
  } catch (...) {  // unreachable: the first round's request says so, in its own words
  }
  return options;
}

// pid=N or pid=all: every request is answered by that process (or by all of them, merged),
// through the process holding the port; none for the holder itself ("port", or no --pid).
std::optional<long> asked_pid(const WatchOptions& options) {
  if (options.pid == "all") return query::kAllProcesses;
  if (options.pid.empty() || options.pid == "port") return std::nullopt;
  return std::stol(options.pid);
}

// The request's query as JSON, of the process asked for.
ReportQuery json_query(const WatchOptions& options) {
  ReportQuery query;
  query.format = AnswerFormat::json;
  query.pid = asked_pid(options);
  return query;
}

// GET /diff of the key, limit and filters asked for.
std::string diff_target(const WatchOptions& options) {
  ReportQuery query = json_query(options);
  query.key = parse_key_type(options.key);
  query.limit = options.limit;
  query.include = options.include;
  query.exclude = options.exclude;
  return "/diff?" + to_query(query);
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
    case 404: return options.pid.empty() ? " (is liveheap mounted at this URL? see --url/--prefix)" : "";
    case 409: return " (or run liveheap-watch with --baseline)";
    default: return "";
  }
}

// Sends the request and returns its JSON body; a failed status or a body that is not JSON
// is a ServerError quoting the server's one-line reason.
json fetch_json(const WatchOptions& options, std::string_view method, const std::string& target) {
  const HttpReply reply = send_request(options.endpoint, method, target, options.token, options.timeout);
  const std::string what = std::string(method) + " " + options.endpoint.url() + target;
  json body = json::parse(reply.body, nullptr, /*allow_exceptions=*/false);
  if (reply.status != 200) {
    const bool has_reason = body.is_object() && body.contains("error") && body["error"].is_string();
    const std::string reason = has_reason ? body["error"].get<std::string>() : excerpt(reply.body);
    throw ServerError(what + ": " + std::to_string(reply.status) + " " + reply.reason + ": " + reason +
                      std::string(hint(reply.status, options)));
  }
  if (!body.is_object())
    throw ServerError(what + " answered with something that is not JSON: '" + excerpt(reply.body) + "'");
  return body;
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

void print_text(std::ostream& out, std::uint64_t round, const WatchOptions& options, const Report& diff) {
  const ReportTotal& total = diff.total;
  out << "round " << round << " at " << clock_time() << ", " << options.endpoint.url()
      << ": size=" << format_size(static_cast<double>(total.size), false) << " ("
      << format_size(static_cast<double>(total.size_diff), true) << "), count=" << total.count << " ("
      << signed_count(total.count_diff) << ") since the baseline";
  if (diff.pids)
    out << " of pids " << nlohmann::json(*diff.pids).dump() << " (" << diff.pids->size()
        << " processes merged)";
  else if (asked_pid(options)) out << " of pid " << options.pid;
  out << " (mode=" << to_string(diff.mode) << ")\n";
  for (const ReportFailure& f : diff.failed)  // pid=all: who did not answer
    out << "pid " << f.pid << " did not answer: " << f.error << "\n";
  for (const Report::Process& p : diff.processes) out << to_text(p) << "\n";  // pid=all: which one grows
  if (diff.group_processes)                                                   // --pid chose one of several
    out << "(1 of the " << *diff.group_processes << " processes of this program: --pid all merges them)\n";
  for (const ReportLine& line : diff.lines) {
    out << to_text(line, true) << verdict_text(line.verdict.value_or(Verdict{})) << "\n";
    if (diff.request.key == KeyType::traceback &&
        line.traceback)  // the whole stack, as /tracebacks prints it
      for (const std::string& frame : format_traceback(*line.traceback)) out << frame << "\n";
  }
  out << std::endl;
}

void print_json(std::ostream& out, std::uint64_t round, const WatchOptions& options, const Report& diff) {
  json document = to_json_value(diff);
  document["round"] = round;
  document["url"] = options.endpoint.url();
  document["time_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  out << document.dump(-1, ' ', false, json::error_handler_t::replace) << std::endl;
}

// The server's answer read as a diff report; anything else is a ServerError saying what.
Report read_diff(const WatchOptions& options, const std::string& target, const json& body) {
  try {
    Report report = report_from_json(body);
    if (!report.diff) throw std::invalid_argument("report JSON: against is missing");
    return report;
  } catch (const std::invalid_argument& e) {
    throw ServerError("GET " + options.endpoint.url() + target +
                      " answered JSON that is not a liveheap diff (" + e.what() + "): '" +
                      excerpt(body.dump(-1, ' ', false, json::error_handler_t::replace)) + "'");
  }
}

}  // namespace

int watch(const WatchOptions& given, std::ostream& out, std::ostream& err) {
  const WatchOptions options = resolved(given);
  if (options.baseline) fetch_json(options, "POST", "/baseline?" + to_query(json_query(options)));
  const std::string target = diff_target(options);
  for (std::uint64_t round = 1; !options.rounds || round <= *options.rounds; ++round) {
    std::this_thread::sleep_for(options.interval);
    const Report diff = read_diff(options, target, fetch_json(options, "GET", target));
    if (options.json) print_json(out, round, options, diff);
    else print_text(out, round, options, diff);

    if (options.fail_on_growing) {
      // The first row (biggest growth first) the server calls growing over the threshold.
      for (const ReportLine& site : diff.lines) {
        if (!site.verdict || site.verdict->trend != Trend::growing ||
            site.size_diff <= *options.fail_on_growing)
          continue;
        const Verdict* verdict = &*site.verdict;
        const std::string& name = site.key;  // the server's own name for the row
        // The server's reasons after the rate: ", retains 100%, idle 3 s" of the verdict's text
        // " [growing, retains 100%, idle 3 s]".
        const std::string text = verdict_text(*verdict);
        const std::size_t from = text.find(',');
        const std::string reasons =
            from == std::string::npos ? "" : text.substr(from, text.size() - 1 - from);
        err << "liveheap-watch: " << name << " is growing (+" << format_size(verdict->growth_per_min, false)
            << "/min" << reasons << "): " << format_size(static_cast<double>(site.size_diff), true)
            << " since the baseline, size=" << format_size(static_cast<double>(site.size), false)
            << ", at round " << round << ", over --fail-on-growing "
            << format_size(static_cast<double>(*options.fail_on_growing), false) << " ("
            << *options.fail_on_growing << " B)" << std::endl;
        return kExitOverThreshold;
      }
    }

    const std::int64_t growth = diff.total.size_diff;
    if (options.fail_over && growth > *options.fail_over) {
      err << "liveheap-watch: total growth " << format_size(static_cast<double>(growth), true) << " ("
          << growth << " B) at round " << round << " is over --fail-over "
          << format_size(static_cast<double>(*options.fail_over), false) << " (" << *options.fail_over
          << " B)" << std::endl;
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
