// The in-process half of the overhead benchmark: with liveheap linked and tracing exactly,
// build a heap of 1M live blocks over 10k distinct stacks (10k distinct return addresses,
// so a cold report has 10k frames to symbolize), then time what an operator's curl costs.
//
//   report_bench [--blocks N] [--stacks M]   prints key=value lines that overhead_bench
//                                 tabulates; M: 10000 (the default) or a multiple of it, up
//                                 to 160000 (the scale row: --blocks 10000000
//                                 --stacks 100000)
//
// cold_report_ms    first snapshot + statistics(line) + top-10 text: symbol cache cold
// warm_report_ms    the same again (median of 5): every frame cached
// snapshot_diff_ms  snapshot + compare_to(baseline, line) after some churn (median of 5),
//                   also apart: snapshot_ms, compare_ms
// tracker_bytes_per_block  tracker_memory() / live blocks, before any report ran; of which
//                   live_table_bytes_per_block (the live-block tables / live blocks) and
//                   stack_table_bytes_per_stack (the interned stacks / distinct stacks)
// history_tick_ms   one history tick at these 10k stacks (median of a full window, 360
//                   ticks driven by the bench), also its worst: history_tick_worst_ms
// history_bytes_per_point   tracker_memory() growth per tick, over those ticks
// history_ms        GET /history?format=json&limit=50 (as the dashboard asks) over the full
//                   window, through the admin server on loopback (median of 5 after a first
//                   one, history_cold_ms); history_kib: the answer's size
// peak_ms           GET /peak?format=json the same way (median of 5)
// baseline_ms       POST /baseline through the admin server (median of 5 after a first one,
//                   baseline_first_ms; symbol cache warm), at the 10k stacks;
//                   baseline_bytes: tracker_memory() growth while the first one is held
// snapshot_held_bytes  tracker_memory() growth while a take_snapshot() is held (what a
//                   baseline was before per-stack totals), and stack_snapshot_held_bytes while a
//                   take_stack_snapshot() is (what it is now); stack_snapshot_ms: taking one
//                   (median of 5)
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "history.hpp"  // src/tracker: history_tick(), so the bench drives the ticks
#include "liveheap/format.hpp"
#include "liveheap/http.hpp"
#include "liveheap/snapshot.hpp"
#include "liveheap/tracker.hpp"

