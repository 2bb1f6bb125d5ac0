// The overhead benchmark: runs the same untracked programs bare and under each
// tracker, interleaved over rounds on this machine, and prints one table of medians with
// ratios to "no liveheap" from the same rounds, against the targets of
// docs/ARCHITECTURE.md. Then runs report_bench (liveheap linked, exact mode) for snapshot,
// report and memory costs.
// A benchmark prints; it never fails a build: misses are reported, not asserted.
//
//   overhead_bench [--rounds 5] [--pairs 2000000] [--seconds 3] [--connections 8]
//                  [--only loop,server,large,matplotlib,torch,report,scale,history,looking,idle,
//                          startup]
//                  [--judge cpu|wall]
//                  [--heaptrack-lib PATH] [--jemalloc-lib PATH] [--preload-lib PATH]
//                  [--baseline-preload PATH] [--pin SERVER_CPU,LOAD_CPU] [--pin-loop CPU]
// --pin runs the Beast server on one CPU and wrk on another (CPU affinity): on a small machine
// unpinned, the two share cores, and the server's thread, moved between them, finds its
// caches (and liveheap's tables) cold more often than on a server of its own.
// --pin-loop runs the one-thread loops on one CPU (the two-thread loop keeps every CPU): on a
// small shared machine, a CPU other than the one that takes the interrupts spreads its
// rounds less, which the ±1 ns budgets of off and sampled mode need.
#include <sched.h>
#include <signal.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bench_targets.hpp"
#include "child_process.hpp"
#include "idle_wakeups.hpp"
#include "startup_row.hpp"

namespace {

using namespace std::chrono_literals;
using bench::ToolId;
using bench::WorkloadId;

struct Settings {
  int rounds = 5;
  long pairs = 2'000'000;
  int seconds = 3;
  int connections = 8;
  std::set<std::string> only = {"loop",   "server", "large",   "matplotlib", "torch",   "report",
                                "scale",  "history", "looking", "idle",       "startup"};
  std::string heaptrack_lib;
  std::string baseline_preload;  // another build's preload library, for the looking row
  std::string jemalloc_lib;
  std::string preload_lib = LIVEHEAP_BENCH_PRELOAD;  // another build's, to compare
  bench::Clock judged_by = bench::Clock::cpu;
  std::string server_cpu, load_cpu;  // --pin: the server's CPU and wrk's ("": unpinned)
  std::string loop_cpu;              // --pin-loop: the one-thread loops' CPU ("": unpinned)
};

// While it lives, this process (and so each child it starts) runs on `cpu` alone; on any
// CPU again after. No CPU given: nothing changes. (Affinity rather than a taskset in front
// of the program: some preloaded tools leave a process they see exec another untraced.)
class RunOn {
 public:
  explicit RunOn(const std::string& cpu) {
    if (cpu.empty() || sched_getaffinity(0, sizeof was_, &was_) != 0) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(std::atoi(cpu.c_str()), &one);
    pinned_ = sched_setaffinity(0, sizeof one, &one) == 0;
  }
  ~RunOn() {
    if (pinned_) sched_setaffinity(0, sizeof was_, &was_);
  }
  RunOn(const RunOn&) = delete;
  RunOn& operator=(const RunOn&) = delete;

