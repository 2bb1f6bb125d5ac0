// The bodies of the report routes, text or JSON. The statistics reports (/top, /peak,
// /tracebacks, /diff) are the report layer's document (liveheap/report.hpp), built and
// rendered there; this file picks the rendering and lays out the other routes' bodies.
#include "reports.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <unordered_map>
#include <utility>

#include "liveheap/allocator.hpp"
#include "liveheap/format.hpp"
#include "liveheap/history.hpp"
#include "liveheap/json.hpp"
#include "liveheap/report.hpp"
#include "liveheap/tracker.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {
namespace {

using nlohmann::json;

std::string_view plural(KeyType key) {
  switch (key) {
    case KeyType::file: return "files";
    case KeyType::line: return "lines";
    case KeyType::function: return "functions";
    case KeyType::traceback: return "tracebacks";
    case KeyType::route: return "routes";
  }
  return "keys";
}

std::int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

// The report request a query asks for.
ReportRequest request_of(const Query& query) {
  return {query.key, query.limit, query.cumulative, query.include, query.exclude, query.traceback, query.routes};
}

// `snapshot` itself without filters, else the filtered copy, kept in `storage`.
const Snapshot& apply_filters(const Snapshot& snapshot, const Query& query, Snapshot& storage) {
  if (query.filters.empty() && query.routes.empty()) return snapshot;
  storage = snapshot.filter_routes(query.routes).filter_traces(query.filters);
  return storage;
}

// A JSON stat, with its whole stack only where asked: ~53 KB each otherwise.
template <typename Stat>
json stat_json(const Stat& stat, const Query& query) {
  json j = to_json(stat, query.key);
  if (query.key != KeyType::traceback && !query.traceback) j.erase("traceback");
  return j;
}

// The report document laid out as the client asked: JSON, or text (stacks under each line
// for /tracebacks and wherever key=traceback asks for whole stacks: /top, /peak, /diff).
// Both stop at to.max_report_bytes of lines and say so.
Response report_response(const ReplyTo& to, Report report, const Query& query, std::size_t group = 1) {
  if (group > 1) report.group_processes = group;
  if (to.format == Format::json)
    return make_response(to, Status::ok, to_json(report, to.max_report_bytes) + "\n", "application/json");
  return make_text(to, Status::ok,
                   to_text(report, {.verdicts = query.verdicts, .stacks = query.key == KeyType::traceback,
                                    .max_bytes = to.max_report_bytes}));
}

// Each statistic's verdict, from the tracker's history grouped as the report groups.
class Verdicts {
 public:
  explicit Verdicts(const Query& query)
      : history_(liveheap::history()), index_(history_, query.key, query.cumulative, query.filters) {}
  Verdict of(const Traceback& key) {
    const KeySeries* series = index_.find(key);
    return series == nullptr ? Verdict{} : classify(history_, *series);
  }

 private:
  History history_;
  HistoryIndex index_;
};

// The lines' verdicts where the answer shows them (JSON always, text with verdicts=1).
VerdictOf verdicts_for(const ReplyTo& to, const Query& query) {
  if (to.format != Format::json && !query.verdicts) return {};
  auto verdicts = std::make_shared<Verdicts>(query);
  return [verdicts](const Traceback& key) { return verdicts->of(key); };
}

std::string size_and_count(std::int64_t size, std::int64_t count) {
  return "size=" + format_size(static_cast<double>(size), false) +
         ", count=" + std::to_string(count);
}

// Folded lines appended up to a byte cap, then one comment line that says the rest was
// left out. The cap is checked line by line, so the uncapped text is never built. The
// note ends with a word: flamegraph.pl skips it (a stack line ends with its count).
class FoldedLines {
 public:
  FoldedLines(std::size_t max_bytes, std::size_t wanted) : max_bytes_(max_bytes), wanted_(wanted) {}

  // False once a line did not fit: the caller stops.
  bool add(const std::string& line) {
    if (text_.size() + line.size() + 1 > max_bytes_) {
      text_ += "# truncated at " + format_size(static_cast<double>(max_bytes_), false) + ": " +
               std::to_string(shown_) + " of " + std::to_string(wanted_) +
               " stacks shown; narrow with include= or exclude=\n";
      return false;
    }
    text_ += line;
    text_ += '\n';
    ++shown_;
    return true;
  }
  std::string take() { return std::move(text_); }