namespace {

constexpr int kSitesPerFunction = 16;
constexpr std::size_t kFunctions = 625;  // x 16 call sites = 10,000 distinct stacks
constexpr int kStacks = kSitesPerFunction * static_cast<int>(kFunctions);
constexpr int kRepeats = 5;

using AllocateFn = void** (*)(int site, long blocks, void** out);

// Each instantiation is separate code, so each of its 16 malloc calls has its own return
// address: 625 x 16 = 10k stacks and 10k distinct innermost user frames. (Templates cost far
// less compile time than 10k handwritten functions; the sizes differ per case so the
// compiler cannot merge the calls.)
#define LIVEHEAP_BENCH_SITE(k) \
  case k: *out++ = std::malloc(size + k); break;
template <std::size_t I>
[[gnu::noinline]] void** allocate_at(int site, long blocks, void** out) {
  constexpr std::size_t size = 16 + I % 32;
  for (long b = 0; b < blocks; ++b) {
    switch (site) {
      LIVEHEAP_BENCH_SITE(0) LIVEHEAP_BENCH_SITE(1) LIVEHEAP_BENCH_SITE(2)
      LIVEHEAP_BENCH_SITE(3) LIVEHEAP_BENCH_SITE(4) LIVEHEAP_BENCH_SITE(5)
      LIVEHEAP_BENCH_SITE(6) LIVEHEAP_BENCH_SITE(7) LIVEHEAP_BENCH_SITE(8)
      LIVEHEAP_BENCH_SITE(9) LIVEHEAP_BENCH_SITE(10) LIVEHEAP_BENCH_SITE(11)
      LIVEHEAP_BENCH_SITE(12) LIVEHEAP_BENCH_SITE(13) LIVEHEAP_BENCH_SITE(14)
      LIVEHEAP_BENCH_SITE(15)
    }
  }
  return out;
}
#undef LIVEHEAP_BENCH_SITE

template <std::size_t... I>
constexpr std::array<AllocateFn, sizeof...(I)> make_table(std::index_sequence<I...>) {
  return {&allocate_at<I>...};
}
constexpr auto kAllocators = make_table(std::make_index_sequence<kFunctions>());

// --stacks beyond 10k: the same 10k call sites reached through one of up to kCallers outer
// functions, so each caller adds 10k stacks (that differ in their outer frames only, as a
// server's stacks do) and one distinct frame.
constexpr std::size_t kCallers = 16;
using CallerFn = void** (*)(AllocateFn allocate, int site, long blocks, void** out);
template <std::size_t I>
[[gnu::noinline]] void** call_through(AllocateFn allocate, int site, long blocks, void** out) {
  void** end = allocate(site, blocks, out);
  asm volatile("" ::: "memory");  // not a tail call: this frame stays on the stack
  return end;
}
template <std::size_t... I>
constexpr std::array<CallerFn, sizeof...(I)> make_callers(std::index_sequence<I...>) {
  return {&call_through<I>...};
}
constexpr auto kCallerTable = make_callers(std::make_index_sequence<kCallers>());

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point begin) {
  return std::chrono::duration<double, std::milli>(Clock::now() - begin).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// What a "top 10 lines" request does after the snapshot: group, sort, render.
std::size_t render_top_lines(const liveheap::Snapshot& snapshot) {
  const auto stats = snapshot.statistics(liveheap::KeyType::line);
  std::string text;
  for (std::size_t i = 0; i < stats.size() && i < 10; ++i)
    text += liveheap::format_statistic(stats[i], liveheap::KeyType::line) + '\n';
  return text.size();
}

double time_report() {
  liveheap::IgnoreScope ignore;  // as the HTTP routes do: looking is not growth
  const auto begin = Clock::now();
  const std::size_t rendered = render_top_lines(liveheap::take_snapshot());
  const double ms = ms_since(begin);
  if (rendered == 0) std::fprintf(stderr, "report_bench: empty report\n");
  return ms;
}

// Timed in two parts so a miss points at the engine/symbolizer or at the report layer.
struct DiffTimes {
  std::vector<double> snapshot_ms, compare_ms;
};
void time_snapshot_diff(const liveheap::Snapshot& baseline, DiffTimes& times) {
  liveheap::IgnoreScope ignore;
  const auto begin = Clock::now();
  const liveheap::Snapshot now = liveheap::take_snapshot();
  times.snapshot_ms.push_back(ms_since(begin));
  const auto compare_begin = Clock::now();
  const auto diff = now.compare_to(baseline, liveheap::KeyType::line);
  times.compare_ms.push_back(ms_since(compare_begin));
  if (diff.empty()) std::fprintf(stderr, "report_bench: empty diff\n");
}

std::size_t distinct_frames(const liveheap::Snapshot& snapshot) {
  std::set<std::uintptr_t> addresses;
  for (const liveheap::Trace& t : snapshot.traces())
    for (const liveheap::Frame& f : t.traceback) addresses.insert(f.address);
  return addresses.size();
}

// One GET on a fresh loopback connection, timed from the request's first byte to the last
// byte of the answer; `bytes`: the body's size. The client's own allocations are not traced.
double time_request(std::uint16_t port, boost::beast::http::verb verb, const std::string& target,
                    std::size_t& bytes) {
  namespace http = boost::beast::http;
  using boost::asio::ip::tcp;
  liveheap::IgnoreScope ignore;
  boost::asio::io_context io;
  tcp::socket socket(io);
  socket.connect({boost::asio::ip::make_address("127.0.0.1"), port});
  http::request<http::empty_body> request{verb, target, 11};
  request.set(http::field::host, "127.0.0.1");
  const auto begin = Clock::now();
  http::write(socket, request);
  boost::beast::flat_buffer buffer;
  http::response<http::string_body> response;
  http::read(socket, buffer, response);
  const double ms = ms_since(begin);
  bytes = response.body().size();
  if (response.result_int() != 200)
    std::fprintf(stderr, "report_bench: %s answered %u\n", target.c_str(), response.result_int());
  return ms;
}

double time_get(std::uint16_t port, const std::string& target, std::size_t& bytes) {
  return time_request(port, boost::beast::http::verb::get, target, bytes);
}

// What a baseline costs to take and to keep: POST /baseline through the admin server, and
// in-process what the baseline used to be, a symbolized Snapshot.
void measure_baseline() {
  liveheap::http::AdminServer server({}, "127.0.0.1", 0);
  const std::string target = "/debug/memory/baseline";
  std::size_t bytes = 0;
  const std::int64_t memory_before = liveheap::tracker_memory();
  std::printf("baseline_first_ms=%.1f\n",
              time_request(server.port(), boost::beast::http::verb::post, target, bytes));
  std::printf("baseline_bytes=%lld\n",
              static_cast<long long>(liveheap::tracker_memory() - memory_before));
  std::vector<double> ms;
  for (int i = 0; i < kRepeats; ++i)
    ms.push_back(time_request(server.port(), boost::beast::http::verb::post, target, bytes));
  std::printf("baseline_ms=%.1f\n", median(ms));
  liveheap::IgnoreScope ignore;
  const std::int64_t before_snapshot = liveheap::tracker_memory();
  const liveheap::Snapshot held = liveheap::take_snapshot();
  std::printf("snapshot_held_bytes=%lld\n",
              static_cast<long long>(liveheap::tracker_memory() - before_snapshot));
  std::vector<double> stacks_ms;
  for (int i = 0; i < kRepeats; ++i) {
    const auto begin = Clock::now();
    const liveheap::StackSnapshot taken = liveheap::take_stack_snapshot();
    stacks_ms.push_back(ms_since(begin));
  }
  std::printf("stack_snapshot_ms=%.2f\n", median(stacks_ms));
  const std::int64_t before_stacks = liveheap::tracker_memory();
  const liveheap::StackSnapshot held_stacks = liveheap::take_stack_snapshot();
  std::printf("stack_snapshot_held_bytes=%lld\n",
              static_cast<long long>(liveheap::tracker_memory() - before_stacks));
}

// A full history window (360 ticks) over the live stacks, then /history and /peak through
// the admin server.
void measure_history() {
  constexpr int kTicks = 360;  // tracker::kHistoryPoints: an hour at the default 10 s
  liveheap::tracker::history_tick();  // grows the tick's scratch once, as the test does
  const std::int64_t memory_before = liveheap::tracker_memory();
  std::vector<double> ticks;
  for (int i = 0; i < kTicks; ++i) {
    const auto begin = Clock::now();
    liveheap::tracker::history_tick();
    ticks.push_back(ms_since(begin));
  }
  const std::int64_t grown = liveheap::tracker_memory() - memory_before;
  std::printf("history_tick_ms=%.2f\nhistory_tick_worst_ms=%.2f\nhistory_bytes_per_point=%.0f\n",
              median(ticks), *std::max_element(ticks.begin(), ticks.end()),
              static_cast<double>(grown) / kTicks);
  std::printf("history_points=%zu\n", liveheap::history().points.size());

  liveheap::http::AdminServer server({}, "127.0.0.1", 0);
  std::size_t bytes = 0;
  const std::string history = "/debug/memory/history?format=json&limit=50";
  std::printf("history_cold_ms=%.1f\n", time_get(server.port(), history, bytes));
  std::vector<double> history_ms, peak_ms;
  for (int i = 0; i < kRepeats; ++i) history_ms.push_back(time_get(server.port(), history, bytes));
  std::printf("history_ms=%.1f\nhistory_kib=%.0f\n", median(history_ms), static_cast<double>(bytes) / 1024);
  for (int i = 0; i < kRepeats; ++i)
    peak_ms.push_back(time_get(server.port(), "/debug/memory/peak?format=json", bytes));
  std::printf("peak_ms=%.1f\n", median(peak_ms));
}

}  // namespace