 private:
  cpu_set_t was_{};
  bool pinned_ = false;
};

// A CPU number as --pin and --pin-loop take it: one of this machine's.
bool is_cpu(const std::string& c) {
  return !c.empty() && c.size() < 5 && c.find_first_not_of("0123456789") == std::string::npos &&
         static_cast<unsigned>(std::atoi(c.c_str())) < std::thread::hardware_concurrency();
}

// Every note is printed once, after the table: crashes, hangs, unexpected output.
std::set<std::string> g_notes;

std::string first_existing(std::initializer_list<const char*> paths) {
  for (const char* p : paths)
    if (access(p, R_OK) == 0) return p;
  return {};
}

// The number after `key` on the first line of a child's output that starts with it.
std::optional<double> find_value(const std::string& output, const std::string& key) {
  for (std::size_t at = output.find(key); at != std::string::npos; at = output.find(key, at + 1))
    if (at == 0 || output[at - 1] == '\n')
      return std::strtod(output.c_str() + at + key.size(), nullptr);
  return std::nullopt;
}

void note_failure(const std::string& what, const std::vector<std::string>& argv,
                  const bench::Environment& env, const bench::Outcome& outcome) {
  const std::size_t keep = 1500;  // the end of the output says most about a crash
  const std::string tail = outcome.output.size() > keep
                               ? outcome.output.substr(outcome.output.size() - keep)
                               : outcome.output;
  g_notes.insert(what + ": " + outcome.describe() + "\n    command: " +
                 bench::command_line(argv, env) + "\n    output: " + tail);
}

// Lines a child printed that the driver does not understand (a tracker's warnings, say).
void note_unexpected_lines(const std::string& who, const std::string& output,
                           std::initializer_list<const char*> known) {
  std::size_t begin = 0;
  while (begin < output.size()) {
    std::size_t end = output.find('\n', begin);
    if (end == std::string::npos) end = output.size();
    const std::string line = output.substr(begin, end - begin);
    begin = end + 1;
    if (line.empty()) continue;
    if (std::none_of(known.begin(), known.end(),
                     [&](const char* k) { return line.find(k) != std::string::npos; }))
      g_notes.insert(who + " printed: " + line);
  }
}

std::optional<bench::Cost> measure_loop(const bench::Tool& tool, int threads, long pairs, int sites = 4) {
  std::vector<std::string> argv = {LIVEHEAP_BENCH_ALLOC_LOOP, "--threads", std::to_string(threads)};
  argv.insert(argv.end(), {"--pairs", std::to_string(pairs), "--sites", std::to_string(sites)});
  const bench::Outcome outcome = bench::run(argv, tool.env, 600s);
  if (!outcome.ok()) {
    note_failure("alloc_loop under " + tool.name, argv, tool.env, outcome);
    return std::nullopt;
  }
  note_unexpected_lines(tool.name, outcome.output, {"ns_per_pair=", "jemalloc_prof="});
  const auto cpu = find_value(outcome.output, "cpu_ns_per_pair=");
  const auto wall = find_value(outcome.output, "ns_per_pair=");
  if (!cpu || !wall) return std::nullopt;
  return bench::Cost{*cpu, *wall};
}

// The server's own CPU time per request (from wait4) and the wall time per request
// (1/throughput) that wrk saw.
std::optional<bench::Cost> measure_server(const bench::Tool& tool, const Settings& s) {
  const std::vector<std::string> server_argv = {LIVEHEAP_BENCH_SERVER};
  std::optional<RunOn> on_server_cpu(std::in_place, s.server_cpu);
  bench::Child server(server_argv, tool.env);
  on_server_cpu.reset();
  const auto port_line = server.read_line(30s);
  if (!port_line || port_line->rfind("PORT ", 0) != 0) {
    note_failure("bench_server under " + tool.name + " did not start", server_argv, tool.env,
                 server.finish(SIGKILL, 5s));
    return std::nullopt;
  }
  const std::vector<std::string> wrk_argv = {
      "wrk", "-t1", "-c" + std::to_string(s.connections), "-d" + std::to_string(s.seconds) + "s",
      "http://127.0.0.1:" + port_line->substr(5) + "/bench"};
  const RunOn on_load_cpu(s.load_cpu);
  std::optional<bench::Outcome> load;
  try {
    load = bench::run(wrk_argv, {}, std::chrono::seconds(s.seconds + 60));
  } catch (const std::exception& e) {
    g_notes.insert(std::string("load generator: ") + e.what() + " (apt-get install wrk)");
  }
  const bench::Outcome stopped = server.finish(SIGTERM, 60s);
  if (!stopped.ok()) {
    note_failure("bench_server under " + tool.name, server_argv, tool.env, stopped);
    return std::nullopt;
  }
  if (!load || !load->ok()) {
    if (load) note_failure("wrk against " + tool.name, wrk_argv, {}, *load);
    return std::nullopt;
  }
  for (const char* trouble : {"Socket errors", "Non-2xx"})
    if (load->output.find(trouble) != std::string::npos)
      g_notes.insert("wrk against " + tool.name + " reported " + trouble + ":\n" + load->output);
  const auto per_second = find_value(load->output, "Requests/sec:");
  const std::size_t in = load->output.find(" requests in ");
  if (!per_second || *per_second <= 0 || in == std::string::npos) return std::nullopt;
  const double requests = std::strtod(
      load->output.c_str() + load->output.find_last_of(" \n", in - 1) + 1, nullptr);
  if (requests <= 0) return std::nullopt;
  return bench::Cost{stopped.cpu_seconds * 1e9 / requests, 1e9 / *per_second};
}

// The workload rows: a workload process (large_blocks, or Debian's python3 on a script
// here) run bare and under each liveheap mode, interleaved over rounds; CPU time per
// operation as the workload measured it, with its page faults and madvise calls.
struct ProcessRow {
  std::string name;               // its --only key, in progress lines and notes
  std::string title;              // printed above the row's table
  std::vector<std::string> argv;
  std::string cpu_unit;           // the workload prints cpu_ns_per_<cpu_unit>=
  std::string count_unit;         // ... and minflt_per_<count_unit>=, madvise_per_<count_unit>=
  bool preload_counter = false;   // preload libbench_madvise_counter.so (Python counts nothing)
  bool with_jemalloc = false;     // also jemalloc bare and sampled liveheap in front of it
};

struct RowTool {
  std::string name;
  bench::Environment env;
  std::size_t base = 0;  // the RowTool its ratio divides by (0: no liveheap)
  bench::ProcessTarget target;
};

struct RowRun {
  double cpu_ns = 0;
  double faults = 0;
  double madvises = 0;
  double peak_rss = 0;  // bytes
};

std::vector<RowTool> row_tools(const std::vector<bench::Tool>& tools, const ProcessRow& row,
                               const std::string& jemalloc_lib) {
  std::vector<RowTool> used;
  std::string liveheap;
  for (const bench::Tool& t : tools) {
    if (!t.missing.empty() || (t.id != ToolId::none && t.id != ToolId::off &&
                               t.id != ToolId::sampled && t.id != ToolId::exact))
      continue;
    if (t.id != ToolId::none) liveheap = t.env.front().second;
    used.push_back({t.name, t.env, 0, bench::process_target(row.name, t.id, false)});
  }
  if (row.with_jemalloc && !jemalloc_lib.empty() && !liveheap.empty()) {
    used.push_back({"jemalloc (no prof)", {{"LD_PRELOAD", jemalloc_lib}}, 0, {}});
    used.push_back({"sampled, jemalloc",
                    {{"LD_PRELOAD", liveheap + " " + jemalloc_lib}, {"LIVEHEAP_MODE", "sampled"}},
                    used.size() - 1, bench::process_target(row.name, ToolId::sampled, true)});
  }
  if (row.preload_counter)
    for (RowTool& t : used) {
      if (t.env.empty() || t.env.front().first != "LD_PRELOAD")
        t.env.insert(t.env.begin(), {"LD_PRELOAD", ""});
      std::string& preload = t.env.front().second;
      preload += (preload.empty() ? "" : " ") + std::string(LIVEHEAP_BENCH_MADVISE_COUNTER);
    }
  return used;
}

// One run; `skipped` receives the workload's "skipped: ..." line when it cannot run here.
std::optional<RowRun> measure_process(const ProcessRow& row, const RowTool& tool,
                                      std::string& skipped) {
  const bench::Outcome outcome = bench::run(row.argv, tool.env, 600s);
  if (const std::size_t at = outcome.output.find("skipped: "); at != std::string::npos) {
    skipped = outcome.output.substr(at, outcome.output.find('\n', at) - at);
    return std::nullopt;
  }
  if (!outcome.ok()) {
    note_failure(row.name + " under " + tool.name, row.argv, tool.env, outcome);
    return std::nullopt;
  }
  note_unexpected_lines(tool.name, outcome.output, {"_per_"});
  const auto cpu = find_value(outcome.output, "cpu_ns_per_" + row.cpu_unit + "=");
  const auto faults = find_value(outcome.output, "minflt_per_" + row.count_unit + "=");
  const auto madvises = find_value(outcome.output, "madvise_per_" + row.count_unit + "=");
  if (!cpu || !faults || !madvises) return std::nullopt;
  return RowRun{*cpu, *faults, *madvises, outcome.peak_rss_bytes};
}

void print_process_row(const ProcessRow& row, const std::vector<RowTool>& used,
                       const std::vector<std::vector<RowRun>>& runs,
                       const std::vector<std::vector<double>>& ratios,
                       const std::vector<std::vector<double>>& rss_over) {
  std::printf("\n%s\n", row.title.c_str());
  std::printf("%-20s %13s %7s %17s %18s %10s %9s  %-22s %s\n", "mode", ("cpu/" + row.cpu_unit).c_str(),
              "ratio", ("faults/" + row.count_unit).c_str(), ("madvise/" + row.count_unit).c_str(),
              "peak RSS", "+RSS", "target", "verdict");
  constexpr double kMiB = 1024.0 * 1024.0;
  for (std::size_t i = 0; i < used.size(); ++i) {
    if (runs[i].empty()) {
      std::printf("%-20s FAILED (see notes)\n", used[i].name.c_str());
      continue;
    }
    const auto med = [&](double RowRun::*field) {
      std::vector<double> v;
      for (const RowRun& run : runs[i]) v.push_back(run.*field);
      return bench::median(v);
    };
    const double ratio = bench::median(ratios[i]), over = bench::median(rss_over[i]);
    const bench::ProcessTarget& t = used[i].target;
    std::string verdict;
    if (t.cpu_ratio > 0 && !std::isnan(ratio)) {
      bool pass = ratio <= t.cpu_ratio;
      if (t.rss_over_bytes > 0 || t.rss_over_share > 0) {
        std::vector<double> base_rss;
        for (const RowRun& run : runs[used[i].base]) base_rss.push_back(run.peak_rss);
        pass = pass && !std::isnan(over) && over <= t.rss_limit(bench::median(base_rss));
      }
      verdict = pass ? "pass" : "MISS";
    }
    std::printf("%-20s %10.2f ms %6.2fx %17.2f %18.2f %6.1f MiB %+5.1f MiB  %-22s %s\n",
                used[i].name.c_str(), med(&RowRun::cpu_ns) / 1e6, ratio, med(&RowRun::faults),
                med(&RowRun::madvises), med(&RowRun::peak_rss) / kMiB, i == used[i].base ? 0.0 : over / kMiB,
                t.text, verdict.c_str());
  }
}

// Interleaved rounds (the order rotates each round); ratios pair each run with its base's
// run of the same round; medians over rounds.
void run_process_row(const ProcessRow& row, const std::vector<bench::Tool>& tools,
                     const Settings& s) {
  const std::vector<RowTool> used = row_tools(tools, row, s.jemalloc_lib);
  std::vector<std::vector<RowRun>> runs(used.size());
  std::vector<std::vector<double>> ratios(used.size()), rss_over(used.size());
  std::string skipped;
  for (int round = 0; round < s.rounds && skipped.empty(); ++round) {
    std::fprintf(stderr, "%s round %d/%d...\n", row.name.c_str(), round + 1, s.rounds);
    std::vector<std::optional<RowRun>> this_round(used.size());
    for (std::size_t k = 0; k < used.size() && skipped.empty(); ++k) {
      const std::size_t i = (k + static_cast<std::size_t>(round)) % used.size();
      this_round[i] = measure_process(row, used[i], skipped);
    }
    for (std::size_t i = 0; i < used.size(); ++i) {
      if (!this_round[i]) continue;
      runs[i].push_back(*this_round[i]);
      const auto& base = this_round[used[i].base];
      if (base && base->cpu_ns > 0) ratios[i].push_back(this_round[i]->cpu_ns / base->cpu_ns);
      if (base) rss_over[i].push_back(this_round[i]->peak_rss - base->peak_rss);
    }
  }
  if (!skipped.empty()) {
    std::printf("\n%s\n%s\n", row.title.c_str(), skipped.c_str());
    return;
  }
  print_process_row(row, used, runs, ratios, rss_over);
}

void run_workload_rows(const std::vector<bench::Tool>& tools, const Settings& s) {
  const std::string python = "/usr/bin/python3", scripts = LIVEHEAP_BENCH_SCRIPTS;
  if (s.only.count("large"))
    run_process_row({"large",
                     "large short-lived blocks: large_blocks, rounds of 40 std::vector<char> of "
                     "64 KiB..16 MiB (log-uniform, fixed seed), each built, filled, dropped",
                     {LIVEHEAP_BENCH_LARGE, "--rounds", "40"}, "round", "vector"},
                    tools, s);
  if (s.only.count("matplotlib"))
    run_process_row({"matplotlib",
                     "matplotlib: Debian's python3 + python3-matplotlib, a 12x8 in figure at "
                     "130 dpi saved as PNG and closed; median of 10 figures per process",
                     {python, scripts + "/matplotlib_figure.py", "--count", "10"}, "figure",
                     "figure", true},
                    tools, s);
  if (s.only.count("torch"))
    run_process_row({"torch",
                     "PyTorch: Debian's python3 + python3-torch, 1 thread, a training step of "
                     "Conv1d(16,16,3) on 8x16x2000 + Linear(1024,1024) on 64x1024; median of 30 "
                     "steps per process",
                     {python, scripts + "/torch_step.py", "--count", "30", "--warmup", "5"},
                     "step", "step", true, true},
                    tools, s);
}

// What asking costs the processes looked at (samples/bench/looking_cost.py): the resident
// memory each process of a 4-worker gunicorn app and of the sample Beast server gains over
// 20 reports, and the symbolizer process's; the gunicorn app under --preload-lib's build when
// given, and with --baseline-preload again under that build.
void run_looking_row(const Settings& s) {
  std::fprintf(stderr, "looking...\n");
  std::vector<std::string> argv = {"/usr/bin/python3", std::string(LIVEHEAP_BENCH_SCRIPTS) + "/looking_cost.py",
                                   "--preload", s.preload_lib, "--server", LIVEHEAP_BENCH_LEAKY_SERVER};
  if (!s.baseline_preload.empty()) argv.insert(argv.end(), {"--baseline-preload", s.baseline_preload});
  const bench::Outcome outcome = bench::run(argv, {}, 600s);
  std::printf("\nlooking: what 20 reports cost each process of a program%s", outcome.output.c_str());
  if (!outcome.ok()) note_failure("looking", argv, {}, outcome);
}

// The in-process section: median of each key over `processes` fresh runs (cold is cold
// only once per process).
std::map<std::string, double> measure_reports(int processes,
                                              const std::vector<std::string>& args = {}) {
  std::map<std::string, std::vector<double>> values;
  std::vector<std::string> argv = {LIVEHEAP_BENCH_REPORT};
  argv.insert(argv.end(), args.begin(), args.end());
  for (int i = 0; i < processes; ++i) {
    const bench::Outcome outcome = bench::run(argv, {}, 600s);
    if (!outcome.ok()) {
      note_failure("report_bench", argv, {}, outcome);
      continue;
    }
    for (const char* key : bench::kReportKeys)
      if (auto v = find_value(outcome.output, std::string(key) + "=")) values[key].push_back(*v);
  }
  std::map<std::string, double> medians;
  for (auto& [key, v] : values) medians[key] = bench::median(v);
  return medians;
}

// The allocation loop under liveheap exact, history off and on (LIVEHEAP_HISTORY_INTERVAL 0
// and 1, its shortest), alternating which goes first. Enough pairs that a run spans several
// ticks (a 2M-pair run is over before the first tick).
bench::HistoryLoop measure_history_loop(const std::vector<bench::Tool>& tools, const Settings& s) {
  bench::HistoryLoop h;
  h.pairs = std::max(s.pairs, 20'000'000L);
  const auto exact = std::find_if(tools.begin(), tools.end(), [](const bench::Tool& t) { return t.id == ToolId::exact; });
  if (exact == tools.end() || !exact->missing.empty()) return h;
  bench::Tool off = *exact, on = *exact;
  off.env.emplace_back("LIVEHEAP_HISTORY_INTERVAL", "0");
  on.env.emplace_back("LIVEHEAP_HISTORY_INTERVAL", "1");
  for (int round = 0; round < s.rounds; ++round) {
    std::fprintf(stderr, "history loop %d/%d...\n", round + 1, s.rounds);
    std::optional<bench::Cost> a, b;
    if (round % 2 == 0) a = measure_loop(off, 1, h.pairs), b = measure_loop(on, 1, h.pairs);
    else b = measure_loop(on, 1, h.pairs), a = measure_loop(off, 1, h.pairs);
    if (a && b) h.off.push_back(*a), h.on.push_back(*b);
  }
  return h;
}

// A quick run of each tool: is it installed, does it start, is its profiler really on?
void probe_tools(std::vector<bench::Tool>& tools) {
  for (bench::Tool& tool : tools) {
    if (!tool.missing.empty()) continue;
    const std::vector<std::string> argv = {LIVEHEAP_BENCH_ALLOC_LOOP, "--pairs", "10000"};
    const bench::Outcome outcome = bench::run(argv, tool.env, 120s);
    if (!outcome.ok() || outcome.output.find("cannot be preloaded") != std::string::npos) {
      note_failure("probe of " + tool.name, argv, tool.env, outcome);
      tool.missing = "FAILED: " + outcome.describe() + " (see notes)";
    } else if (tool.id == ToolId::jemalloc_prof &&
               outcome.output.find("jemalloc_prof=1") == std::string::npos) {
      tool.missing = "unsupported: this jemalloc was built without --enable-prof";
    }
  }
}

Settings parse_settings(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    if (value == nullptr || flag == "--help") {
      std::printf("usage: overhead_bench [--rounds N] [--pairs N] [--seconds S] [--connections C]\n"
                  "                      [--only loop,server,large,matplotlib,torch,report,scale,history,looking,idle,startup]\n"
                  "                      [--judge cpu|wall]\n"
                  "                      [--heaptrack-lib PATH] [--jemalloc-lib PATH] [--preload-lib PATH]\n"
                  "                      [--baseline-preload PATH] [--pin SERVER_CPU,LOAD_CPU] [--pin-loop CPU]\n");
      std::exit(flag == "--help" ? 0 : 2);
    }
    ++i;
    if (flag == "--rounds") s.rounds = std::max(1, std::atoi(value));
    else if (flag == "--pairs") s.pairs = std::max(1L, std::atol(value));
    else if (flag == "--seconds") s.seconds = std::max(1, std::atoi(value));
    else if (flag == "--connections") s.connections = std::max(1, std::atoi(value));
    else if (flag == "--judge")
      s.judged_by = std::strcmp(value, "wall") == 0 ? bench::Clock::wall : bench::Clock::cpu;
    else if (flag == "--heaptrack-lib") s.heaptrack_lib = value;
    else if (flag == "--jemalloc-lib") s.jemalloc_lib = value;
    else if (flag == "--baseline-preload") s.baseline_preload = value;
    else if (flag == "--preload-lib") s.preload_lib = value;
    else if (flag == "--pin-loop") {
      s.loop_cpu = value;
      if (!is_cpu(s.loop_cpu)) {
        std::fprintf(stderr, "overhead_bench: --pin-loop wants one CPU (1), got %s\n", value);
        std::exit(2);
      }
    } else if (flag == "--pin") {
      const std::string cpus = value;
      const std::size_t comma = cpus.find(',');
      s.server_cpu = cpus.substr(0, comma);
      s.load_cpu = comma == std::string::npos ? "" : cpus.substr(comma + 1);
      if (!is_cpu(s.server_cpu) || !is_cpu(s.load_cpu) || s.server_cpu == s.load_cpu) {
        std::fprintf(stderr, "overhead_bench: --pin wants two CPUs, the server's and wrk's (1,0), got %s\n",
                     value);
        std::exit(2);
      }
    }
    else if (flag == "--only") {
      s.only.clear();
      for (std::string rest = value; !rest.empty();) {
        const std::size_t comma = rest.find(',');
        s.only.insert(rest.substr(0, comma));
        rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
      }
    } else {
      std::fprintf(stderr, "overhead_bench: unknown option %s (try --help)\n", flag.c_str());
      std::exit(2);
    }
  }
  if (s.heaptrack_lib.empty())
    s.heaptrack_lib = first_existing({"/usr/lib/heaptrack/libheaptrack_preload.so",
                                      "/usr/lib/x86_64-linux-gnu/heaptrack/libheaptrack_preload.so",
                                      "/usr/local/lib/heaptrack/libheaptrack_preload.so"});
  if (s.jemalloc_lib.empty())
    s.jemalloc_lib = first_existing({"/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
                                     "/usr/lib/libjemalloc.so.2",
                                     "/usr/local/lib/libjemalloc.so.2"});
  return s;
}