 private:
  std::size_t max_bytes_;
  std::size_t wanted_;
  std::size_t shown_ = 0;
  std::string text_;
};

// One folded line's values: bytes before and after (a top report has only `after`).
struct FoldedValues {
  std::int64_t before = 0;
  std::int64_t after = 0;
};

// Folded lines and their values, stacks that fold to the same line added up (stacks that
// differ only in plumbing frames are one line once those are folded away), in the order
// `bigger` says.
class FoldedStacks {
 public:
  void add(const Traceback& traceback, FoldedValues values) {
    std::string stack = folded_stack(traceback);
    const auto [it, added] = index_.try_emplace(stack, lines_.size());
    if (added) lines_.push_back({std::move(stack), {}});
    lines_[it->second].second.before += values.before;
    lines_[it->second].second.after += values.after;
  }
  template <typename Bigger>
  std::vector<std::pair<std::string, FoldedValues>> take(Bigger bigger) {
    std::stable_sort(lines_.begin(), lines_.end(),
                     [&](const auto& a, const auto& b) { return bigger(a.second, b.second); });
    return std::move(lines_);
  }

 private:
  std::vector<std::pair<std::string, FoldedValues>> lines_;
  std::unordered_map<std::string, std::size_t> index_;
};

// format=folded: every stack (filters apply, key and limit do not), "root;...;leaf size",
// up to to.max_report_bytes.
Response folded_report(const ReplyTo& to, const Snapshot& snapshot) {
  FoldedStacks stacks;
  for (const Statistic& s : snapshot.statistics(KeyType::traceback))
    if (s.size > 0) stacks.add(s.traceback, {0, s.size});
  const auto lines = stacks.take([](const FoldedValues& a, const FoldedValues& b) { return a.after > b.after; });
  FoldedLines out(to.max_report_bytes, lines.size());
  for (const auto& [stack, values] : lines)
    if (!out.add(stack + " " + std::to_string(values.after))) break;
  return make_response(to, Status::ok, out.take(), "text/plain; charset=utf-8");
}

// /diff as folded stacks: folded = the stacks that grew, "stack size_diff" (what
// flamegraph.pl draws: it takes no negative values); folded2 = every stack that changed,
// "stack before after", as difffolded.pl writes (flamegraph.pl draws it as a differential).
// Up to to.max_report_bytes.
Response folded_diff_report(const ReplyTo& to, const Snapshot& now, const Snapshot& old) {
  const bool both = to.format == Format::folded2;
  FoldedStacks stacks;
  for (const StatisticDiff& d : now.compare_to(old, KeyType::traceback))
    stacks.add(d.traceback, {d.size - d.size_diff, d.size});
  const auto grown = [](const FoldedValues& v) { return v.after - v.before; };
  auto lines = stacks.take([&](const FoldedValues& a, const FoldedValues& b) {
    return std::abs(grown(a)) > std::abs(grown(b));
  });
  std::erase_if(lines, [&](const auto& line) {
    return both ? grown(line.second) == 0 : grown(line.second) <= 0;
  });
  FoldedLines out(to.max_report_bytes, lines.size());
  for (const auto& [stack, v] : lines) {
    const std::string line = both ? stack + " " + std::to_string(v.before) + " " + std::to_string(v.after)
                                  : stack + " " + std::to_string(grown(v));
    if (!out.add(line)) break;
  }
  return make_response(to, Status::ok, out.take(), "text/plain; charset=utf-8");
}

// /top, /peak and /tracebacks (which is key=traceback): the same statistics.
Response statistics_report(const ReplyTo& to, const Snapshot& now, const Query& query,
                           std::size_t group = 1) {
  if (to.format == Format::folded) {
    Snapshot storage;
    return folded_report(to, apply_filters(now, query, storage));
  }
  return report_response(to, make_report(now, request_of(query), verdicts_for(to, query)), query,
                         group);
}

}  // namespace

namespace {

// The symbolizer's counts and, once a report needed it, its process: where the debug
// information's memory is (not in this process), or why names came without lines.
json symbolizer_json(const SymbolizerStats& s) {
  json out = {{"addresses_asked", s.addresses_asked}, {"addresses_resolved", s.addresses_resolved}};
  if (!s.process_asked) return out;
  if (s.problem.empty())
    out["process"] = {{"pid", s.process_pid}, {"rss_bytes", s.process_rss_bytes}, {"files", s.process_files}};
  else
    out["problem"] = s.problem;
  return out;
}

std::string symbolizer_text(const SymbolizerStats& s) {
  if (!s.problem.empty()) return "symbolizer: unavailable (" + s.problem + "): names without lines";
  return "symbolizer: pid " + std::to_string(s.process_pid) + ", rss=" +
         format_size(static_cast<double>(s.process_rss_bytes), false) + ", " +
         std::to_string(s.process_files) + " files read";
}

}  // namespace

