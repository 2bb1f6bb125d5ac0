// The tracker facade: validates options, drives the engine, and turns its raw stacks into
// symbolized snapshots (copy the engine's totals first, symbolize after, outside any lock).
#include "liveheap/tracker.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <new>
#include <span>
#include <stdexcept>
#include <string>

#include "address_index.hpp"
#include "decoded_stacks.hpp"
#include "engine.hpp"
#include "fork_repairs.hpp"
#include "history.hpp"
#include "loaded_code.hpp"
#include "main_program.hpp"
#include "wall_clock.hpp"
#include "peak.hpp"
#include "preloaded_session.hpp"
#include "python_frame_table.hpp"
#include "python_runtime.hpp"
#include "request_route.hpp"
#include "stack_capture.hpp"
#include "symbolizer.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace {

// Serializes start/stop/clear: the engine requires it.
std::mutex g_control;
Options g_options;  // guarded by g_control
// Options::defer_recorders: whether start() left the recorders waiting, and whether this
// process has called start_recorders() (from then on start() runs them at once). Guarded
// by g_control; a forked child starts over (after_fork_in_child).
bool g_recorders_waiting = false;
bool g_recorders_released = false;

// fork() without exec, in the child (one thread): a deferring session waits again, for the
// child's own start_recorders() (its endpoint calls it once the child has lived a moment);
// most children exec at once and never need a thread. g_control is made afresh: a thread
// of the parent may have held it (a takeover starting the session, a report clearing), and
// the child's endpoint and exit would wait for that thread, which is not here, forever.
void after_fork_in_child() {
  new (&g_control) std::mutex;
  g_recorders_released = false;
  g_recorders_waiting = g_options.defer_recorders && engine::active();
}
// At load, before any thread can take g_control (see engine/fork_repairs.hpp).
[[gnu::constructor]] void register_fork_repair() noexcept { engine::on_fork_child(after_fork_in_child); }

engine::Mode to_engine(Mode mode) {
  switch (mode) {
    case Mode::exact: return engine::Mode::exact;
    case Mode::sampled: return engine::Mode::sampled;
    case Mode::off: break;
  }
  return engine::Mode::off;
}

// The engine's stack buffer is sized for the deepest stack a setting can ask for.
static_assert(engine::kMaxFramesCapture >= settings::kFrames.max);

// start()'s checks, with the settings module's ranges (the environment and HTTP use them too).
void validate(const Options& o) {
  if (o.mode == Mode::off)
    throw std::invalid_argument("mode 'off' cannot be started: call liveheap::stop() instead");
  if (!settings::kFrames.contains(o.max_frames))
    throw std::invalid_argument(settings::out_of_range("max_frames", o.max_frames, settings::kFrames));
  if (!settings::kSampleInterval.contains(o.sample_interval))
    throw std::invalid_argument(settings::out_of_range("sample_interval", o.sample_interval,
                                                       settings::kSampleInterval, " bytes", "2^40"));
  if (!settings::kHistoryInterval.contains(o.history_interval_s))
    throw std::invalid_argument(settings::out_of_range("history_interval_s", o.history_interval_s,
                                                       settings::kHistoryInterval, " seconds"));
  if (!settings::kTrackerMemory.contains(o.max_tracker_memory))
    throw std::invalid_argument(settings::out_of_range("max_tracker_memory", o.max_tracker_memory,
                                                       settings::kTrackerMemory, " bytes"));
}

struct RawTrace {
  std::vector<std::uintptr_t> frames;
  engine::StackSums sums;
};

// Every frame of a snapshot, once: the frames of addresses[k] (its inline chain, innermost
// first) are frames[first[k] .. first[k + 1]). The snapshot's tracebacks index into it.
struct SnapshotFrames {
  std::shared_ptr<const Traceback::FrameTable> frames;
  std::vector<std::uint32_t> first;
};

SnapshotFrames build_frame_table(std::vector<std::vector<Frame>> by_address) {
  std::size_t total = 0;
  for (const std::vector<Frame>& chain : by_address) total += chain.size();
  auto frames = std::make_shared<Traceback::FrameTable>();
  frames->reserve(total);
  std::vector<std::uint32_t> first{0};
  first.reserve(by_address.size() + 1);
  for (std::vector<Frame>& chain : by_address) {
    std::move(chain.begin(), chain.end(), std::back_inserter(*frames));
    first.push_back(static_cast<std::uint32_t>(frames->size()));
  }
  return {std::move(frames), std::move(first)};
}

