// GET /stats as one value (also the answer of POST /start, /stop, /clear and /reset-peak):
// tracing's state, the traced heap, liveheap's own memory and tables, the sampled region,
// the symbolizer, the process's RSS and the allocator's own figures. Written as JSON or
// text, read back strictly. Thread-safety: plain values; the functions are pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "liveheap/export.hpp"
#include "liveheap/snapshot.hpp"

LIVEHEAP_API_BEGIN

struct StatsReport {
  Mode mode = Mode::off;  // off while not tracing
  bool tracing = false;
  std::uint64_t sample_interval = 0;  // sampled mode only, else 0
  unsigned max_frames = 0;
  std::int64_t traced_current = 0;
  std::int64_t traced_peak = 0;
  std::int64_t tracker_memory = 0;
  TrackerMemoryCap cap;
  std::int64_t stack_table_bytes = 0;
  std::int64_t live_table_bytes = 0;
  std::uint64_t stacks = 0;
  std::uint64_t live_blocks = 0;
  std::uint64_t dropped = 0;
  std::uint64_t fallback_walks = 0;
  // What sampled mode holds: its samples' runs in the sample region, the freed runs kept
  // for reuse, the one-page runs threads keep for their next sample; and its samples in
  // glibc's heap (hosted).
  struct Sampled {
    std::uint64_t samples_live = 0;
    std::int64_t live_bytes = 0;
    std::int64_t kept_bytes = 0;
    std::int64_t kept_limit = 0;
    std::uint64_t madvise_calls = 0;
    std::int64_t thread_kept_bytes = 0;
    std::int64_t hosted_bytes = 0;
    friend bool operator==(const Sampled&, const Sampled&) = default;
  } sampled;
  // The symbolizer's counts and, once a report needed it, its process, or why names came
  // without lines.
  struct SymbolizerProcess {
    long pid = 0;
    std::int64_t rss_bytes = 0;
    std::int64_t files = 0;
    friend bool operator==(const SymbolizerProcess&, const SymbolizerProcess&) = default;
  };
  struct Symbolizer {
    std::uint64_t addresses_asked = 0;
    std::uint64_t addresses_resolved = 0;
    std::optional<SymbolizerProcess> process;
    std::string problem;  // "" unless the process could not be asked
    friend bool operator==(const Symbolizer&, const Symbolizer&) = default;
  } symbolizer;
  // Whether stacks carry Python frames: "on (CPython 3.11.2)", "off: <why>: native frames
  // only", or "" in a process without CPython.
  std::string python_frames;
  std::int64_t rss = 0;  // -1 when unknown
  std::int64_t peak_rss = 0;
  // glibc's mallinfo2(); with glibc serving malloc, read under its rate limit: how old the
  // figures are and what reading them cost.
  struct Mallinfo {
    std::uint64_t arena = 0;
    std::uint64_t hblkhd = 0;
    std::uint64_t uordblks = 0;
    std::uint64_t fordblks = 0;
    std::uint64_t keepcost = 0;
    std::optional<std::int64_t> age_ms;
    std::optional<double> read_ms;
    friend bool operator==(const Mallinfo&, const Mallinfo&) = default;
  } mallinfo;
  struct Allocator {
    std::string name;  // "glibc", "jemalloc", "tcmalloc", "mimalloc", or "unknown"
    std::string file;
    // Its own figures in its own names, in the order it names them (allocator_figure_order).
    std::vector<std::pair<std::string, std::int64_t>> figures;
    friend bool operator==(const Allocator&, const Allocator&) = default;
  } allocator;
  unsigned windows = 0;  // ?seconds= windows open now on the handler that answered

  friend bool operator==(const StatsReport&, const StatsReport&) = default;
};

// The figures' names of an allocator in the order it gives them (AllocatorInfo::figures):
// the JSON keys them by name, so a report read back is put in this order again. Empty for
// an allocator without figures.
const std::vector<std::string>& allocator_figure_order(std::string_view allocator);
// `figures` (name, bytes) put in that order; names it does not know go last, as they were.
void order_figures(std::string_view allocator, std::vector<std::pair<std::string, std::int64_t>>& figures);

// {"mode", "tracing", "sample_interval", "max_frames", "traced": {"current", "peak"},
// "tracker_memory", "tracker_memory_cap", "stack_table_bytes", "live_table_bytes",
// "stacks", "live_blocks", "dropped", "fallback_walks", "sampled": {...}, "symbolizer":
// {...}, "python_frames", "rss", "peak_rss", "mallinfo": {...}, "allocator": {"name", "file", figures...},
// "windows"}, one line.
std::string to_json(const StatsReport& report);
// Throws std::invalid_argument naming a missing or mistyped field ("stats JSON: traced.peak
// is missing").
StatsReport stats_report_from_json(std::string_view text);
// "tracing: on, mode=exact, max_frames=25\ntraced: current=..., peak=...\n...", ending with
// a newline.
std::string to_text(const StatsReport& report);

LIVEHEAP_API_END