Response stats_report(const ReplyTo& to, unsigned windows) {
  const bool tracing = is_tracing();
  const Options options = liveheap::options();
  const Mode mode = tracing ? options.mode : Mode::off;
  const std::uint64_t interval = mode == Mode::sampled ? options.sample_interval : 0;
  const TracedMemory traced = traced_memory();
  const std::int64_t own = tracker_memory();
  const EngineStats engine = engine_stats();
  const ProcessMemory process = read_process_memory();
  const AllocatorInfo allocator = read_allocator();
  // For glibc the allocator's figures are mallinfo2's, read under its rate limit.
  const MallocInfo heap = allocator.name == "glibc" ? malloc_info_of(allocator) : read_malloc_info();
  const SymbolizerStats symbolizer = symbolizer_stats();
  const std::string python = python_frames_status();
  if (to.format == Format::json) {
    json allocator_json = {{"name", allocator.name}, {"file", allocator.file}};
    for (const auto& [name, bytes] : allocator.figures) allocator_json[name] = bytes;
    json mallinfo = {{"arena", heap.arena}, {"hblkhd", heap.hblkhd}, {"uordblks", heap.uordblks},
                     {"fordblks", heap.fordblks}, {"keepcost", heap.keepcost}};
    if (allocator.name == "glibc") {  // read under its rate limit: how old, and what it cost
      mallinfo["age_ms"] = allocator.figures_age_ms;
      mallinfo["read_ms"] = allocator.read_ms;
    }
    return make_json(
        to, Status::ok,
        {{"mode", to_string(mode)},
         {"tracing", tracing},
         {"sample_interval", interval},
         {"max_frames", options.max_frames},
         {"traced", {{"current", traced.current}, {"peak", traced.peak}}},
         {"tracker_memory", own},
         {"tracker_memory_cap", to_json(engine.cap)},
         {"stack_table_bytes", engine.stack_table_bytes},
         {"live_table_bytes", engine.live_table_bytes},
         {"stacks", engine.stacks},
         {"live_blocks", engine.live_blocks},
         {"dropped", engine.dropped},
         {"fallback_walks", engine.fallback_walks},
         // What sampled mode holds: its samples' runs, the freed runs kept for reuse.
         {"sampled",
          {{"samples_live", mode == Mode::sampled ? engine.live_blocks : 0},
           {"live_bytes", engine.region_live_bytes},
           {"kept_bytes", engine.region_kept_bytes},
           {"kept_limit", engine.region_kept_limit},
           {"madvise_calls", engine.region_madvise_calls}}},
         {"symbolizer", symbolizer_json(symbolizer)},
         {"python_frames", python},
         {"rss", process.rss},
         {"peak_rss", process.peak_rss},
         {"mallinfo", std::move(mallinfo)},
         {"allocator", std::move(allocator_json)},
         {"windows", windows}});
  }
  const auto size = [](auto bytes) { return format_size(static_cast<double>(bytes), false); };
  std::string text = "tracing: " + std::string(tracing ? "on" : "off") +
                     ", mode=" + std::string(to_string(mode)) +
                     ", max_frames=" + std::to_string(options.max_frames);
  if (interval != 0) text += ", sample_interval=" + size(interval);
  text += "\ntraced: current=" + size(traced.current) + ", peak=" + size(traced.peak) +
          "\ntracker memory: " + size(own) + " (cap " + size(engine.cap.max_bytes) +
          "; stack table " + size(engine.stack_table_bytes) + ", live-block table " +
          size(engine.live_table_bytes) + ")";
  if (const std::string cap = format_cap(engine.cap); !cap.empty()) text += "\n" + cap;
  text += "\nstacks=" + std::to_string(engine.stacks) +
          ", live_blocks=" + std::to_string(engine.live_blocks) +
          ", dropped=" + std::to_string(engine.dropped) +
          ", fallback_walks=" + std::to_string(engine.fallback_walks);
  if (mode == Mode::sampled || engine.region_live_bytes + engine.region_kept_bytes > 0)
    text += "\nsampled: " + std::to_string(mode == Mode::sampled ? engine.live_blocks : 0) +
            " samples live in " + size(engine.region_live_bytes) + " of runs, " +
            size(engine.region_kept_bytes) + " kept for reuse (at most " +
            size(engine.region_kept_limit) + " now), " + std::to_string(engine.region_madvise_calls) +
            " madvise calls";
  text += "\nrss=" + size(process.rss) + ", peak_rss=" + size(process.peak_rss);
  if (allocator.name == "glibc" || allocator.name == "unknown")  // else glibc's arena is unused
    text += "\nmallinfo2: arena=" + size(heap.arena) + ", hblkhd=" + size(heap.hblkhd) +
            ", uordblks=" + size(heap.uordblks) + ", fordblks=" + size(heap.fordblks) +
            ", keepcost=" + size(heap.keepcost);
  text += "\nallocator: " + allocator.name;
  for (std::size_t i = 0; i < allocator.figures.size(); ++i)
    text += (i == 0 ? ": " : ", ") + allocator.figures[i].first + "=" + size(allocator.figures[i].second);
  // Said when it matters: figures a second old or more, or a read that stalled malloc 1 ms.
  if (allocator.name == "glibc" && (allocator.figures_age_ms >= 1000 || allocator.read_ms >= 1)) {
    char age[96];
    std::snprintf(age, sizeof age, " (read %.1f s ago, in %.2f ms)",
                  static_cast<double>(allocator.figures_age_ms) / 1000, allocator.read_ms);
    text += age;
  }
  if (symbolizer.process_asked) text += "\n" + symbolizer_text(symbolizer);
  if (!python.empty()) text += "\npython frames: " + python;
  text += "\n";
  return make_text(to, Status::ok, std::move(text));
}

