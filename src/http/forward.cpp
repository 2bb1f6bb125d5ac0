// ?pid= and GET /processes (see forward.hpp).
#include "forward.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iterator>
#include <map>
#include <sstream>

#include <boost/beast/http/field.hpp>

#include "file_lines.hpp"
#include "endpoint.hpp"
#include "liveheap/format.hpp"
#include "liveheap/processes_report.hpp"
#include "liveheap/json.hpp"
#include "liveheap/report.hpp"
#include "local_client.hpp"
#include "registry.hpp"
#include "reports.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {
namespace {

namespace bh = boost::beast::http;
using nlohmann::json;
using std::chrono::milliseconds;

constexpr milliseconds kStatsTimeout{1000};  // one process's /stats for /processes

// every_key_since_nothing: every key, and a process without a baseline diffs against nothing.
enum class Ask { as_is, json, every_key, every_key_since_nothing };

// The request's target (`query`, as parsed) without pid= and, for a merge, asking for JSON
// (and every key, with its stack: merging and the text report need the frames).
std::string peer_target(std::string_view target, Query query, Ask ask) {
  query.pid.reset();
  if (ask != Ask::as_is) query.format = Format::json;
  if (ask == Ask::every_key || ask == Ask::every_key_since_nothing) {
    query.traceback = true;
    query.limit = kMaxLimit;
  }
  if (ask == Ask::every_key_since_nothing) query.diff_nothing_without_baseline = true;
  const std::string path(target.substr(0, target.find('?')));
  const std::string asked = to_query(query);
  return asked.empty() ? path : path + "?" + asked;
}

// This process and every live one of its registry group, ascending.
std::vector<pid_t> group_pids() {
  std::vector<pid_t> pids;
  if (const auto dir = process_registry()) pids = list_registry(*dir);
  if (std::find(pids.begin(), pids.end(), ::getpid()) == pids.end()) {
    pids.push_back(::getpid());
    std::sort(pids.begin(), pids.end());
  }
  return pids;
}

// `req` re-targeted, to be sent to process `pid` on its socket in the registry.
PeerAsk peer_ask(pid_t pid, const Request& req, const std::string& target, milliseconds answer_within) {
  const auto dir = process_registry();
  if (!dir) throw std::runtime_error("this process has no registry");
  PeerAsk ask{pid, socket_path(*dir, pid), req, answer_within};
  ask.request.target(target);
  return ask;
}

// Every process of the group asked `target`: this one at once, by `own`; the others by a
// Forward whose finish hands `merge` every answer, in pid order.
using Merge = std::function<Response(const std::vector<PeerAnswer>&)>;
Forward ask_all(const Request& req, const std::string& target, milliseconds answer_within,
                const std::function<Response()>& own, Merge merge) {
  auto known = std::make_shared<std::vector<PeerAnswer>>();  // this one's, and asks that could not go
  std::vector<PeerAsk> asks;
  for (const pid_t pid : group_pids()) {
    try {
      if (pid == ::getpid()) known->push_back({pid, own(), {}});
      else asks.push_back(peer_ask(pid, req, target, answer_within));
    } catch (const std::exception& e) {
      known->push_back({pid, std::nullopt, e.what()});
    }
  }
  return Forward{std::move(asks), [known, merge = std::move(merge)](std::vector<PeerAnswer> answers) {
                   answers.insert(answers.end(), known->begin(), known->end());
                   std::sort(answers.begin(), answers.end(),
                             [](const PeerAnswer& a, const PeerAnswer& b) { return a.pid < b.pid; });
                   return merge(answers);
                 }};
}

// What a Forward's finish returns when making its answer failed: it never throws.
template <typename Make>
Response never_throwing(const ReplyTo& to, Make make) {
  try {
    return make();
  } catch (...) {
    return failure_response(to);
  }
}

std::string body_reason(const Response& res) {
  try {
    return json::parse(res.body()).at("error").get<std::string>();
  } catch (...) {
    std::string text = res.body();
    while (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
  }
}

// Every process's report read back and summed (merge, liveheap/report.hpp); those that did
// not answer, or not with a report, are named in it.
Report merge_reports(const std::vector<PeerAnswer>& answers, const Query& query, bool diff,
                     const std::string& prefix) {
  std::vector<ProcessReport> reports;
  std::vector<ReportFailure> failed;
  for (const PeerAnswer& answer : answers) {
    const pid_t pid = answer.pid;
    if (!answer.response) {
      failed.push_back({pid, 502, answer.error});
      continue;
    }
    try {
      const Response& res = *answer.response;
      if (res.result() != Status::ok) {
        failed.push_back({pid, static_cast<int>(res.result_int()), body_reason(res)});
        continue;
      }
      reports.push_back({pid, report_from_json(std::string_view(res.body()))});
    } catch (const std::exception& e) {
      failed.push_back({pid, 502, e.what()});
    }
  }
  if (reports.empty()) {
    std::string reasons;
    for (const ReportFailure& f : failed)
      reasons += (reasons.empty() ? "" : "; ") + ("pid " + std::to_string(f.pid) + ": " + f.error);
    throw RequestError(Status::conflict, "no process answered: " + reasons);
  }
  Report merged = merge(std::move(reports), std::move(failed), query.limit, query.traceback);
  // A process without a baseline joined the group after it, unless none has one: then there
  // is no baseline at all, as one process says.
  const auto joined = [](const Report::Process& p) { return p.joined; };
  if (diff && std::all_of(merged.processes.begin(), merged.processes.end(), joined))
    throw RequestError(Status::conflict, "no process of this program has a baseline yet: POST " + prefix +
                                             "/baseline?pid=all first");
  return merged;
}

// GET /diff or /top with pid=all. The merged answer is held to the cap of one process's
// (Config::max_report_bytes): its lines stop there and it says so.
Forward merged_report(const RouteState& state, const Request& req, const ReplyTo& to, const Query& query,
                      bool diff, const AnswerHere& here) {
  const std::string target =
      peer_target(req.target(), query, diff ? Ask::every_key_since_nothing : Ask::every_key);
  return ask_all(
      req, target, kPeerAnswerTimeout, [&] { return here(target); },
      [to, query, diff, prefix = state.config.prefix](const std::vector<PeerAnswer>& answers) {
        return never_throwing(to, [&] {
          const Report merged = merge_reports(answers, query, diff, prefix);
          if (to.format == Format::json)
            return make_response(to, Status::ok, to_json(merged, to.max_report_bytes) + "\n",
                                 "application/json");
          return make_text(to, Status::ok, to_text(merged, {.max_bytes = to.max_report_bytes}));
        });
      });
}

// GET /routes with pid=all: every process's routes added up by route name.
Forward merged_routes(const Request& req, const ReplyTo& to, const Query& query, const AnswerHere& here) {
  const std::string target = peer_target(req.target(), query, Ask::json);
  return ask_all(
      req, target, kPeerAnswerTimeout, [&] { return here(target); },
      [to](const std::vector<PeerAnswer>& answers) {
        return never_throwing(to, [&] {
          std::vector<RouteReport> reports;
          for (const PeerAnswer& answer : answers)
            if (answer.response && answer.response->result() == Status::ok)
              reports.push_back(route_report_from_json(answer.response->body()));
          return typed_response(to, merge(reports));
        });
      });
}

// Each process's answer to POST /baseline, one entry (or line) each.
BaselinesReport baselines_of(const std::vector<PeerAnswer>& answers) {
  BaselinesReport report;
  for (const PeerAnswer& answer : answers) {
    ProcessBaseline entry{answer.pid, 0, std::nullopt, {}};
    try {
      if (!answer.response) throw std::runtime_error(answer.error);
      const Response& res = *answer.response;
      entry.status = static_cast<int>(res.result_int());
      if (res.result() == Status::ok) entry.baseline = baseline_report_from_json(res.body());
      else entry.error = body_reason(res);
    } catch (const std::exception& e) {
      entry.status = 502;
      entry.baseline.reset();
      entry.error = e.what();
    }
    report.processes.push_back(std::move(entry));
  }
  return report;
}

// POST /baseline?pid=all: every process remembers its heap now.
Forward baseline_all(const Request& req, const ReplyTo& to, const Query& query, const AnswerHere& here) {
  const std::string target = peer_target(req.target(), query, Ask::json);
  return ask_all(
      req, target, kPeerAnswerTimeout, [&] { return here(target); },
      [to](const std::vector<PeerAnswer>& answers) {
        return never_throwing(to, [&] { return typed_response(to, baselines_of(answers)); });
      });
}

// /proc/<pid>: parent, command line, start time (ms since the epoch).
struct ProcInfo {
  long ppid = 0;
  std::string cmdline;
  std::int64_t started_ms = 0;
};

std::int64_t boot_time_s() {
  std::istringstream in(tracker::read_file_text("/proc/stat"));
  std::string word;
  while (in >> word)
    if (word == "btime" && in >> word) return std::stoll(word);
  return 0;
}

ProcInfo proc_info(pid_t pid) {
  ProcInfo info;
  const std::string base = "/proc/" + std::to_string(pid);
  info.cmdline = tracker::read_file_text((base + "/cmdline").c_str());
  std::replace(info.cmdline.begin(), info.cmdline.end(), '\0', ' ');
  while (!info.cmdline.empty() && info.cmdline.back() == ' ') info.cmdline.pop_back();
  const std::string line = tracker::read_first_line((base + "/stat").c_str());
  const auto paren = line.rfind(')');
  if (paren == std::string::npos) return info;
  std::istringstream fields(line.substr(paren + 2));
  std::vector<std::string> f{std::istream_iterator<std::string>(fields), {}};
  if (f.size() > 19) {  // f[0] is field 3 (state): ppid is field 4, starttime field 22
    info.ppid = std::stol(f[1]);
    const long ticks = ::sysconf(_SC_CLK_TCK);
    info.started_ms = boot_time_s() * 1000 + std::stoll(f[19]) * 1000 / (ticks > 0 ? ticks : 100);
  }
  return info;
}

// One process's entry in /processes, from its answer to GET /stats.
ProcessEntry process_entry(const PeerAnswer& answer) {
  const ProcInfo info = proc_info(answer.pid);
  ProcessEntry entry{answer.pid,   info.ppid,    info.cmdline,   "unreachable",
                     std::nullopt, std::nullopt, info.started_ms};
  try {
    if (!answer.response) throw std::runtime_error(answer.error);
    const StatsReport stats = stats_report_from_json(answer.response->body());
    entry.mode = to_string(stats.mode);
    entry.traced = stats.traced_current;
    entry.rss = stats.rss;
  } catch (const std::exception&) {  // unreachable, as entry says
  }
  return entry;
}

ProcessesReport processes_of(const std::vector<PeerAnswer>& answers) {
  ProcessesReport report;
  for (const PeerAnswer& answer : answers) report.processes.push_back(process_entry(answer));
  report.this_pid = ::getpid();  // who answers a request without pid= (the dashboard's default)
  return report;
}

}  // namespace

std::size_t group_size() {
  try {
    return group_pids().size();
  } catch (...) {  // an unreadable registry: this process alone, as far as it can tell
    return 1;
  }
}

void merge_verdict(Verdict& into, const Verdict& other) { merge_verdicts(into, other); }

void merge_verdict(json& into, const json& other) {
  if (!into.contains("verdict") || !other.contains("verdict")) return;  // no history: nothing to merge
  Verdict merged = verdict_from_json(into);
  merge_verdicts(merged, verdict_from_json(other));
  add_verdict_json(into, merged);
}

std::optional<Outcome> answer_for_pid(RouteState& state, const Request& req, const ReplyTo& to,
                                      std::string_view route, const Query& query, const AnswerHere& here) {
  if (!query.pid || *query.pid == ::getpid()) return std::nullopt;
  if (*query.pid == kAllProcesses) {
    const bool get = req.method() == bh::verb::get;
    if (query.seconds != 0)
      throw RequestError(Status::bad_request,
                         "pid=all does not take seconds=: POST baseline?pid=all, then diff?pid=all");
    if (get && (route == "/diff" || route == "/top"))
      return merged_report(state, req, to, query, route == "/diff", here);
    if (!get && route == "/baseline") return baseline_all(req, to, query, here);
    if (get && route == "/routes") return merged_routes(req, to, query, here);
    throw RequestError(
        Status::bad_request,
        "pid=all applies to GET diff, GET top, GET routes and POST baseline; ask one process with pid=N");
  }
  const std::vector<pid_t> pids = group_pids();
  if (std::find(pids.begin(), pids.end(), *query.pid) == pids.end())
    throw RequestError(Status::not_found, "no liveheap process with pid " + std::to_string(*query.pid) +
                                              " in this group; GET " + state.config.prefix +
                                              "/processes lists them");
  // A window forwarded holds a window place here too: each costs a connection and a wait.
  std::shared_ptr<WindowSlot> slot = query.seconds != 0 ? std::make_shared<WindowSlot>(state) : nullptr;
  const pid_t pid = static_cast<pid_t>(*query.pid);
  const auto failed = [pid](const std::string& why) {
    return RequestError(Status::bad_gateway, "process " + std::to_string(pid) + " did not answer: " + why);
  };
  std::vector<PeerAsk> asks;
  try {
    asks.push_back(peer_ask(pid, req, peer_target(req.target(), query, Ask::as_is),
                            kPeerAnswerTimeout + std::chrono::seconds(query.seconds)));
  } catch (const std::exception& e) {
    throw failed(e.what());
  }
  return Forward{std::move(asks),
                 [to, slot, failed](std::vector<PeerAnswer> answers) mutable {
                   slot.reset();  // before the answer leaves, as a window here gives its place back
                   return never_throwing(to, [&] {
                     PeerAnswer& answer = answers.at(0);
                     if (!answer.response) throw failed(answer.error);
                     Response res = std::move(*answer.response);
                     res.version(to.version);
                     res.keep_alive(to.keep_alive);
                     return res;
                   });
                 },
                 query.seconds != 0};
}

Forward processes_report(RouteState& state, const ReplyTo& to) {
  Request req{bh::verb::get, state.config.prefix + "/stats?format=json", 11};
  req.set(bh::field::host, "localhost");  // this process's own request policy reads it too
  if (!state.config.token.empty()) req.set(bh::field::authorization, "Bearer " + state.config.token);
  // This process's own /stats is read here, as GET /stats would answer it.
  ReplyTo json = to;
  json.format = Format::json;
  const auto own = [&] { return typed_response(json, stats_now(state.windows.load())); };
  return ask_all(req, std::string(req.target()), kStatsTimeout, own,
                 [to](const std::vector<PeerAnswer>& answers) {
                   return never_throwing(to, [&] { return typed_response(to, processes_of(answers)); });
                 });
}

}  // namespace http
LIVEHEAP_NAMESPACE_END
