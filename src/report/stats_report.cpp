// The GET /stats value: JSON, strict reading, text.
#include "liveheap/stats_report.hpp"

#include <algorithm>
#include <climits>
#include <cstdio>

#include "liveheap/format.hpp"
#include "liveheap/json.hpp"
#include "strict_json.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace {

using namespace report;

json symbolizer_json(const StatsReport::Symbolizer& s) {
  json out = {{"addresses_asked", s.addresses_asked}, {"addresses_resolved", s.addresses_resolved}};
  if (!s.problem.empty()) out["problem"] = s.problem;
  else if (s.process)
    out["process"] = {
        {"pid", s.process->pid}, {"rss_bytes", s.process->rss_bytes}, {"files", s.process->files}};
  return out;
}

// Names without lines, or where the debug information's memory is (not in this process).
std::string symbolizer_text(const StatsReport::Symbolizer& s) {
  if (!s.problem.empty()) return "symbolizer: unavailable (" + s.problem + "): names without lines";
  return "symbolizer: pid " + std::to_string(s.process->pid) +
         ", rss=" + format_size(static_cast<double>(s.process->rss_bytes), false) + ", " +
         std::to_string(s.process->files) + " files read";
}

StatsReport::Symbolizer symbolizer_from(const json& j) {
  const std::string at = "symbolizer";
  StatsReport::Symbolizer s;
  s.addresses_asked = whole(j, at, "addresses_asked");
  s.addresses_resolved = whole(j, at, "addresses_resolved");
  if (j.contains("problem")) s.problem = text(j, at, "problem");
  if (j.contains("process")) {
    const json& p = object(j, at, "process");
    const std::string in = join(at, "process");
    s.process = StatsReport::SymbolizerProcess{static_cast<long>(integer(p, in, "pid")),
                                               integer(p, in, "rss_bytes"), integer(p, in, "files")};
  }
  return s;
}

StatsReport::Allocator allocator_from(const json& j) {
  StatsReport::Allocator a;
  a.name = text(j, "allocator", "name");
  a.file = text(j, "allocator", "file");
  for (const auto& [name, value] : j.items())
    if (name != "name" && name != "file") a.figures.emplace_back(name, integer(j, "allocator", name));
  order_figures(a.name, a.figures);
  return a;
}

StatsReport read_stats(const json& j) {
  StatsReport r;
  r.mode = word(j, "", "mode", [](const std::string& v) { return parse_mode(v); });
  r.tracing = boolean(j, "", "tracing");
  r.sample_interval = whole(j, "", "sample_interval");
  r.max_frames = static_cast<unsigned>(whole(j, "", "max_frames", UINT_MAX));
  const json& traced = object(j, "", "traced");
  r.traced_current = integer(traced, "traced", "current");
  r.traced_peak = integer(traced, "traced", "peak");
  r.tracker_memory = integer(j, "", "tracker_memory");
  r.cap = cap_from(j, "", "tracker_memory_cap");
  r.stack_table_bytes = integer(j, "", "stack_table_bytes");
  r.live_table_bytes = integer(j, "", "live_table_bytes");
  r.stacks = whole(j, "", "stacks");
  r.live_blocks = whole(j, "", "live_blocks");
  r.dropped = whole(j, "", "dropped");
  r.fallback_walks = whole(j, "", "fallback_walks");
  const json& sampled = object(j, "", "sampled");
  r.sampled = {whole(sampled, "sampled", "samples_live"),  integer(sampled, "sampled", "live_bytes"),
               integer(sampled, "sampled", "kept_bytes"),  integer(sampled, "sampled", "kept_limit"),
               whole(sampled, "sampled", "madvise_calls"), integer(sampled, "sampled", "thread_kept_bytes")};
  // Absent from a process of an earlier version.
  if (sampled.contains("hosted_bytes")) r.sampled.hosted_bytes = integer(sampled, "sampled", "hosted_bytes");
  r.symbolizer = symbolizer_from(object(j, "", "symbolizer"));
  r.python_frames = text(j, "", "python_frames");
  r.rss = integer(j, "", "rss");
  r.peak_rss = integer(j, "", "peak_rss");
  const json& m = object(j, "", "mallinfo");
  r.mallinfo.arena = whole(m, "mallinfo", "arena");
  r.mallinfo.hblkhd = whole(m, "mallinfo", "hblkhd");
  r.mallinfo.uordblks = whole(m, "mallinfo", "uordblks");
  r.mallinfo.fordblks = whole(m, "mallinfo", "fordblks");
  r.mallinfo.keepcost = whole(m, "mallinfo", "keepcost");
  if (m.contains("age_ms")) r.mallinfo.age_ms = integer(m, "mallinfo", "age_ms");
  if (m.contains("read_ms")) r.mallinfo.read_ms = number(m, "mallinfo", "read_ms");
  r.allocator = allocator_from(object(j, "", "allocator"));
  r.windows = static_cast<unsigned>(whole(j, "", "windows", UINT_MAX));
  return r;
}

}  // namespace