int main(int argc, char** argv) {
  long blocks = 1'000'000;
  long stacks = kStacks;
  bool usage_ok = argc % 2 == 1;
  for (int i = 1; usage_ok && i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--blocks") == 0) blocks = std::atol(argv[i + 1]);
    else if (std::strcmp(argv[i], "--stacks") == 0) stacks = std::atol(argv[i + 1]);
    else usage_ok = false;
  }
  const long callers = stacks / kStacks;
  if (!usage_ok || blocks <= 0 || stacks % kStacks != 0 || callers < 1 ||
      callers > static_cast<long>(kCallers)) {
    std::fprintf(stderr, "usage: report_bench [--blocks N] [--stacks M]  (M: a multiple of %d, "
                         "at most %zu of them)\n", kStacks, kCallers);
    return 2;
  }
  const long per_stack = std::max(1L, blocks / stacks);
  // Sized before tracing starts, so the bookkeeping is not part of the traced heap.
  std::vector<void*> keep(static_cast<std::size_t>(per_stack * stacks));

  liveheap::Options options;
  options.mode = liveheap::Mode::exact;
  options.max_frames = 32;
  options.history_interval_s = 0;  // no history thread: the bench ticks it (measure_history)
  liveheap::start(options);
  void** out = keep.data();
  for (long caller = 0; caller < callers; ++caller)
    for (int stack = 0; stack < kStacks; ++stack)
      out = kCallerTable[static_cast<std::size_t>(caller)](
          kAllocators[static_cast<std::size_t>(stack / kSitesPerFunction)],
          stack % kSitesPerFunction, per_stack, out);

  const liveheap::EngineStats stats = liveheap::engine_stats();
  std::printf("live_blocks=%llu\nstacks=%llu\ndropped=%llu\n",
              static_cast<unsigned long long>(stats.live_blocks),
              static_cast<unsigned long long>(stats.stacks),
              static_cast<unsigned long long>(stats.dropped));
  const auto per = [](std::int64_t bytes, std::uint64_t n) {
    return static_cast<double>(bytes) / static_cast<double>(std::max<std::uint64_t>(n, 1));
  };
  std::printf("tracker_bytes_per_block=%.1f\n", per(liveheap::tracker_memory(), stats.live_blocks));
  std::printf("live_table_bytes_per_block=%.1f\n", per(stats.live_table_bytes, stats.live_blocks));
  std::printf("stack_table_bytes_per_stack=%.1f\n", per(stats.stack_table_bytes, stats.stacks));

  std::printf("cold_report_ms=%.1f\n", time_report());
  std::vector<double> warm;
  for (int i = 0; i < kRepeats; ++i) warm.push_back(time_report());
  std::printf("warm_report_ms=%.1f\n", median(warm));
  measure_baseline();

  const liveheap::Snapshot baseline = [] {
    liveheap::IgnoreScope ignore;
    return liveheap::take_snapshot();
  }();
  // Churn: a tenth of the blocks go, so the diff has something to say at every key.
  for (std::size_t i = 0; i < keep.size(); i += 10) {
    std::free(keep[i]);
    keep[i] = nullptr;
  }
  DiffTimes times;
  for (int i = 0; i < kRepeats; ++i) time_snapshot_diff(baseline, times);
  std::vector<double> sums;
  for (int i = 0; i < kRepeats; ++i) sums.push_back(times.snapshot_ms[i] + times.compare_ms[i]);
  std::printf("snapshot_diff_ms=%.1f\nsnapshot_ms=%.1f\ncompare_ms=%.1f\nframes=%zu\n",
              median(sums), median(times.snapshot_ms), median(times.compare_ms),
              distinct_frames(baseline));
  measure_history();

  // clear() takes every block out of the live table, each off its stack's totals.
  const auto clear_begin = Clock::now();
  liveheap::clear();
  std::printf("clear_ms=%.1f\n", ms_since(clear_begin));
  liveheap::stop();
  for (void* p : keep) std::free(p);
  return 0;
}