// start(), or (engine_started) the tracker's part of it for a session the engine runs.
void start_session(const Options& options, bool engine_started) {
  validate(options);
  set_plumbing(options.plumbing);  // throws for a bad glob, before anything changes
  if (!engine::hooks_installed())
    throw std::runtime_error(
        "liveheap's malloc is not in effect in this process (another allocator was linked "
        "first?): link liveheap before it, or run under LD_PRELOAD=libliveheap_preload.so");
  std::lock_guard lock(g_control);
  g_options = options;
  engine::load_unwinder();  // the fallback walks' unwinder, before any walk needs it
  if (!engine_started &&
      !engine::start({to_engine(options.mode), options.max_frames, options.sample_interval,
                      options.sample_seed, static_cast<std::int64_t>(options.max_tracker_memory)}))
    throw std::runtime_error("sampled mode could not reserve address space for its samples");
  // The recorders' state and threads are the tracker's own memory, not the caller's.
  IgnoreScope ignore;
  const bool run_now = !options.defer_recorders || g_recorders_released;
  tracker::history_start(options.history_interval_s, run_now,
                         options.mode == Mode::sampled ? options.sample_interval : 0);
  peak::on_start(run_now, !options.defer_recorders);
  g_recorders_waiting = !run_now;
}

}  // namespace

void start(const Options& options) { start_session(options, false); }

LIVEHEAP_NAMESPACE_END

void liveheap::tracker::adopt_engine_session(const Options& options) { start_session(options, true); }

LIVEHEAP_NAMESPACE_BEGIN

void start_recorders() {
  std::lock_guard lock(g_control);
  g_recorders_released = true;
  if (!g_recorders_waiting || !engine::active()) return;
  g_recorders_waiting = false;
  IgnoreScope ignore;  // the recorders' threads are the tracker's own memory
  tracker::history_run();
  peak::run();
}

void stop() {
  std::lock_guard lock(g_control);
  tracker::history_stop();
  engine::stop();
  peak::forget();
}

bool is_tracing() noexcept { return engine::active(); }

Options options() noexcept {
  std::lock_guard lock(g_control);
  return g_options;
}

void clear() {
  std::lock_guard lock(g_control);
  engine::clear();
  tracker::history_clear();
  peak::forget();
}

TracedMemory traced_memory() noexcept {
  const engine::Totals t = engine::traced();
  return {t.current, t.peak};
}

void reset_peak() noexcept {
  engine::reset_peak();
  peak::record_now();
}

std::int64_t tracker_memory() noexcept { return engine::own_memory(); }

std::string allocator_file() {
  // Asked once: which object defines malloc first does not change while the process runs.
  static const bool installed = engine::hooks_installed();
  // An allocator linked into the executable is named by it, not by its process title.
  if (installed) return symbolize::main_program_named(engine::next_allocator_file());
  Dl_info info{};
  void* in_effect = dlsym(RTLD_DEFAULT, "malloc");
  if (in_effect == nullptr) return "";
  return symbolize::object_file(in_effect, info);
}

std::int64_t trim_tracker_memory() noexcept { return engine::region_trim(); }

HeapTotals heap_totals() noexcept {
  HeapTotals sum;
  engine::visit_stack_ids(
      [](void* ctx, std::uint32_t, const engine::StackSums& s) {
        auto* t = static_cast<HeapTotals*>(ctx);
        t->inuse_bytes += s.bytes;
        t->inuse_blocks += s.count;
        t->allocated_bytes += s.alloc_bytes;
        t->allocations += s.alloc_count;
      },
      &sum, true);
  return sum;
}

namespace {

TrackerMemoryCap cap_now() noexcept {
  const engine::CapFigures c = engine::cap_figures();
  return {c.max_memory, c.reached, c.folded_blocks, c.folded_bytes, c.dropped_blocks, c.dropped_bytes};
}

}  // namespace

EngineStats engine_stats() noexcept {
  return {engine::stack_count(),
          engine::live_blocks(),
          engine::dropped(),
          engine::fallback_walks(),
          engine::region_kept_bytes(),
          engine::region_madvise_calls(),
          cap_now(),
          engine::stack_table_bytes(),
          engine::live_table_bytes(),
          engine::region_live_bytes(),
          engine::region_kept_limit(),
          engine::region_thread_kept_bytes(),
          engine::hosted_bytes()};
}

