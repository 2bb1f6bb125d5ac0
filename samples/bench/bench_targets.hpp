// The overhead benchmark's vocabulary: which trackers it compares (and how each is switched
// on), the measurements of interleaved rounds, the targets (docs/ARCHITECTURE.md), and the
// printed tables.
// Thread-safety: plain values; the driver is single-threaded.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "child_process.hpp"

namespace bench {

enum class ToolId { none, off, sampled, exact, heaptrack, jemalloc, jemalloc_prof };
// loop_one_site: alloc_loop --sites 1, one thread (every allocation from one stack).
enum class WorkloadId { loop_1, loop_2, loop_one_site, server };

struct Tool {
  ToolId id;
  std::string name;
  Environment env;      // how a child runs under this tool
  std::string missing;  // why it cannot run here; empty when it can
};

// Every row's tool: liveheap through its preload library (LIVEHEAP_MODE), heaptrack's
// preload library writing to /dev/null (the cost inside the traced process only, without
// heaptrack_interpret), jemalloc bare and with its 512 KiB sampling profiler.
// An empty path marks the tool as not installed.
std::vector<Tool> make_tools(const std::string& liveheap_preload, const std::string& heaptrack_lib,
                             const std::string& jemalloc_lib);

double median(std::vector<double> values);

// One operation's cost, in ns: a malloc/free pair (loop) or a request (server). CPU time
// is the measured process's own (other engineers' builds on a shared machine cannot inflate
// it, though it hides time spent blocked); wall time is what a user waits (1/throughput).
enum class Clock { cpu, wall };
struct Cost {
  double cpu_ns = 0;
  double wall_ns = 0;
  double of(Clock c) const noexcept { return c == Clock::cpu ? cpu_ns : wall_ns; }
};

// Costs per round, so ratios pair each run with the untracked run of the same round.
class Measurements {
 public:
  explicit Measurements(std::size_t rounds) : rounds_(rounds) {}
  void record(std::size_t round, WorkloadId w, ToolId t, Cost cost);
  bool has(WorkloadId w, ToolId t) const;
  // Median over rounds; NaN when no round has one.
  double value(WorkloadId w, ToolId t, Clock c) const;
  // Median over rounds of (w,t) / (w_base,t_base) in the same round; NaN when no round has both.
  double ratio(WorkloadId w, ToolId t, WorkloadId w_base, ToolId t_base, Clock c) const;
  // Median over rounds of (w,t) - (w_base,t_base) in the same round: the ns it adds.
  double difference(WorkloadId w, ToolId t, WorkloadId w_base, ToolId t_base, Clock c) const;
  // The lowest and highest of the rounds' ratios that ratio() takes the median of: how far
  // one round can stray on this machine, which a reading within it cannot tell apart.
  std::pair<double, double> ratio_range(WorkloadId w, ToolId t, WorkloadId w_base, ToolId t_base,
                                        Clock c) const;

 private:
  std::vector<double> paired_values(WorkloadId w, ToolId t, WorkloadId w_base, ToolId t_base, Clock c,
                                    double (*of)(double cost, double base)) const;
  double paired(WorkloadId w, ToolId t, WorkloadId w_base, ToolId t_base, Clock c,
                double (*of)(double cost, double base)) const;
  std::vector<std::map<std::pair<WorkloadId, ToolId>, Cost>> rounds_;
};

// The table: CPU and wall cost per operation with their ratios; verdicts by `judged_by`.
void print_overhead_table(const std::vector<WorkloadId>& workloads, const std::vector<Tool>& tools,
                          const Measurements& m, Clock judged_by);

// The targets of a workload row (large blocks, matplotlib, PyTorch) for one tool: the most
// CPU time per operation against the row's base (<= 0: none), and the most peak RSS over
// the base's, in bytes, as the larger of an absolute and a relative allowance (both 0:
// none). docs/performance.md's "Targets" table.
struct ProcessTarget {
  double cpu_ratio = 0;
  double rss_over_bytes = 0;
  double rss_over_share = 0;
  const char* text = "";
  // The RSS allowance over a base of `base_bytes`.
  double rss_limit(double base_bytes) const noexcept {
    const double share = rss_over_share * base_bytes;
    return share > rss_over_bytes ? share : rss_over_bytes;
  }
};
// `row`: "large", "matplotlib", "torch"; `tool`: liveheap's mode or another tool's id;
// `against_jemalloc`: the row's tool runs in front of jemalloc, against jemalloc alone.
ProcessTarget process_target(const std::string& row, ToolId tool, bool against_jemalloc);

// What report_bench prints, and the second table made of it (medians per key).
inline constexpr std::array<const char*, 21> kReportKeys = {
    "live_blocks",    "stacks",         "frames",           "dropped",
    "tracker_bytes_per_block", "live_table_bytes_per_block", "stack_table_bytes_per_stack",
    "cold_report_ms", "warm_report_ms", "snapshot_diff_ms",
    "snapshot_ms",    "compare_ms",     "history_tick_ms",  "history_tick_worst_ms",
    "history_bytes_per_point", "history_points", "history_cold_ms", "history_ms",
    "history_kib",    "peak_ms",        "clear_ms"};
void print_report_table(const std::map<std::string, double>& medians);
// The same at the performance round's scale: 10M live blocks over 100k stacks, snapshot + diff <= 300 ms.
void print_scale_table(const std::map<std::string, double>& medians);

// The allocation loop under liveheap exact with the history off and on (a tick a second),
// one pair of runs per round.
struct HistoryLoop {
  long pairs = 0;
  std::vector<Cost> off, on;  // per round, in the same order
};
void print_history_loop_table(const HistoryLoop& h);

}  // namespace bench