const std::vector<std::string>& allocator_figure_order(std::string_view allocator) {
  // As src/tracker/allocator.cpp asks each allocator for them.
  static const std::vector<std::string> glibc{"arena", "hblkhd", "uordblks", "fordblks", "keepcost"};
  static const std::vector<std::string> jemalloc{"allocated", "active", "resident",
                                                 "retained",  "mapped", "metadata"};
  static const std::vector<std::string> tcmalloc{"current_allocated_bytes", "heap_size",
                                                 "pageheap_free_bytes", "pageheap_unmapped_bytes"};
  static const std::vector<std::string> mimalloc{"current_rss", "peak_rss", "current_commit", "peak_commit"};
  static const std::vector<std::string> none;
  if (allocator == "glibc") return glibc;
  if (allocator == "jemalloc") return jemalloc;
  if (allocator == "tcmalloc") return tcmalloc;
  if (allocator == "mimalloc") return mimalloc;
  return none;
}

void order_figures(std::string_view allocator, std::vector<std::pair<std::string, std::int64_t>>& figures) {
  const std::vector<std::string>& order = allocator_figure_order(allocator);
  const auto rank = [&](const std::string& name) {
    return std::find(order.begin(), order.end(), name) - order.begin();
  };
  std::stable_sort(figures.begin(), figures.end(),
                   [&](const auto& a, const auto& b) { return rank(a.first) < rank(b.first); });
}

std::string to_json(const StatsReport& r) {
  json allocator = {{"name", r.allocator.name}, {"file", r.allocator.file}};
  for (const auto& [name, bytes] : r.allocator.figures) allocator[name] = bytes;
  const StatsReport::Mallinfo& m = r.mallinfo;
  json mallinfo = {{"arena", m.arena},
                   {"hblkhd", m.hblkhd},
                   {"uordblks", m.uordblks},
                   {"fordblks", m.fordblks},
                   {"keepcost", m.keepcost}};
  if (m.age_ms) mallinfo["age_ms"] = *m.age_ms;
  if (m.read_ms) mallinfo["read_ms"] = *m.read_ms;
  const StatsReport::Sampled& s = r.sampled;
  return dump({{"mode", to_string(r.mode)},
               {"tracing", r.tracing},
               {"sample_interval", r.sample_interval},
               {"max_frames", r.max_frames},
               {"traced", {{"current", r.traced_current}, {"peak", r.traced_peak}}},
               {"tracker_memory", r.tracker_memory},
               {"tracker_memory_cap", to_json(r.cap)},
               {"stack_table_bytes", r.stack_table_bytes},
               {"live_table_bytes", r.live_table_bytes},
               {"stacks", r.stacks},
               {"live_blocks", r.live_blocks},
               {"dropped", r.dropped},
               {"fallback_walks", r.fallback_walks},
               {"sampled",
                {{"samples_live", s.samples_live},
                 {"live_bytes", s.live_bytes},
                 {"kept_bytes", s.kept_bytes},
                 {"kept_limit", s.kept_limit},
                 {"madvise_calls", s.madvise_calls},
                 {"thread_kept_bytes", s.thread_kept_bytes},
                 {"hosted_bytes", s.hosted_bytes}}},
               {"symbolizer", symbolizer_json(r.symbolizer)},
               {"python_frames", r.python_frames},
               {"rss", r.rss},
               {"peak_rss", r.peak_rss},
               {"mallinfo", std::move(mallinfo)},
               {"allocator", std::move(allocator)},
               {"windows", r.windows}});
}

