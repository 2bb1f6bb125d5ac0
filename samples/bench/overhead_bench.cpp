// The overhead benchmark (issue 4): runs the same untracked programs bare and under each
// tracker, interleaved over rounds on this machine, and prints one table of medians with
// ratios to "no liveheap" from the same rounds, against the targets of
// docs/ARCHITECTURE.md. Then runs report_bench (liveheap linked, exact mode) for snapshot,
// report and memory costs.
// A benchmark prints; it never fails a build: misses are reported, not asserted.
//
//   overhead_bench [--rounds 5] [--pairs 2000000] [--seconds 3] [--connections 8]
//                  [--only loop,server,large,report] [--judge cpu|wall]
//                  [--heaptrack-lib PATH] [--jemalloc-lib PATH]
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

namespace {

using namespace std::chrono_literals;
using bench::ToolId;
using bench::WorkloadId;

struct Settings {
  int rounds = 5;
  long pairs = 2'000'000;
  int seconds = 3;
  int connections = 8;
  std::set<std::string> only = {"loop", "server", "large", "report"};
  std::string heaptrack_lib;
  std::string jemalloc_lib;
  bench::Clock judged_by = bench::Clock::cpu;
};

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
void note_unexpected_lines(const bench::Tool& tool, const std::string& output,
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
      g_notes.insert(tool.name + " printed: " + line);
  }
}

std::optional<bench::Cost> measure_loop(const bench::Tool& tool, int threads, long pairs) {
  const std::vector<std::string> argv = {LIVEHEAP_BENCH_ALLOC_LOOP, "--threads",
                                         std::to_string(threads), "--pairs", std::to_string(pairs)};
  const bench::Outcome outcome = bench::run(argv, tool.env, 600s);
  if (!outcome.ok()) {
    note_failure("alloc_loop under " + tool.name, argv, tool.env, outcome);
    return std::nullopt;
  }
  note_unexpected_lines(tool, outcome.output, {"ns_per_pair=", "jemalloc_prof="});
  const auto cpu = find_value(outcome.output, "cpu_ns_per_pair=");
  const auto wall = find_value(outcome.output, "ns_per_pair=");
  if (!cpu || !wall) return std::nullopt;
  return bench::Cost{*cpu, *wall};
}