void print_header(const Settings& s) {
  utsname u{};
  uname(&u);
  // Load from other processes inflates wall times (not cpu/op): worth knowing when reading.
  double load[1] = {0};
  getloadavg(load, 1);
  std::printf("liveheap overhead benchmark: %s %s, %u CPUs, load average %.2f at start; %d rounds, "
              "modes interleaved, medians\n",
              u.sysname, u.release, std::thread::hardware_concurrency(), load[0], s.rounds);
  std::printf("loop: alloc_loop, %ld malloc/free pairs of 16-512 B per thread, ~25 frames deep, from 4 "
              "call sites at random (one site: every pair from the first, a malloc). "
              "server: bench_server (Beast, 1 io thread) loaded by wrk -t1 -c%d for %d s on "
              "loopback%s.%s\ncpu/op: the measured process's CPU time per pair or request (other load "
              "on the machine cannot inflate it); wall/op: elapsed time per pair, or per request "
              "(1/throughput).\nratio = median over rounds of (cost / cost of no liveheap in the "
              "same round); rounds = the lowest and highest of those ratios (of the judged time): a "
              "difference smaller than their spread is within this machine's noise; verdicts judge %s time\n\n",
              s.pairs, s.connections, s.seconds,
              s.server_cpu.empty() ? "" : (", the server on CPU " + s.server_cpu + " and wrk on CPU " + s.load_cpu).c_str(),
              s.loop_cpu.empty() ? "" : (" The one-thread loops on CPU " + s.loop_cpu + ".").c_str(),
              s.judged_by == bench::Clock::cpu ? "cpu" : "wall");
}

}  // namespace

