// The tracker facade: start, stop and query heap tracking from the host program.
// Thread-safety: every function may be called from any thread at any time; calls that
// change state (start/stop/clear) are serialized internally.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "liveheap/export.hpp"
#include "liveheap/history.hpp"
#include "liveheap/pprof.hpp"
#include "liveheap/request_scope.hpp"
#include "liveheap/route_report.hpp"
#include "liveheap/settings.hpp"
#include "liveheap/snapshot.hpp"

LIVEHEAP_API_BEGIN

struct Options {
  Mode mode = Mode::exact;
  unsigned max_frames = 32;                // 1..kMaxFrames return addresses kept per stack
  std::uint64_t sample_interval = 524288;  // mean bytes between samples (sampled mode)
  std::uint64_t sample_seed = 0;           // sampled mode: 0 = unpredictable; else repeatable
  // The program's own allocators and pools, reported as plumbing so that key=line names
  // their callers: "GLOB" on a frame's file, "function:GLOB" on its function (see
  // set_plumbing). Empty: only the built-in list (malloc, operator new, std::, ...).
  std::vector<std::string> plumbing{};
  // Seconds between two points of the history (history()); 0: no history. 1..86400.
  unsigned history_interval_s = 10;
  // The most the tracker may hold (tracker_memory()), kMinTrackerMemory..kMaxTrackerMemory
  // bytes. Past 3/4 of it new stacks are not interned: their allocations fold into one
  // stack, kOverCapFunction, which keeps their bytes; past all of it exact mode's live-block
  // table stops growing and new blocks are dropped. Both are counted (TrackerMemoryCap in
  // engine_stats() and every snapshot). Interned stacks are never freed, so the cap applies
  // for the life of the process; a later start() may raise it.
  std::uint64_t max_tracker_memory = std::uint64_t{1} << 30;
  // The history and peak recorders run on liveheap threads. true: start() leaves them
  // stopped until start_recorders(), so a process that lives milliseconds (a shell command
  // under the preload library) pays no thread for figures nobody will read.
  bool defer_recorders = false;
};
// The limits, as liveheap/settings.hpp defines them for every way of setting them.
inline constexpr unsigned kMaxFrames = static_cast<unsigned>(settings::kFrames.max);
inline constexpr unsigned kMaxHistoryInterval =
    static_cast<unsigned>(settings::kHistoryInterval.max);                        // a day
inline constexpr std::uint64_t kMinTrackerMemory = settings::kTrackerMemory.min;  // 1 MiB
inline constexpr std::uint64_t kMaxTrackerMemory = settings::kTrackerMemory.max;  // 1 TiB

// Options from the environment: LIVEHEAP_MODE=off|exact|sampled (unset: `default_mode`),
// LIVEHEAP_FRAMES=1..kMaxFrames, LIVEHEAP_SAMPLE_INTERVAL=bytes, LIVEHEAP_PLUMBING=comma-
// separated plumbing globs ("function:arena_*,*/obmalloc.c"), LIVEHEAP_HISTORY_INTERVAL=
// seconds between history points (0: off), LIVEHEAP_MAX_TRACKER_MEMORY=bytes with an
// optional unit B, KiB, MiB, GiB, TiB ("256MiB"). std::nullopt for "off".
// Throws std::invalid_argument naming the variable and its bad value.
std::optional<Options> options_from_environment(Mode default_mode);

// Begins tracing (clearing any previous traces), as tracemalloc.start(), and makes
// options.plumbing the user's plumbing list (set_plumbing). Throws
// std::invalid_argument for bad options (naming the field and its range, e.g.
// "max_frames must be 1..128, got 0"), std::runtime_error when the allocation hooks
// are not in effect (liveheap's malloc lost to another allocator's).
void start(const Options& options = {});
// Starts the recorders that start() deferred (Options::defer_recorders); from then on this
// process (not a forked child) starts them at once. No effect when not tracing.
void start_recorders();
// Stops tracing and clears the traces, as tracemalloc.stop().
void stop();
bool is_tracing() noexcept;
// The options of the current (or last) tracing session.
Options options() noexcept;
// Forgets every trace and resets the peak, tracing stays as it is (tracemalloc.clear_traces).
void clear();