// The server's own CPU time per request (from wait4) and the wall time per request
// (1/throughput) that wrk saw.
std::optional<bench::Cost> measure_server(const bench::Tool& tool, const Settings& s) {
  const std::vector<std::string> server_argv = {LIVEHEAP_BENCH_SERVER};
  bench::Child server(server_argv, tool.env);
  const auto port_line = server.read_line(30s);
  if (!port_line || port_line->rfind("PORT ", 0) != 0) {
    note_failure("bench_server under " + tool.name + " did not start", server_argv, tool.env,
                 server.finish(SIGKILL, 5s));
    return std::nullopt;
  }
  const std::vector<std::string> wrk_argv = {
      "wrk", "-t1", "-c" + std::to_string(s.connections), "-d" + std::to_string(s.seconds) + "s",
      "http://127.0.0.1:" + port_line->substr(5) + "/bench"};
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

// The large short-lived blocks row (issue 11): one large_blocks run per tool and round.
struct LargeRun {
  double cpu_ns_per_round = 0;
  double faults_per_vector = 0;
  double madvise_per_vector = 0;
};

std::optional<LargeRun> measure_large(const bench::Tool& tool) {
  const std::vector<std::string> argv = {LIVEHEAP_BENCH_LARGE, "--rounds", "40"};
  const bench::Outcome outcome = bench::run(argv, tool.env, 600s);
  if (!outcome.ok()) {
    note_failure("large_blocks under " + tool.name, argv, tool.env, outcome);
    return std::nullopt;
  }
  note_unexpected_lines(tool, outcome.output, {"_per_round=", "_per_vector="});
  const auto cpu = find_value(outcome.output, "cpu_ns_per_round=");
  const auto faults = find_value(outcome.output, "minflt_per_vector=");
  const auto madvises = find_value(outcome.output, "madvise_per_vector=");
  if (!cpu || !faults || !madvises) return std::nullopt;
  return LargeRun{*cpu, *faults, *madvises};
}

// Interleaved rounds of no liveheap and each liveheap mode; ratios pair each run with the
// untracked run of the same round; medians over rounds.
void run_large_row(const std::vector<bench::Tool>& tools, int rounds) {
  std::vector<const bench::Tool*> used;
  for (const bench::Tool& t : tools)
    if (t.missing.empty() && (t.id == ToolId::none || t.id == ToolId::off ||
                              t.id == ToolId::sampled || t.id == ToolId::exact))
      used.push_back(&t);
  std::map<ToolId, std::vector<LargeRun>> runs;
  std::map<ToolId, std::vector<double>> ratios;
  for (int round = 0; round < rounds; ++round) {
    std::fprintf(stderr, "large blocks round %d/%d...\n", round + 1, rounds);
    std::map<ToolId, LargeRun> this_round;
    for (std::size_t k = 0; k < used.size(); ++k) {
      const bench::Tool& tool = *used[(k + static_cast<std::size_t>(round)) % used.size()];
      if (const auto run = measure_large(tool)) this_round[tool.id] = *run;
    }
    for (const auto& [id, run] : this_round) {
      runs[id].push_back(run);
      if (this_round.count(ToolId::none) && this_round[ToolId::none].cpu_ns_per_round > 0)
        ratios[id].push_back(run.cpu_ns_per_round / this_round[ToolId::none].cpu_ns_per_round);
    }
  }
  std::printf("\nlarge short-lived blocks: large_blocks, rounds of 40 std::vector<char> of "
              "64 KiB..16 MiB (log-uniform, fixed seed), each built, filled, dropped\n");
  std::printf("%-18s %13s %7s %14s %16s  %s\n", "mode", "cpu/round", "ratio", "faults/vector",
              "madvise/vector", "target");
  for (const bench::Tool* tool : used) {
    const auto& r = runs[tool->id];
    if (r.empty()) {
      std::printf("%-18s FAILED (see notes)\n", tool->name.c_str());
      continue;
    }
    const auto med = [&](double LargeRun::*field) {
      std::vector<double> v;
      for (const LargeRun& run : r) v.push_back(run.*field);
      return bench::median(v);
    };
    const double ratio = bench::median(ratios[tool->id]);
    const char* target = tool->id == ToolId::sampled ? "<= 1.03x" : tool->id == ToolId::exact ? "~1.04x" : "";
    std::printf("%-18s %10.2f ms %6.2fx %14.2f %16.2f  %s\n", tool->name.c_str(),
                med(&LargeRun::cpu_ns_per_round) / 1e6, ratio, med(&LargeRun::faults_per_vector),
                med(&LargeRun::madvise_per_vector), target);
  }
}

// The in-process section: median of each key over `processes` fresh runs (cold is cold
// only once per process).
std::map<std::string, double> measure_reports(int processes) {
  std::map<std::string, std::vector<double>> values;
  const std::vector<std::string> argv = {LIVEHEAP_BENCH_REPORT};
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
                  "                      [--only loop,server,large,report] [--judge cpu|wall]\n"
                  "                      [--heaptrack-lib PATH] [--jemalloc-lib PATH]\n");
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
  std::printf("loop: alloc_loop, %ld malloc/free pairs of 16-512 B per thread, ~25 frames deep. "
              "server: bench_server (Beast, 1 io thread) loaded by wrk -t1 -c%d for %d s on "
              "loopback.\ncpu/op: the measured process's CPU time per pair or request (other load "
              "on the machine cannot inflate it); wall/op: elapsed time per pair, or per request "
              "(1/throughput).\nratio = median over rounds of (cost / cost of no liveheap in the "
              "same round); verdicts judge %s time\n\n",
              s.pairs, s.connections, s.seconds, s.judged_by == bench::Clock::cpu ? "cpu" : "wall");
}

}  // namespace

int main(int argc, char** argv) {
  const Settings s = parse_settings(argc, argv);
  std::vector<bench::Tool> tools =
      bench::make_tools(LIVEHEAP_BENCH_PRELOAD, s.heaptrack_lib, s.jemalloc_lib);
  print_header(s);
  std::fflush(stdout);
  probe_tools(tools);

  std::vector<WorkloadId> workloads;
  if (s.only.count("loop"))
    workloads.insert(workloads.end(), {WorkloadId::loop_1, WorkloadId::loop_2});
  if (s.only.count("server")) workloads.push_back(WorkloadId::server);

  bench::Measurements m(static_cast<std::size_t>(s.rounds));
  for (int round = 0; round < s.rounds; ++round) {
    std::fprintf(stderr, "round %d/%d...\n", round + 1, s.rounds);
    for (WorkloadId w : workloads) {
      // Rotating the order spreads slow phases of a noisy machine over every mode.
      for (std::size_t k = 0; k < tools.size(); ++k) {
        const bench::Tool& tool = tools[(k + static_cast<std::size_t>(round)) % tools.size()];
        if (!tool.missing.empty()) continue;
        const std::optional<bench::Cost> cost =
            w == WorkloadId::server ? measure_server(tool, s)
                                    : measure_loop(tool, w == WorkloadId::loop_1 ? 1 : 2, s.pairs);
        if (cost) m.record(static_cast<std::size_t>(round), w, tool.id, *cost);
      }
    }
  }
  if (!workloads.empty()) bench::print_overhead_table(workloads, tools, m, s.judged_by);
  if (s.only.count("large")) run_large_row(tools, s.rounds);

  if (s.only.count("report")) {
    std::fprintf(stderr, "report_bench...\n");
    bench::print_report_table(measure_reports(std::min(s.rounds, 3)));
  }
  if (!g_notes.empty()) {
    std::printf("\nnotes:\n");
    for (const std::string& n : g_notes) std::printf("- %s\n", n.c_str());
  }
  return 0;
}