Response top_report(const ReplyTo& to, const Snapshot& now, const Query& query, std::size_t group) {
  return statistics_report(to, now, query, group);
}

Response tracebacks_report(const ReplyTo& to, const Snapshot& now, const Query& query) {
  return statistics_report(to, now, query);
}

Response diff_report(const ReplyTo& to, const Snapshot& now, const Snapshot& old,
                     const Query& query, const std::string& against, std::size_t group) {
  if (to.format == Format::folded || to.format == Format::folded2) {
    Snapshot now_storage;
    Snapshot old_storage;
    return folded_diff_report(to, apply_filters(now, query, now_storage),
                              apply_filters(old, query, old_storage));
  }
  return report_response(
      to, make_diff_report(now, old, against, request_of(query), verdicts_for(to, query)), query,
      group);
}

Response history_report(const ReplyTo& to, const History& history, const Query& query) {
  HistoryIndex index(history, query.key, query.cumulative, query.filters);
  const std::vector<std::int64_t> times = point_times(history);
  const std::vector<bool> idle = idle_points(history);
  const std::vector<KeySeries>& all = index.all();
  const std::size_t shown = std::min(all.size(), query.limit);
  const auto last = [](const std::vector<std::int64_t>& v) { return v.empty() ? 0 : v.back(); };
  if (to.format == Format::json) {
    json points = json::array();
    for (std::size_t i = 0; i < history.points.size(); ++i) {
      const HistoryPoint& p = history.points[i];
      json allocator = json::object();
      for (const auto& [name, bytes] : p.allocator) allocator[name] = bytes;
      json route_requests = json::object();
      for (const auto& [route, requests] : p.route_requests) route_requests[route] = requests;
      points.push_back({{"t_ms", p.t_ms}, {"traced", p.traced}, {"peak", p.peak}, {"rss", p.rss},
                        {"allocator", std::move(allocator)}, {"route_requests", std::move(route_requests)},
                        {"stacks_dropped", p.stacks_dropped}, {"bytes_dropped", p.bytes_dropped},
                        {"allocated", p.allocated}, {"allocations", p.allocations},
                        {"idle", static_cast<bool>(idle[i])}});
    }
    json stats = json::array();
    std::size_t stats_bytes = 0;
    bool truncated = false;
    for (std::size_t i = 0; i < shown; ++i) {
      const KeySeries& s = all[i];
      json stat = stat_json(Statistic{s.key, last(s.sizes), last(s.counts)}, query);
      json series = json::array();
      json allocated = json::array();
      for (std::size_t p = 0; p < times.size(); ++p) {
        series.push_back({times[p], s.sizes[p], s.counts[p]});
        allocated.push_back({times[p], s.allocated[p], s.allocations[p]});
      }
      stat["series"] = std::move(series);
      stat["allocated_series"] = std::move(allocated);
      add_verdict_json(stat, classify(history, s));
      // Each series is a few KB: 10,000 keys (with their stacks) would be hundreds of MB.
      const std::size_t stat_bytes = stat.dump().size() + 1;
      if (stats_bytes + stat_bytes > to.max_report_bytes) {
        truncated = true;
        break;
      }
      stats_bytes += stat_bytes;
      stats.push_back(std::move(stat));
    }
    return make_json(to, Status::ok,
                     {{"interval_s", history.interval_s},
                      {"allocator", allocator_name()},
                      {"max_points", history.max_points},
                      {"points_dropped", history.points_dropped},
                      {"stacks_per_point", history.stacks_per_point},
                      {"key", to_string(query.key)},
                      {"limit", query.limit},
                      {"include", query.include},
                      {"exclude", query.exclude},
                      {"keys", all.size()},
                      {"points", std::move(points)},
                      {"stats", std::move(stats)},
                      {"truncated", truncated}});
  }
  const auto size = [](std::int64_t bytes) { return format_size(static_cast<double>(bytes), false); };
  std::string text = "History: " + std::to_string(history.points.size()) + " points every " +
                     std::to_string(static_cast<unsigned>(history.interval_s)) + " s";
  if (!history.points.empty()) {
    const HistoryPoint& p = history.points.back();
    text += " over " + std::to_string((p.t_ms - history.points.front().t_ms) / 1000) +
            " s; last: traced=" + size(p.traced) + ", peak=" + size(p.peak) + ", rss=" + size(p.rss);
  }
  text += "\nTop " + std::to_string(shown) + " of " + std::to_string(all.size()) + " " +
          std::string(plural(query.key)) + " by size now:\n";
  for (std::size_t i = 0; i < shown; ++i) {
    const KeySeries& s = all[i];
    const std::string row = format_statistic(Statistic{s.key, last(s.sizes), last(s.counts)}, query.key) +
                            verdict_text(classify(history, s)) + "\n";
    if (text.size() + row.size() > to.max_report_bytes) {  // as the reports' text says it
      text += "(truncated at " + format_size(static_cast<double>(to.max_report_bytes), false) +
              ": " + std::to_string(i) + " of " + std::to_string(shown) +
              " rows shown; ask for a smaller limit= or narrow with include=)\n";
      break;
    }
    text += row;
  }
  return make_text(to, Status::ok, std::move(text));
}