namespace {

std::string python_version(std::uint32_t v) {
  std::string text = std::to_string(v >> 24) + "." + std::to_string((v >> 16) & 0xFF) + "." +
                     std::to_string((v >> 8) & 0xFF);
  const unsigned level = (v >> 4) & 0xF;  // 0xA alpha, 0xB beta, 0xC candidate, 0xF final
  if (level >= 0xA && level <= 0xC) text += std::string(1, "abc"[level - 0xA]) + std::to_string(v & 0xF);
  return text;
}

}  // namespace

std::string python_frames_status() {
  IgnoreScope ignore;
  engine::find_python();
  const engine::PythonStatus s = engine::python_status();
  switch (s.support) {
    case engine::PythonSupport::absent: return "";
    case engine::PythonSupport::on: return "on (CPython " + python_version(s.version) + ")";
    case engine::PythonSupport::unsupported:
      return "off: CPython " + (s.version == 0 ? std::string("before 3.11") : python_version(s.version)) +
             " is not supported (3.11 is): native frames only";
    case engine::PythonSupport::incomplete:
      return "off: CPython " + python_version(s.version) + " has no symbol " + s.missing +
             ": native frames only";
  }
  return "";
}

namespace {

// The distinct return addresses of `stacks`, sorted.
std::vector<std::uintptr_t> distinct_addresses(std::span<const std::span<const std::uintptr_t>> stacks) {
  return tracker::AddressIndex(stacks).sorted();
}

// A frame the engine made up, which is no code: the over-the-cap stack's, the route of
// the request that allocated (outermost), or a Python frame.
Frame engine_frame(std::uintptr_t address) {
  if (engine::PythonFrameText py; engine::python_frame_text(address, &py))
    return Frame{py.function, py.file, py.line, std::string(kPythonModule), address};
  if (engine::is_route_frame(address))
    return Frame{engine::route_frame_name(address), "", 0, std::string(kRouteModule), address};
  if (address == engine::kOverCapFrame) return Frame{std::string(kOverCapFunction), "", 0, "", address};
  return Frame{"", "", 0, "", address};
}

// Each stack's frames symbolized, every distinct address once; tracebacks share one table.
std::vector<Traceback> symbolized(std::span<const std::span<const std::uintptr_t>> stacks) {
  const tracker::AddressIndex index(stacks);
  const std::vector<std::uintptr_t>& addresses = index.sorted();
  // The frames that are no code are named, not symbolized: routes and the over-the-cap
  // frame sort first, Python frames (top bit set) last.
  std::size_t named = 0, code_end = addresses.size();
  while (named < addresses.size() && addresses[named] < engine::kFirstCodeAddress) ++named;
  while (code_end > named && engine::is_python_frame(addresses[code_end - 1])) --code_end;
  std::vector<std::vector<Frame>> by_address =
      symbolize::symbolize(std::span<const std::uintptr_t>(addresses).subspan(named, code_end - named));
  std::vector<std::vector<Frame>> names;
  for (std::size_t i = 0; i < named; ++i) names.push_back({engine_frame(addresses[i])});
  by_address.insert(by_address.begin(), std::make_move_iterator(names.begin()),
                    std::make_move_iterator(names.end()));
  for (std::size_t i = code_end; i < addresses.size(); ++i)
    by_address.push_back({engine_frame(addresses[i])});
  const SnapshotFrames table = build_frame_table(std::move(by_address));
  std::vector<Traceback> tracebacks;
  tracebacks.reserve(stacks.size());
  std::vector<std::uint32_t> indices;
  for (std::span<const std::uintptr_t> frames : stacks) {
    indices.clear();
    for (std::uintptr_t a : frames) {
      const std::size_t k = index.position(a);
      for (std::uint32_t i = table.first[k]; i < table.first[k + 1]; ++i) indices.push_back(i);
    }
    tracebacks.emplace_back(table.frames, indices);
  }
  return tracebacks;
}

std::vector<Traceback> symbolized(const std::vector<RawTrace>& raw) {
  std::vector<std::span<const std::uintptr_t>> stacks;
  stacks.reserve(raw.size());
  for (const RawTrace& r : raw) stacks.emplace_back(r.frames);
  return symbolized(stacks);
}

// The ids of the recorded stacks to report: the biggest (by their largest recorded size)
// kHistoryReportStacks, in id order.
std::vector<std::uint32_t> reported_ids(const tracker::RawHistory& raw) {
  std::vector<std::pair<std::uint32_t, std::int64_t>> biggest;  // id, largest size
  for (const auto& entries : raw.entries)
    for (const tracker::HistoryEntry& e : entries) biggest.emplace_back(e.id, e.size);
  std::sort(biggest.begin(), biggest.end());
  std::vector<std::pair<std::int64_t, std::uint32_t>> by_size;
  for (std::size_t i = 0; i < biggest.size(); ++i)
    if (i + 1 == biggest.size() || biggest[i + 1].first != biggest[i].first)
      by_size.emplace_back(biggest[i].second, biggest[i].first);  // the id's largest: sorted last
  if (by_size.size() > tracker::kHistoryReportStacks) {
    std::nth_element(by_size.begin(), by_size.begin() + tracker::kHistoryReportStacks, by_size.end(),
                     std::greater<>());
    by_size.resize(tracker::kHistoryReportStacks);
  }
  std::vector<std::uint32_t> ids;
  for (const auto& [size, id] : by_size) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

// A stack's cumulative allocations where the tick did not record it (-1): the last value
// recorded before; before its first record, that record less the blocks then live (a stack
// absent for holding nothing allocated those blocks since). Never decreasing.
void fill_unrecorded(StackHistory& s) {
  const std::size_t n = s.sizes.size();
  std::size_t first = 0;
  while (first < n && s.allocated[first] < 0) ++first;
  if (first == n) {
    std::fill(s.allocated.begin(), s.allocated.end(), 0);
    std::fill(s.allocations.begin(), s.allocations.end(), 0);
    return;
  }
  const std::int64_t bytes_before =
      first == 0 ? 0 : std::max<std::int64_t>(0, s.allocated[first] - s.sizes[first]);
  const std::int64_t blocks_before =
      first == 0 ? 0 : std::max<std::int64_t>(0, s.allocations[first] - s.counts[first]);
  for (std::size_t p = 0; p < first; ++p) s.allocated[p] = bytes_before, s.allocations[p] = blocks_before;
  for (std::size_t p = first + 1; p < n; ++p)
    if (s.allocated[p] < 0) s.allocated[p] = s.allocated[p - 1], s.allocations[p] = s.allocations[p - 1];
}

}  // namespace

History history() {
  IgnoreScope ignore;
  const tracker::RawHistory raw = tracker::history_raw();
  const Options opts = options();
  History h;
  h.interval_s = raw.interval_s;
  h.points = raw.points;
  h.stacks_per_point = tracker::kHistoryStacksPerPoint;
  h.max_points = tracker::kHistoryPoints;
  h.points_dropped = raw.points_dropped;
  h.noise = opts.mode == Mode::sampled ? opts.sample_interval : 0;
  const std::vector<std::uint32_t> ids = reported_ids(raw);
  tracker::DecodedStacks stacks;
  for (std::uint32_t id : ids) stacks.add(id);  // interned: recorded by the engine's visit
  std::vector<Traceback> tracebacks = symbolized(stacks.spans());
  const std::size_t n = raw.points.size();
  h.stacks.reserve(ids.size());
  for (Traceback& tb : tracebacks)
    h.stacks.push_back({std::move(tb), std::vector<std::int64_t>(n), std::vector<std::int64_t>(n),
                        std::vector<std::int64_t>(n, -1), std::vector<std::int64_t>(n, -1)});
  for (std::size_t p = 0; p < n; ++p)
    for (const tracker::HistoryEntry& e : raw.entries[p]) {
      const auto it = std::lower_bound(ids.begin(), ids.end(), e.id);
      if (it == ids.end() || *it != e.id) continue;
      StackHistory& s = h.stacks[static_cast<std::size_t>(it - ids.begin())];
      s.sizes[p] = e.size;
      s.counts[p] = e.count;
      s.allocated[p] = e.alloc_size;
      s.allocations[p] = e.alloc_count;
    }
  for (StackHistory& s : h.stacks) fill_unrecorded(s);
  return h;
}

namespace {

// What every snapshot of the current session says about how it was made.
SnapshotInfo session_info() {
  const Options opts = options();
  if (!is_tracing()) throw std::runtime_error("tracing is off: start it first (liveheap::start)");
  SnapshotInfo info;
  info.mode = opts.mode;
  info.sample_interval = opts.mode == Mode::sampled ? opts.sample_interval : 0;
  info.max_frames = opts.max_frames;
  info.taken_at_ms = engine::now_ms();
  const TracedMemory traced = traced_memory();
  info.traced_current = traced.current;
  info.traced_peak = traced.peak;
  info.cap = cap_now();
  return info;
}

// Raw stacks with their totals as a Snapshot. Call under an IgnoreScope.
Snapshot snapshot_from(const std::vector<RawTrace>& raw, SnapshotInfo info) {
  std::vector<Traceback> tracebacks = symbolized(raw);
  std::vector<Trace> traces;
  traces.reserve(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i)
    traces.push_back({std::move(tracebacks[i]), raw[i].sums.bytes, raw[i].sums.count, raw[i].sums.alloc_bytes,
                      raw[i].sums.alloc_count});
  info.tracker_memory = tracker_memory();
  return Snapshot(std::move(traces), info);
}

}  // namespace

std::int64_t StackSnapshot::total_size() const noexcept {
  std::int64_t total = 0;
  for (const Stack& s : stacks) total += s.size;
  return total;
}

std::int64_t StackSnapshot::total_count() const noexcept {
  std::int64_t total = 0;
  for (const Stack& s : stacks) total += s.count;
  return total;
}

// The code loaded when a StackSnapshot was taken.
struct StackSnapshot::Code {
  symbolize::LoadedCode loaded;
};

namespace {

// The code loaded now, shared by every snapshot taken while the loader loads and unloads
// nothing (equal counts: the same objects at the same places), so a take lists the objects
// only after a dlopen or dlclose. try_lock: a forked child may inherit the lock held, and
// then simply lists them each time.
std::shared_ptr<const StackSnapshot::Code> code_now() {
  static std::mutex mutex;
  static std::shared_ptr<const StackSnapshot::Code> latest;  // guarded by mutex
  std::unique_lock lock(mutex, std::try_to_lock);
  if (lock.owns_lock() && latest && latest->loaded.counts() == symbolize::loader_counts()) return latest;
  auto code = std::make_shared<const StackSnapshot::Code>(StackSnapshot::Code{symbolize::LoadedCode::now()});
  if (lock.owns_lock()) latest = code;
  return code;
}

void collect_id(void* ctx, std::uint32_t id, const engine::StackSums& sums) {
  static_cast<std::vector<StackSnapshot::Stack>*>(ctx)->push_back(
      {id, sums.bytes, sums.count, sums.alloc_bytes, sums.alloc_count});
}

// The frames of every stack of `stacks`, from the engine's never-freed records; throws
// for an id it never interned or for code unloaded since `stacks` was taken (`now`: the
// code loaded now, listed once per call by the caller when needed).
void frames_of(const StackSnapshot& stacks, tracker::DecodedStacks& out,
               std::shared_ptr<const StackSnapshot::Code>& now, bool check_code = true) {
  if (!stacks.code && !stacks.stacks.empty())
    throw std::invalid_argument("a StackSnapshot not made by take_stack_snapshot() cannot be symbolized");
  const std::size_t first = out.size();
  for (const StackSnapshot::Stack& s : stacks.stacks)
    if (!out.add(s.id))
      throw std::invalid_argument("stack id " + std::to_string(s.id) + " is not one this process interned");
  if (!check_code || !stacks.code || stacks.code->loaded.counts() == symbolize::loader_counts()) return;
  // Something was loaded or unloaded since: each address must still be the same code.
  if (!now)
    now = std::make_shared<const StackSnapshot::Code>(StackSnapshot::Code{symbolize::LoadedCode::now()});
  const std::vector<std::span<const std::uintptr_t>> spans = out.spans();
  const auto mine = std::span(spans).subspan(first);
  for (std::uintptr_t a : distinct_addresses(mine)) {
    if (a < engine::kFirstCodeAddress || engine::is_python_frame(a))
      continue;  // named by the engine (engine_frame)
    const std::string object = stacks.code->loaded.changed_object(a, now->loaded);
    if (!object.empty())
      throw UnloadedCodeError(object +
                              " was unloaded or replaced (dlclose) since the snapshot was taken: its "
                              "stacks' return addresses may hold other code now");
  }
}

Snapshot snapshot_of(const StackSnapshot& stacks, std::vector<Traceback>::iterator tracebacks,
                     const SnapshotInfo& info) {
  std::vector<Trace> traces;
  traces.reserve(stacks.stacks.size());
  for (const StackSnapshot::Stack& s : stacks.stacks)
    traces.push_back({std::move(*tracebacks++), s.size, s.count, s.alloc_size, s.alloc_count});
  return Snapshot(std::move(traces), info);
}

StackSnapshot stack_snapshot_of(bool include_freed) {
  IgnoreScope ignore;
  engine::find_python();  // a program may have loaded libpython since the last look
  StackSnapshot s;
  s.info = session_info();
  engine::visit_stack_ids(collect_id, &s.stacks, include_freed);
  s.stacks.shrink_to_fit();  // kept, perhaps for long: no growth slack
  s.code = code_now();
  s.route_requests = requests_by_route();
  s.info.tracker_memory = tracker_memory();
  return s;
}

}  // namespace

StackSnapshot take_stack_snapshot() { return stack_snapshot_of(false); }
StackSnapshot take_allocation_stack_snapshot() { return stack_snapshot_of(true); }

Snapshot symbolized(const StackSnapshot& stacks) {
  IgnoreScope ignore;
  tracker::DecodedStacks frames;
  std::shared_ptr<const StackSnapshot::Code> now;
  frames_of(stacks, frames, now);
  std::vector<Traceback> tracebacks = symbolized(frames.spans());
  return snapshot_of(stacks, tracebacks.begin(), stacks.info);
}

SymbolizedPair symbolized(const StackSnapshot& now, const StackSnapshot& old) {
  IgnoreScope ignore;
  tracker::DecodedStacks frames;
  std::shared_ptr<const StackSnapshot::Code> code;
  frames_of(now, frames, code);
  frames_of(old, frames, code);
  std::vector<Traceback> tracebacks = symbolized(frames.spans());
  SymbolizedPair pair;
  pair.now = snapshot_of(now, tracebacks.begin(), now.info);
  pair.old = snapshot_of(old, tracebacks.begin() + static_cast<std::ptrdiff_t>(now.stacks.size()), old.info);
  return pair;
}

namespace {

// Symbolized at once (so no code can have gone since), its tracker memory counted after.
Snapshot symbolized_at_once(const StackSnapshot& stacks) {
  SnapshotInfo info = stacks.info;
  tracker::DecodedStacks frames;
  std::shared_ptr<const StackSnapshot::Code> now;
  frames_of(stacks, frames, now, false);
  std::vector<Traceback> tracebacks = symbolized(frames.spans());
  info.tracker_memory = tracker_memory();
  return snapshot_of(stacks, tracebacks.begin(), info);
}

}  // namespace

Snapshot take_snapshot() {
  IgnoreScope ignore;
  return symbolized_at_once(take_stack_snapshot());
}

Snapshot take_allocation_snapshot() {
  IgnoreScope ignore;
  return symbolized_at_once(take_allocation_stack_snapshot());
}

SymbolizerStats symbolizer_stats() noexcept {
  const symbolize::Counts c = symbolize::counts();
  SymbolizerStats stats;
  stats.addresses_asked = c.asked;
  stats.addresses_resolved = c.resolved;
  try {
    IgnoreScope ignore;
    const symbolize::Status process = symbolize::status();
    stats.process_asked = process.asked;
    stats.process_pid = process.pid;
    stats.process_rss_bytes = process.rss_bytes;
    stats.process_files = process.files;
    stats.problem = process.problem;
  } catch (...) {
    // Out of memory copying the reason: the counts stand alone.
  }
  return stats;
}

Snapshot take_peak_snapshot() {
  IgnoreScope ignore;
  SnapshotInfo info = session_info();
  std::shared_ptr<const peak::Record> record = peak::latest();
  if (!record) {  // none since tracing began: the heap now is its peak so far
    peak::record_now();
    record = peak::latest();
  }
  std::vector<RawTrace> raw;
  if (record) {
    raw.reserve(record->stacks.size());
    std::uintptr_t frames[engine::kMaxStackFrames];
    for (const peak::StackAtPeak& s : record->stacks) {
      const std::uint32_t depth = engine::stack_frames(s.id, frames);
      raw.push_back({std::vector<std::uintptr_t>(frames, frames + depth), {s.bytes, s.count, 0, 0}});
    }
    info.taken_at_ms = record->taken_at_ms;
    info.traced_current = record->total;
  }
  return snapshot_from(raw, info);
}

IgnoreScope::IgnoreScope() noexcept { engine::begin_ignore(); }
IgnoreScope::~IgnoreScope() { engine::end_ignore(); }

LIVEHEAP_NAMESPACE_END