int main(int argc, char** argv) {
  const Settings s = parse_settings(argc, argv);
  std::vector<bench::Tool> tools =
      bench::make_tools(s.preload_lib, s.heaptrack_lib, s.jemalloc_lib);
  print_header(s);
  std::fflush(stdout);
  probe_tools(tools);

  std::vector<WorkloadId> workloads;
  if (s.only.count("loop"))
    workloads.insert(workloads.end(), {WorkloadId::loop_1, WorkloadId::loop_2, WorkloadId::loop_one_site});
  if (s.only.count("server")) workloads.push_back(WorkloadId::server);

  bench::Measurements m(static_cast<std::size_t>(s.rounds));
  for (int round = 0; round < s.rounds; ++round) {
    std::fprintf(stderr, "round %d/%d...\n", round + 1, s.rounds);
    for (WorkloadId w : workloads) {
      // Rotating the order spreads slow phases of a noisy machine over every mode.
      for (std::size_t k = 0; k < tools.size(); ++k) {
        const bench::Tool& tool = tools[(k + static_cast<std::size_t>(round)) % tools.size()];
        if (!tool.missing.empty()) continue;
        const RunOn on_loop_cpu(w == WorkloadId::loop_1 || w == WorkloadId::loop_one_site ? s.loop_cpu : "");
        const std::optional<bench::Cost> cost =
            w == WorkloadId::server ? measure_server(tool, s)
                                    : measure_loop(tool, w == WorkloadId::loop_2 ? 2 : 1, s.pairs,
                                                   w == WorkloadId::loop_one_site ? 1 : 4);
        if (cost) m.record(static_cast<std::size_t>(round), w, tool.id, *cost);
      }
    }
  }
  if (!workloads.empty()) bench::print_overhead_table(workloads, tools, m, s.judged_by);
  run_workload_rows(tools, s);
  if (s.only.count("looking")) run_looking_row(s);

  if (s.only.count("startup")) bench::run_startup_row(s.preload_lib, s.rounds, s.judged_by);
  if (s.only.count("history")) bench::print_history_loop_table(measure_history_loop(tools, s));
  if (s.only.count("idle")) {
    constexpr auto window = 10s;  // with the settling, under 12 s for every mode at once
    std::fprintf(stderr, "idle wake-ups...\n");
    bench::print_idle_wakeups_table(bench::measure_idle_wakeups(LIVEHEAP_BENCH_PRELOAD, window), window);
  }
  if (s.only.count("report")) {
    std::fprintf(stderr, "report_bench...\n");
    bench::print_report_table(measure_reports(std::min(s.rounds, 3)));
  }
  if (s.only.count("scale")) {
    // The scale row: ten times the blocks and the stacks (~1 GiB of RSS, ~30 s a process),
    // so one process unless asked for more rounds than 3.
    std::fprintf(stderr, "report_bench at scale...\n");
    bench::print_scale_table(
        measure_reports(s.rounds > 3 ? 3 : 1, {"--blocks", "10000000", "--stacks", "100000"}));
  }
  if (!g_notes.empty()) {
    std::printf("\nnotes:\n");
    for (const std::string& n : g_notes) std::printf("- %s\n", n.c_str());
  }
  return 0;
}