StatsReport stats_report_from_json(std::string_view text) {
  return read_strictly("stats JSON", text, read_stats);
}

std::string to_text(const StatsReport& r) {
  const auto size = [](auto bytes) { return format_size(static_cast<double>(bytes), false); };
  std::string text = "tracing: " + std::string(r.tracing ? "on" : "off") +
                     ", mode=" + std::string(to_string(r.mode)) +
                     ", max_frames=" + std::to_string(r.max_frames);
  if (r.sample_interval != 0) text += ", sample_interval=" + size(r.sample_interval);
  text += "\ntraced: current=" + size(r.traced_current) + ", peak=" + size(r.traced_peak) +
          "\ntracker memory: " + size(r.tracker_memory) + " (cap " + size(r.cap.max_bytes) +
          "; stack table " + size(r.stack_table_bytes) + ", live-block table " + size(r.live_table_bytes) +
          ")";
  if (const std::string cap = format_cap(r.cap); !cap.empty()) text += "\n" + cap;
  text += "\nstacks=" + std::to_string(r.stacks) + ", live_blocks=" + std::to_string(r.live_blocks) +
          ", dropped=" + std::to_string(r.dropped) + ", fallback_walks=" + std::to_string(r.fallback_walks);
  const StatsReport::Sampled& s = r.sampled;
  if (r.mode == Mode::sampled || s.live_bytes + s.kept_bytes + s.hosted_bytes > 0)
    text += "\nsampled: " + std::to_string(s.samples_live) + " samples live in " + size(s.hosted_bytes) +
            " of glibc's heap and " + size(s.live_bytes) + " of runs, " + size(s.kept_bytes) +
            " kept for reuse (at most " + size(s.kept_limit) + " now), " + size(s.thread_kept_bytes) +
            " kept by threads for their next sample, " + std::to_string(s.madvise_calls) + " madvise calls";
  text += "\nrss=" + size(r.rss) + ", peak_rss=" + size(r.peak_rss);
  const std::string& allocator = r.allocator.name;
  const StatsReport::Mallinfo& m = r.mallinfo;
  if (allocator == "glibc" || allocator == "unknown")  // else glibc's arena is unused
    text += "\nmallinfo2: arena=" + size(m.arena) + ", hblkhd=" + size(m.hblkhd) +
            ", uordblks=" + size(m.uordblks) + ", fordblks=" + size(m.fordblks) +
            ", keepcost=" + size(m.keepcost);
  text += "\nallocator: " + allocator;
  const auto& figures = r.allocator.figures;
  for (std::size_t i = 0; i < figures.size(); ++i)
    text += (i == 0 ? ": " : ", ") + figures[i].first + "=" + size(figures[i].second);
  // Said when it matters: figures a second old or more, or a read that stalled malloc 1 ms.
  const std::int64_t age_ms = m.age_ms.value_or(0);
  const double read_ms = m.read_ms.value_or(0);
  if (allocator == "glibc" && (age_ms >= 1000 || read_ms >= 1)) {
    char age[96];
    std::snprintf(age, sizeof age, " (read %.1f s ago, in %.2f ms)", static_cast<double>(age_ms) / 1000,
                  read_ms);
    text += age;
  }
  if (!r.symbolizer.problem.empty() || r.symbolizer.process) text += "\n" + symbolizer_text(r.symbolizer);
  if (!r.python_frames.empty()) text += "\npython frames: " + r.python_frames;
  return text + "\n";
}

LIVEHEAP_NAMESPACE_END