struct TracedMemory {
  std::int64_t current = 0;  // traced live bytes (an estimate in sampled mode)
  std::int64_t peak = 0;     // highest `current` since start, clear or reset_peak
};
TracedMemory traced_memory() noexcept;
void reset_peak() noexcept;

// Live and cumulative totals over every stack, without symbolizing anything (estimates in
// sampled mode): for metrics that a scraper reads often.
struct HeapTotals {
  std::int64_t inuse_bytes = 0;
  std::int64_t inuse_blocks = 0;
  std::int64_t allocated_bytes = 0;  // since the process started; clear() keeps it
  std::int64_t allocations = 0;      // likewise
};
HeapTotals heap_totals() noexcept;

// The process's executable file mappings (/proc/self/maps) with their ELF build ids.
std::vector<Mapping> executable_mappings();

// Bytes the tracker itself holds: its tables plus what its own threads and reports
// allocated (tracemalloc.get_tracemalloc_memory). Never part of any trace.
std::int64_t tracker_memory() noexcept;
// Gives the freed sampled blocks' pages that sampled mode keeps for reuse (part of
// tracker_memory()) back to the kernel now; the bytes given back. POST /trim calls it.
std::int64_t trim_tracker_memory() noexcept;

struct EngineStats {
  std::uint64_t stacks = 0;       // distinct stacks interned
  std::uint64_t live_blocks = 0;  // traced blocks (samples, in sampled mode) alive now
  std::uint64_t dropped = 0;      // records the engine could not keep (tables full)
  // Stack walks handed to libunwind since start-up: frames without a simple unwind rule
  // (signal handlers, code without CFI); each such walk costs about twice a normal one.
  std::uint64_t fallback_walks = 0;
  // Sampled mode's region: bytes of freed runs kept resident for reuse now, and madvise
  // calls made to give pages back since start-up.
  std::int64_t region_kept_bytes = 0;
  std::uint64_t region_madvise_calls = 0;
  // The tracker-memory cap and what it folded or dropped since start-up.
  TrackerMemoryCap cap;
  // Bytes mapped now for the interned stacks, and for the live-block tables (exact mode).
  std::int64_t stack_table_bytes = 0;
  std::int64_t live_table_bytes = 0;
  // Sampled mode's region: bytes of the live samples' runs (pages, headers and rounding
  // included), and the most it may keep resident for reuse now.
  std::int64_t region_live_bytes = 0;
  std::int64_t region_kept_limit = 0;
  // Sampled mode's region: bytes of the one-page runs threads keep for their next sample
  // (at most one a thread), outside the kept runs and their limit.
  std::int64_t region_thread_kept_bytes = 0;
  // Sampled mode's blocks in glibc's heap (glibc underneath): what it holds for the live
  // samples, their headers and the slack before a page boundary included.
  std::int64_t hosted_bytes = 0;
};
EngineStats engine_stats() noexcept;

// Whether stacks carry the Python frames of a CPython running in this process, in one
// line: "on (CPython 3.11.2)", or "off: " and why (a version liveheap has no layout for, a
// symbol it needs missing); empty when the process runs no CPython.
std::string python_frames_status();

// The file of the allocator that serves malloc in this process: the one liveheap forwards
// to (glibc's libc.so.6, libjemalloc.so.2, ...), or the one in effect instead of liveheap's.
std::string allocator_file();

// The traced heap now, symbolized (tracemalloc.take_snapshot). Throws std::runtime_error
// when tracing is off.
Snapshot take_snapshot();
// As take_snapshot(), but with a trace for every stack that allocated since the process
// started, live or not (size and count 0 when nothing of it is live): what a pprof
// profile's alloc_* values need. Their alloc_size/alloc_count never go back with clear().
Snapshot take_allocation_snapshot();

// A snapshot that is cheap until shown: per stack with live blocks, the engine's id of the
// stack and its totals, nothing symbolized. Taking one copies integers (O(stacks), no frame
// looked up, ~40 bytes a stack); symbolized() makes Snapshots of it when a report shows it.
// The baseline of POST /baseline and a ?seconds= window's start are these.
// Stack ids are never freed nor renumbered while the process lives (clear(), stop() and
// start() keep them; a forked child inherits them), so one may be kept for as long as
// needed. What can go stale is code: see symbolized().
struct StackSnapshot {
  struct Stack {
    std::uint32_t id = 0;  // the interned stack
    std::int64_t size = 0;
    std::int64_t count = 0;
    std::int64_t alloc_size = 0;  // as Trace: since the process started
    std::int64_t alloc_count = 0;
  };
  std::vector<Stack> stacks;  // ascending ids
  SnapshotInfo info;
  // The code loaded when it was taken (opaque): symbolized() names no address whose code
  // was unloaded since.
  struct Code;
  std::shared_ptr<const Code> code;
  // Each route's requests when it was taken (what /routes counts a baseline's requests from).
  std::vector<RouteRequests> route_requests{};