Response baseline_report(const ReplyTo& to, const StackSnapshot& baseline, std::size_t group) {
  const SnapshotInfo& info = baseline.info;
  const std::int64_t age_ms = std::max<std::int64_t>(0, now_ms() - info.taken_at_ms);
  const std::string others = group > 1 ? " (this is 1 of the " + std::to_string(group) +
                                             " processes of this program: pid=all sets them all)"
                                       : "";
  if (to.format == Format::json) {
    json answer = {{"mode", to_string(info.mode)},
               {"sample_interval", info.sample_interval},
               {"max_frames", info.max_frames},
               {"taken_at_ms", info.taken_at_ms},
               {"age_ms", age_ms},
               {"total", {{"size", baseline.total_size()}, {"count", baseline.total_count()}}},
               {"stacks", baseline.stacks.size()},
               {"traced", {{"current", info.traced_current}, {"peak", info.traced_peak}}},
               {"tracker_memory", info.tracker_memory},
               {"tracker_memory_cap", to_json(info.cap)}};
    if (group > 1) answer["group"] = {{"processes", group}};
    return make_json(to, Status::ok, answer);
  }
  return make_text(to, Status::ok,
                   "baseline taken " + std::to_string(age_ms / 1000) + " s ago: " +
                       size_and_count(baseline.total_size(), baseline.total_count()) +
                       ", stacks=" + std::to_string(baseline.stacks.size()) +
                       " (mode=" + std::string(to_string(info.mode)) + ")" + others);
}

Response trim_report(const ReplyTo& to, const ProcessMemory& before, const ProcessMemory& after,
                     const std::string& done, std::int64_t tracker_released) {
  if (to.format == Format::json)
    return make_json(to, Status::ok,
                     // glibc says whether it released memory; for the others, RSS does.
                     {{"released", done.starts_with("malloc_trim") ? done.ends_with("released memory")
                                                                   : after.rss < before.rss},
                      {"allocator", allocator_name()},
                      {"action", done},
                      {"tracker_released", tracker_released},
                      {"rss_before", before.rss},
                      {"rss_after", after.rss}});
  return make_text(to, Status::ok,
                   done + ": rss " + format_size(static_cast<double>(before.rss), false) + " -> " +
                       format_size(static_cast<double>(after.rss), false) +
                       (tracker_released > 0 ? "; liveheap gave back " +
                                                   format_size(static_cast<double>(tracker_released), false) +
                                                   " of freed samples"
                                             : ""));
}

Response routes_report(const ReplyTo& to, RouteReport report) {
  judge_on_history(report, liveheap::history());
  return route_report_response(to, report);
}

Response route_report_response(const ReplyTo& to, const RouteReport& report) {
  if (to.format == Format::json) return make_response(to, Status::ok, to_json(report) + "\n", "application/json");
  return make_text(to, Status::ok, to_text(report));
}

}  // namespace http
LIVEHEAP_NAMESPACE_END
