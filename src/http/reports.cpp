// The bodies of the routes, text or JSON. Every answer is a value of the report layer
// (Report, StatsReport, HistoryReport, BaselineReport, TrimReport, RouteReport), built and
// rendered there; this file reads the process's state into them and picks the rendering
// (and lays out the folded stacks, which are not a document).
#include "reports.hpp"

#include <algorithm>
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
#include "wall_clock.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {
namespace {

using nlohmann::json;

// `snapshot` itself without filters, else the filtered copy, kept in `storage`.
const Snapshot& apply_filters(const Snapshot& snapshot, const Query& query, Snapshot& storage) {
  if (query.filters.empty() && query.routes.empty()) return snapshot;
  storage = snapshot.filter_routes(query.routes).filter_traces(query.filters);
  return storage;
}

// The report document laid out as the client asked: JSON, or text (stacks under each line
// for /tracebacks and wherever key=traceback asks for whole stacks: /top, /peak, /diff).
// Both stop at to.max_report_bytes of lines and say so.
Response report_response(const ReplyTo& to, Report report, const Query& query, std::size_t group = 1) {
  if (group > 1) report.group_processes = group;
  if (to.format == Format::json)
    return make_response(to, Status::ok, to_json(report, to.max_report_bytes) + "\n", "application/json");
  return make_text(to, Status::ok,
                   to_text(report, {.verdicts = query.verdicts,
                                    .stacks = query.key == KeyType::traceback,
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
  const auto lines =
      stacks.take([](const FoldedValues& a, const FoldedValues& b) { return a.after > b.after; });
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
  auto lines = stacks.take(
      [&](const FoldedValues& a, const FoldedValues& b) { return std::abs(grown(a)) > std::abs(grown(b)); });
  std::erase_if(lines,
                [&](const auto& line) { return both ? grown(line.second) == 0 : grown(line.second) <= 0; });
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
  return report_response(to, make_report(now, report_request(query), verdicts_for(to, query)), query, group);
}

}  // namespace

StatsReport stats_now(unsigned windows) {
  StatsReport r;
  r.tracing = is_tracing();
  const Options options = liveheap::options();
  r.mode = r.tracing ? options.mode : Mode::off;
  r.sample_interval = r.mode == Mode::sampled ? options.sample_interval : 0;
  r.max_frames = options.max_frames;
  const TracedMemory traced = traced_memory();
  r.traced_current = traced.current;
  r.traced_peak = traced.peak;
  r.tracker_memory = tracker_memory();
  const EngineStats engine = engine_stats();
  r.cap = engine.cap;
  r.stack_table_bytes = engine.stack_table_bytes;
  r.live_table_bytes = engine.live_table_bytes;
  r.stacks = engine.stacks;
  r.live_blocks = engine.live_blocks;
  r.dropped = engine.dropped;
  r.fallback_walks = engine.fallback_walks;
  r.sampled = {r.mode == Mode::sampled ? engine.live_blocks : 0,
               engine.region_live_bytes,
               engine.region_kept_bytes,
               engine.region_kept_limit,
               engine.region_madvise_calls,
               engine.region_thread_kept_bytes,
               engine.hosted_bytes};
  const SymbolizerStats symbolizer = symbolizer_stats();
  r.symbolizer.addresses_asked = symbolizer.addresses_asked;
  r.symbolizer.addresses_resolved = symbolizer.addresses_resolved;
  if (symbolizer.process_asked && symbolizer.problem.empty())
    r.symbolizer.process = StatsReport::SymbolizerProcess{
        symbolizer.process_pid, symbolizer.process_rss_bytes, symbolizer.process_files};
  else if (symbolizer.process_asked) r.symbolizer.problem = symbolizer.problem;
  r.python_frames = python_frames_status();
  const ProcessMemory process = read_process_memory();
  r.rss = process.rss;
  r.peak_rss = process.peak_rss;
  AllocatorInfo allocator = read_allocator();
  // For glibc the allocator's figures are mallinfo2's, read under its rate limit: how old,
  // and what it cost.
  const bool glibc = allocator.name == "glibc";
  const MallocInfo heap = glibc ? malloc_info_of(allocator) : read_malloc_info();
  r.mallinfo = {heap.arena,    heap.hblkhd,  heap.uordblks, heap.fordblks,
                heap.keepcost, std::nullopt, std::nullopt};
  if (glibc) {
    r.mallinfo.age_ms = allocator.figures_age_ms;
    r.mallinfo.read_ms = allocator.read_ms;
  }
  r.allocator = {std::move(allocator.name), std::move(allocator.file), std::move(allocator.figures)};
  r.windows = windows;
  return r;
}

Response top_report(const ReplyTo& to, const Snapshot& now, const Query& query, std::size_t group) {
  return statistics_report(to, now, query, group);
}

Response tracebacks_report(const ReplyTo& to, const Snapshot& now, const Query& query) {
  return statistics_report(to, now, query);
}

Response diff_report(const ReplyTo& to, const Snapshot& now, const Snapshot& old, const Query& query,
                     const std::string& against, std::size_t group) {
  if (to.format == Format::folded || to.format == Format::folded2) {
    Snapshot now_storage;
    Snapshot old_storage;
    return folded_diff_report(to, apply_filters(now, query, now_storage),
                              apply_filters(old, query, old_storage));
  }
  return report_response(
      to, make_diff_report(now, old, against, report_request(query), verdicts_for(to, query)), query, group);
}

Response history_report(const ReplyTo& to, const History& history, const Query& query) {
  const HistoryReport report = make_history_report(history, report_request(query), allocator_name());
  if (to.format == Format::json)
    return make_response(to, Status::ok, to_json(report, to.max_report_bytes) + "\n", "application/json");
  return make_text(to, Status::ok, to_text(report, to.max_report_bytes));
}

BaselineReport baseline_report_of(const StackSnapshot& baseline, std::size_t group) {
  const SnapshotInfo& info = baseline.info;
  BaselineReport r;
  r.mode = info.mode;
  r.sample_interval = info.sample_interval;
  r.max_frames = info.max_frames;
  r.taken_at_ms = info.taken_at_ms;
  r.age_ms = std::max<std::int64_t>(0, engine::now_ms() - info.taken_at_ms);
  r.total_size = baseline.total_size();
  r.total_count = baseline.total_count();
  r.stacks = baseline.stacks.size();
  r.traced_current = info.traced_current;
  r.traced_peak = info.traced_peak;
  r.tracker_memory = info.tracker_memory;
  r.cap = info.cap;
  if (group > 1) r.group_processes = group;
  return r;
}

TrimReport trim_now() {
  const ProcessMemory before = read_process_memory();
  std::string action = release_free_memory();
  const std::int64_t tracker_released = trim_tracker_memory();  // sampled runs kept for reuse
  const ProcessMemory after = read_process_memory();
  const bool released = trim_released(action, before.rss, after.rss);
  return {released, allocator_name(), std::move(action), tracker_released, before.rss, after.rss};
}

Response routes_report(const ReplyTo& to, RouteReport report) {
  judge_on_history(report, liveheap::history());
  return typed_response(to, report);
}

}  // namespace http
LIVEHEAP_NAMESPACE_END