  std::int64_t total_size() const noexcept;
  std::int64_t total_count() const noexcept;
};
// The traced heap now, as take_snapshot() but unsymbolized. Throws std::runtime_error when
// tracing is off.
StackSnapshot take_stack_snapshot();
// As take_allocation_snapshot() (every stack that allocated since start-up, live or not),
// unsymbolized: the start of a pprof ?seconds= window.
StackSnapshot take_allocation_stack_snapshot();

// Per route of the requests this process handled (and "(no request)"): requests, live and
// allocated bytes, and what the requests retained: since `baseline` (its live bytes and
// requests by route) when given, else since start-up. Verdicts are left "unknown" (the
// routes' series are the history's: HistoryIndex with KeyType::route). Nothing is
// symbolized. Throws std::runtime_error when tracing is off.
RouteReport take_route_report(const StackSnapshot* baseline = nullptr);

// symbolized()'s refusal when the code of one of the stacks to name was unloaded (dlclose)
// since the StackSnapshot was taken: its return addresses may hold another object's code
// now. what() names the object; take the snapshot again.
class UnloadedCodeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// `stacks` as a Snapshot (its info as taken): each distinct return address of its stacks
// symbolized once, now. Throws std::invalid_argument for an id this process never interned
// (or a StackSnapshot with stacks that take_stack_snapshot() did not make), UnloadedCodeError
// as above.
Snapshot symbolized(const StackSnapshot& stacks);
// Both as Snapshots sharing one frame table (the union of their stacks' addresses
// symbolized once): what a diff of `now` against `old` needs. Throws as above.
struct SymbolizedPair {
  Snapshot now;
  Snapshot old;
};
SymbolizedPair symbolized(const StackSnapshot& now, const StackSnapshot& old);

// What the symbolizer has done since start-up: return addresses asked of it (each report
// asks each distinct address of the stacks it shows, once) and, of them, those it looked up
// in debug information (not in its cache). The debug information is read by
// liveheap-symbolizer, a process shared by the user's traced processes: as of the last
// request sent to it, its pid, resident memory and the files it holds, or why it could not
// answer (names then come without lines). GET /stats shows them as "symbolizer".
struct SymbolizerStats {
  std::uint64_t addresses_asked = 0;
  std::uint64_t addresses_resolved = 0;
  bool process_asked = false;  // the symbolizer process was needed since start-up
  int process_pid = 0;
  std::int64_t process_rss_bytes = 0;
  std::int64_t process_files = 0;
  std::string problem;  // "" when the last request was answered
};
SymbolizerStats symbolizer_stats() noexcept;

// The history recorded since start or clear, every options().history_interval_s seconds
// (the last hour at 10 s; see docs/history.md), its stacks symbolized now: the biggest
// stacks of each point, at most a few thousand in all. interval_s is 0 when history is off.
History history();

// The heap at its high-water mark, as heaptrack's "peak" view: per stack, what was live when
// the traced heap last passed the recorded peak by 1/32 of it (at least 64 KiB). A liveheap
// thread checks the traced total every 5 ms while tracing (the allocation hooks do nothing
// more), so a peak that lasts less than that may be missed and the record may stand up to
// 1/32 below the peak. Its info's taken_at_ms is when the record was taken, traced_current
// its total, traced_peak the peak now. clear(), stop() and start() forget it; reset_peak()
// records the heap now. Throws std::runtime_error when tracing is off.
Snapshot take_peak_snapshot();

// While alive, allocations made by this thread are not traced and count as the tracker's
// own memory. Reports and routes hold one so that looking never shows up as growth.
class IgnoreScope {
 public:
  IgnoreScope() noexcept;
  ~IgnoreScope();
  IgnoreScope(const IgnoreScope&) = delete;
  IgnoreScope& operator=(const IgnoreScope&) = delete;
};

LIVEHEAP_API_END
