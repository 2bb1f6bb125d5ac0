// ?pid= and GET /processes (see forward.hpp).
#include "forward.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include <boost/beast/http/field.hpp>

#include "endpoint.hpp"
#include "liveheap/format.hpp"
#include "local_client.hpp"
#include "registry.hpp"
#include "reports.hpp"

namespace liveheap::http {
namespace {

namespace bh = boost::beast::http;
using nlohmann::json;
using std::chrono::milliseconds;

constexpr milliseconds kForwardTimeout{15000};  // plus the window of a ?seconds= request
constexpr milliseconds kStatsTimeout{1000};     // one process's /stats for /processes

// A query parameter's name, percent-decoded, as the strict parser will read it.
std::string param_name(std::string_view pair) {
  const std::string_view raw = pair.substr(0, pair.find('='));
  std::string name;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '%' && i + 2 < raw.size()) {
      name += static_cast<char>(std::stoi(std::string(raw.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      name += raw[i] == '+' ? ' ' : raw[i];
    }
  }
  return name;
}

enum class Ask { as_is, json, every_key };

// The request's target without pid= and, for a merge, asking for JSON (and every key).
std::string peer_target(std::string_view target, Ask ask) {
  const bool for_merge = ask != Ask::as_is;
  const auto mark = target.find('?');
  std::string out(target.substr(0, mark));
  std::string_view query = mark == std::string_view::npos ? "" : target.substr(mark + 1);
  // Every key with its stack: merging and the text report need the frames.
  std::string kept = ask == Ask::every_key ? "format=json&traceback=1&limit=" + std::to_string(kMaxLimit)
                     : for_merge            ? "format=json"
                                            : "";
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? "" : query.substr(amp + 1);
    std::string name;
    try {
      name = param_name(pair);
    } catch (...) {  // a bad escape: parse_query already refused it
    }
    if (pair.empty() || name == "pid" || (for_merge && (name == "format" || name == "limit")) ||
        (ask == Ask::every_key && name == "traceback"))
      continue;
    kept += (kept.empty() ? "" : "&") + std::string(pair);
  }
  return kept.empty() ? out : out + "?" + kept;
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

// `req` re-targeted, answered by process `pid` (this one through the routes directly: its
// own worker is busy with this very request).
Response ask(RouteState& state, pid_t pid, const Request& req, const std::string& target,
             milliseconds timeout) {
  Request peer = req;
  peer.target(target);
  if (pid == ::getpid()) {
    Outcome outcome = answer(state, peer);
    if (auto* res = std::get_if<Response>(&outcome)) return std::move(*res);
    throw std::runtime_error("a window cannot be merged");  // refused before: cannot happen
  }
  const auto dir = process_registry();
  if (!dir) throw std::runtime_error("this process has no registry");
  return exchange_local(socket_path(*dir, pid), std::move(peer), timeout);
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

Traceback traceback_from(const json& frames) {
  std::vector<Frame> list;
  for (const json& f : frames)
    list.push_back({f.value("function", ""), f.value("file", ""), f.value("line", 0u),
                    f.value("module", ""),
                    std::strtoull(f.value("address", "0").c_str(), nullptr, 16)});
  return Traceback(std::move(list));
}

// What makes two processes' statistics one: the key's text, or for whole tracebacks every
// frame's function, file and line (addresses differ between programs).
std::string merge_key(const json& stat, KeyType key) {
  if (key != KeyType::traceback) return stat.value("key", "");
  std::string text;
  for (const json& f : stat["traceback"])
    text += f.value("function", "") + "\n" + f.value("file", "") + ":" +
            std::to_string(f.value("line", 0u)) + "\n";
  return text;
}

struct Merged {
  json body;  // the first answer's fields, totals summed
  std::vector<json> stats;
  json pids = json::array();
  json failed = json::array();
};

// Sums the JSON reports of every process, key by key.
Merged merge_reports(RouteState& state, const Request& req, const Query& query, bool diff) {
  Merged merged;
  std::map<std::string, std::size_t> index;
  const std::string target = peer_target(req.target(), Ask::every_key);
  for (const pid_t pid : group_pids()) {
    json report;
    try {
      const Response res = ask(state, pid, req, target, kForwardTimeout);
      if (res.result() != Status::ok) {
        merged.failed.push_back({{"pid", pid}, {"status", res.result_int()}, {"error", body_reason(res)}});
        continue;
      }
      report = json::parse(res.body());
    } catch (const std::exception& e) {
      merged.failed.push_back({{"pid", pid}, {"status", 502}, {"error", e.what()}});
      continue;
    }
    merged.pids.push_back(pid);
    if (merged.body.is_null()) {
      merged.body = report;
      for (auto& [name, value] : merged.body["total"].items()) value = 0;
    }
    for (auto& [name, value] : report["total"].items())
      merged.body["total"][name] = merged.body["total"][name].get<std::int64_t>() + value.get<std::int64_t>();
    for (json& stat : report["stats"]) {
      const std::string key = merge_key(stat, query.key);
      const auto [at, fresh] = index.try_emplace(key, merged.stats.size());
      if (fresh) {
        merged.stats.push_back(std::move(stat));
        continue;
      }
      json& into = merged.stats[at->second];
      for (const char* field : {"size", "count", "size_diff", "count_diff"})
        if (stat.contains(field))
          into[field] = into[field].get<std::int64_t>() + stat[field].get<std::int64_t>();
      merge_verdict(into, stat);
    }
  }
  for (json& stat : merged.stats) {
    const auto count = stat["count"].get<std::int64_t>();
    stat["average"] = count == 0 ? 0.0 : static_cast<double>(stat["size"].get<std::int64_t>()) / count;
  }
  const auto rank = [diff](const json& s) {
    const auto v = [&s](const char* f) { return s.value(f, std::int64_t{0}); };
    using Rank = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>;
    return diff ? Rank{std::abs(v("size_diff")), v("size"), std::abs(v("count_diff")), v("count")}
                : Rank{v("size"), v("count"), 0, 0};
  };
  std::stable_sort(merged.stats.begin(), merged.stats.end(),
                   [&](const json& a, const json& b) { return rank(a) > rank(b); });
  return merged;
}

Response merged_report(RouteState& state, const Request& req, const ReplyTo& to,
                       const Query& query, bool diff) {
  Merged merged = merge_reports(state, req, query, diff);
  if (merged.pids.empty()) {
    std::string reasons;
    for (const json& f : merged.failed)
      reasons += (reasons.empty() ? "" : "; ") + ("pid " + std::to_string(f["pid"].get<long>()) +
                                                 ": " + f["error"].get<std::string>());
    throw RequestError(Status::conflict, "no process answered: " + reasons);
  }
  const std::size_t shown = std::min(merged.stats.size(), query.limit);
  if (to.format == Format::json) {
    json body = std::move(merged.body);
    body["limit"] = query.limit;
    body["keys"] = merged.stats.size();
    body["stats"] = json(std::vector<json>(merged.stats.begin(), merged.stats.begin() + shown));
    if (!query.traceback && query.key != KeyType::traceback)  // as a single process answers
      for (json& stat : body["stats"]) stat.erase("traceback");
    body["pids"] = merged.pids;
    body["failed"] = merged.failed;
    return make_json(to, Status::ok, body);
  }
  const json& total = merged.body["total"];
  const auto size = [](const json& v, bool sign) { return format_size(static_cast<double>(v.get<std::int64_t>()), sign); };
  std::string text = "Top " + std::to_string(shown) + " of " + std::to_string(merged.stats.size()) + " " +
                     std::string(to_string(query.key)) + "s" + (diff ? " against the baselines" : "") +
                     " of " + std::to_string(merged.pids.size()) + " processes: size=" + size(total["size"], false);
  if (diff) {
    const auto count_diff = total["count_diff"].get<std::int64_t>();
    text += " (" + size(total["size_diff"], true) + "), count=" + std::to_string(total["count"].get<std::int64_t>()) +
            " (" + (count_diff >= 0 ? "+" : "") + std::to_string(count_diff) + ")";
  } else {
    text += ", count=" + std::to_string(total["count"].get<std::int64_t>());
  }
  text += " (mode=" + merged.body.value("mode", "") + ", pids " + merged.pids.dump() + ")\n";
  for (const json& f : merged.failed)
    text += "pid " + std::to_string(f["pid"].get<long>()) + " did not answer: " + f["error"].get<std::string>() + "\n";
  for (std::size_t i = 0; i < shown; ++i) {
    const json& s = merged.stats[i];
    const Traceback traceback = traceback_from(s["traceback"]);
    const auto v = [&s](const char* f) { return s.value(f, std::int64_t{0}); };
    text += (diff ? format_statistic_diff({traceback, v("size"), v("size_diff"), v("count"), v("count_diff")}, query.key)
                  : format_statistic({traceback, v("size"), v("count")}, query.key)) + "\n";
  }
  return make_text(to, Status::ok, std::move(text));
}

// POST /baseline?pid=all: every process remembers its heap now.
Response baseline_all(RouteState& state, const Request& req, const ReplyTo& to) {
  json list = json::array();
  std::string text;
  const std::string target = peer_target(req.target(), Ask::json);
  for (const pid_t pid : group_pids()) {
    json entry = {{"pid", pid}};
    try {
      const Response res = ask(state, pid, req, target, kForwardTimeout);
      entry["status"] = res.result_int();
      if (res.result() == Status::ok) entry["baseline"] = json::parse(res.body());
      else entry["error"] = body_reason(res);
    } catch (const std::exception& e) {
      entry["status"] = 502;
      entry["error"] = e.what();
    }
    text += "pid " + std::to_string(pid) + ": ";
    if (entry.contains("baseline"))
      text += "baseline of " + format_size(entry["baseline"]["total"]["size"].get<double>(), false) +
              " in " + std::to_string(entry["baseline"]["total"]["count"].get<std::int64_t>()) + " blocks\n";
    else
      text += entry["error"].get<std::string>() + "\n";
    list.push_back(std::move(entry));
  }
  if (to.format == Format::json) return make_json(to, Status::ok, {{"processes", list}});
  return make_text(to, Status::ok, std::move(text));
}

// /proc/<pid>: parent, command line, start time (ms since the epoch).
struct ProcInfo {
  long ppid = 0;
  std::string cmdline;
  std::int64_t started_ms = 0;
};

std::int64_t boot_time_s() {
  std::ifstream in("/proc/stat");
  std::string word;
  while (in >> word)
    if (word == "btime" && in >> word) return std::stoll(word);
  return 0;
}

ProcInfo proc_info(pid_t pid) {
  ProcInfo info;
  const std::string base = "/proc/" + std::to_string(pid);
  std::ifstream cmd(base + "/cmdline", std::ios::binary);
  info.cmdline.assign(std::istreambuf_iterator<char>(cmd), std::istreambuf_iterator<char>());
  std::replace(info.cmdline.begin(), info.cmdline.end(), '\0', ' ');
  while (!info.cmdline.empty() && info.cmdline.back() == ' ') info.cmdline.pop_back();
  std::ifstream stat(base + "/stat");
  std::string line;
  std::getline(stat, line);
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

json process_entry(RouteState& state, pid_t pid) {
  const ProcInfo info = proc_info(pid);
  json entry = {{"pid", pid}, {"ppid", info.ppid}, {"cmdline", info.cmdline}};
  try {
    Request req{bh::verb::get, state.config.prefix + "/stats?format=json", 11};
    if (!state.config.token.empty()) req.set(bh::field::authorization, "Bearer " + state.config.token);
    const Response res = pid == ::getpid()
                             ? stats_report(ReplyTo{11, false, Format::json}, state.windows.load())
                             : ask(state, pid, req, std::string(req.target()), kStatsTimeout);
    const json stats = json::parse(res.body());
    entry["mode"] = stats.at("mode");
    entry["traced"] = stats.at("traced").at("current");
    entry["rss"] = stats.at("rss");
  } catch (const std::exception& e) {
    entry["mode"] = "unreachable";
    entry["traced"] = nullptr;
    entry["rss"] = nullptr;
  }
  entry["started_ms"] = info.started_ms;
  return entry;
}

}  // namespace

void merge_verdict(json& into, const json& other) {
  if (!into.contains("verdict") || !other.contains("verdict")) return;  // no history: nothing to merge
  if (into["verdict"] != other["verdict"]) {
    into["verdict"] = "unknown";
    into["growth_per_min"] = nullptr;
    into["since_last_growth_s"] = nullptr;
    return;
  }
  const auto both = [&](const char* field) {
    return into.contains(field) && other.contains(field) && into[field].is_number() && other[field].is_number();
  };
  if (both("growth_per_min"))
    into["growth_per_min"] = into["growth_per_min"].get<double>() + other["growth_per_min"].get<double>();
  if (both("since_last_growth_s"))
    into["since_last_growth_s"] = std::min(into["since_last_growth_s"].get<double>(), other["since_last_growth_s"].get<double>());
}

std::optional<Outcome> answer_for_pid(RouteState& state, const Request& req, const ReplyTo& to,
                                      std::string_view route, const Query& query) {
  if (!query.pid || *query.pid == ::getpid()) return std::nullopt;
  if (*query.pid == kAllProcesses) {
    const bool get = req.method() == bh::verb::get;
    if (query.seconds != 0)
      throw RequestError(Status::bad_request, "pid=all does not take seconds=: POST baseline?pid=all, then diff?pid=all");
    if (get && (route == "/diff" || route == "/top")) return merged_report(state, req, to, query, route == "/diff");
    if (!get && route == "/baseline") return baseline_all(state, req, to);
    throw RequestError(Status::bad_request,
                       "pid=all applies to GET diff, GET top and POST baseline; ask one process with pid=N");
  }
  const std::vector<pid_t> pids = group_pids();
  if (std::find(pids.begin(), pids.end(), *query.pid) == pids.end())
    throw RequestError(Status::not_found, "no liveheap process with pid " + std::to_string(*query.pid) +
                                              " in this group; GET " + state.config.prefix + "/processes lists them");
  try {
    Response res = ask(state, static_cast<pid_t>(*query.pid), req, peer_target(req.target(), Ask::as_is),
                       kForwardTimeout + std::chrono::seconds(query.seconds));
    res.version(to.version);
    res.keep_alive(to.keep_alive);
    return res;
  } catch (const std::exception& e) {
    throw RequestError(Status::bad_gateway, "process " + std::to_string(*query.pid) + " did not answer: " + e.what());
  }
}

Response processes_report(RouteState& state, const ReplyTo& to) {
  json list = json::array();
  for (const pid_t pid : group_pids()) list.push_back(process_entry(state, pid));
  if (to.format == Format::json)  // this_pid: who answers a request without pid= (the dashboard's default)
    return make_json(to, Status::ok, {{"processes", list}, {"this_pid", ::getpid()}});
  std::string text = std::to_string(list.size()) + " process" + (list.size() == 1 ? "" : "es") +
                     " (this one: pid " + std::to_string(::getpid()) + ")\n";
  char line[160];
  std::snprintf(line, sizeof line, "%8s %8s %-11s %11s %11s  %s\n", "PID", "PPID", "MODE", "TRACED", "RSS", "CMDLINE");
  text += line;
  for (const json& p : list) {
    const auto size = [](const json& v) { return v.is_null() ? std::string("-") : format_size(v.get<double>(), false); };
    std::snprintf(line, sizeof line, "%8ld %8ld %-11s %11s %11s  ", p["pid"].get<long>(), p["ppid"].get<long>(),
                  p["mode"].get<std::string>().c_str(), size(p["traced"]).c_str(), size(p["rss"]).c_str());
    text += line + p["cmdline"].get<std::string>() + "\n";
  }
  return make_text(to, Status::ok, std::move(text));
}

}  // namespace liveheap::http
