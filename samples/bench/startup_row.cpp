// The start-up row (see startup_row.hpp): posix_spawn and wait4 per exec, output to
// /dev/null, the child's own CPU time and page faults from its rusage.
#include "startup_row.hpp"

#include "child_process.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <vector>

extern char** environ;

namespace bench {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Wall-clock seconds the row may spend per program, over every variant and round.
constexpr double kSecondsPerProgram = 4.0;
// The machine the targets were set on: its bare /bin/true took this long (its wall time,
// on a quiet machine the same as its CPU time).
constexpr double kReferenceExecMs = 0.55;

struct Program {
  std::string name;                // as printed
  std::vector<std::string> argv;   // argv[0] an absolute path
};

struct Variant {
  std::string name;
  Environment env;
  double target_ms = NAN;  // the most it may add over bare (docs/performance.md)
};

// One exec's cost.
struct ExecCost {
  double wall_ms = 0;
  double cpu_ms = 0;
  double faults = 0;
};

std::optional<std::string> find_program(const char* name) {
  for (const char* dir : {"/usr/bin/", "/bin/", "/usr/local/bin/"}) {
    const std::string path = std::string(dir) + name;
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return std::nullopt;
}

// `n` execs in a row; the cost of one, or nullopt when one failed.
std::optional<ExecCost> run_many(const Program& program, const Variant& variant, int n) {
  std::vector<std::string> argv_strings = program.argv;
  std::vector<std::string> env_strings = child_environment(variant.env);
  std::vector<char*> argv = pointers(argv_strings), envp = pointers(env_strings);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  for (int fd : {0, 1, 2}) posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", O_RDWR, 0);
  ExecCost total;
  bool ok = true;
  for (int i = 0; i < n && ok; ++i) {
    const auto start = SteadyClock::now();
    pid_t pid = -1;
    if (posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data()) != 0) {
      ok = false;
      break;
    }
    int status = 0;
    rusage usage{};
    while (wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
    }
    total.wall_ms += std::chrono::duration<double, std::milli>(SteadyClock::now() - start).count();
    total.cpu_ms += (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e3 +
                    (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e3;
    total.faults += static_cast<double>(usage.ru_minflt);
    ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  posix_spawn_file_actions_destroy(&actions);
  if (!ok) return std::nullopt;
  return ExecCost{total.wall_ms / n, total.cpu_ms / n, total.faults / n};
}

std::vector<Program> programs(std::vector<std::string>& notes) {
  std::vector<Program> found = {{"/bin/true", {"/bin/true"}},
                                // Lives long enough for its endpoint to register.
                                {"sleep 0.05", {"/bin/sleep", "0.05"}}};
  const struct {
    const char* name;
    std::vector<std::string> args;
  } wanted[] = {{"git", {"--version"}},
                {"python3", {"-c", "0"}},
                {"node", {"-e", "0"}},
                {"sqlite3", {":memory:", "select 1"}}};
  for (const auto& w : wanted) {
    const auto path = find_program(w.name);
    if (!path) {
      notes.push_back(std::string(w.name) + " is not installed: its row is skipped");
      continue;
    }
    std::vector<std::string> argv = {*path};
    argv.insert(argv.end(), w.args.begin(), w.args.end());
    std::string name = w.name;
    for (const std::string& a : w.args) name += " " + a;
    found.push_back({name, argv});
  }
  return found;
}

double median_of(std::vector<double> v) { return median(std::move(v)); }

}  // namespace

void run_startup_row(const std::string& preload, int rounds, Clock judged_by) {
  std::vector<std::string> notes;
  const int port = free_port();
  const std::vector<Variant> variants = {
      {"no liveheap", {}, NAN},
      {"preload, mode off", {{"LD_PRELOAD", preload}, {"LIVEHEAP_MODE", "off"}}, 0.1},
      {"preload, sampled", {{"LD_PRELOAD", preload}}, 0.1},
      {"preload, sampled + ADDR",
       {{"LD_PRELOAD", preload}, {"LIVEHEAP_ADDR", "127.0.0.1:" + std::to_string(port)}},
       0.5}};
  struct Line {
    std::string program, variant;
    int n = 0;
    double wall = 0, cpu = 0, faults = 0, added_wall = 0, added_cpu = 0;
    double target = NAN;
    bool failed = false;
  };
  std::vector<Line> lines;
  double bare_true_ms = NAN;  // this machine's speed at exec: bare /bin/true, judged clock
  for (const Program& program : programs(notes)) {
    std::fprintf(stderr, "startup: %s...\n", program.name.c_str());
    const auto probe = run_many(program, variants[0], 1);
    if (!probe) {
      notes.push_back(program.name + " failed bare: its row is skipped");
      continue;
    }
    const int n = std::clamp(static_cast<int>(kSecondsPerProgram * 1e3 /
                                              (probe->wall_ms * variants.size() * rounds)),
                             2, 200);
    std::vector<std::vector<ExecCost>> costs(variants.size());
    std::vector<std::vector<double>> added_wall(variants.size()), added_cpu(variants.size());
    for (int round = 0; round < rounds; ++round) {
      std::vector<std::optional<ExecCost>> this_round(variants.size());
      for (std::size_t k = 0; k < variants.size(); ++k) {
        const std::size_t i = (k + static_cast<std::size_t>(round)) % variants.size();
        this_round[i] = run_many(program, variants[i], n);
        if (!this_round[i]) notes.push_back(program.name + " failed under " + variants[i].name);
      }
      for (std::size_t i = 0; i < variants.size(); ++i) {
        if (!this_round[i]) continue;
        costs[i].push_back(*this_round[i]);
        if (this_round[0]) {
          added_wall[i].push_back(this_round[i]->wall_ms - this_round[0]->wall_ms);
          added_cpu[i].push_back(this_round[i]->cpu_ms - this_round[0]->cpu_ms);
        }
      }
    }
    for (std::size_t i = 0; i < variants.size(); ++i) {
      Line line{program.name, variants[i].name, n};
      line.target = variants[i].target_ms;
      line.failed = costs[i].empty();
      if (!line.failed) {
        const auto med = [&](double ExecCost::*field) {
          std::vector<double> v;
          for (const ExecCost& c : costs[i]) v.push_back(c.*field);
          return median_of(v);
        };
        line.wall = med(&ExecCost::wall_ms);
        line.cpu = med(&ExecCost::cpu_ms);
        line.faults = med(&ExecCost::faults);
        line.added_wall = i == 0 ? 0 : median_of(added_wall[i]);
        line.added_cpu = i == 0 ? 0 : median_of(added_cpu[i]);
        if (i == 0 && program.name == "/bin/true")
          bare_true_ms = judged_by == Clock::cpu ? line.cpu : line.wall;
      }
      lines.push_back(line);
    }
  }
  // The targets are for a machine whose bare /bin/true takes kReferenceExecMs: what an exec
  // costs (mapping, relocating, page faults) scales with the machine, and so does what the
  // preload library adds to it. Scaled on the judged clock (a loaded machine's wall time
  // is mostly other processes').
  const double scale = std::isnan(bare_true_ms) ? 1.0 : kReferenceExecMs / bare_true_ms;
  std::printf("\nstart-up per exec: each program run N times in a row per variant, variants "
              "interleaved over %d rounds, medians of per-round means; LIVEHEAP_ADDR=127.0.0.1:%d "
              "(free at start); +ms: over no liveheap in the same round. The targets are for a "
              "machine whose bare /bin/true takes %.2f ms; this one's takes %.3f ms (%s), so the "
              "judged column is +ms (%s) x %.3f\n",
              rounds, port, kReferenceExecMs, bare_true_ms, judged_by == Clock::cpu ? "cpu" : "wall",
              judged_by == Clock::cpu ? "cpu" : "wall", scale);
  std::printf("%-26s %-24s %4s %10s %10s %10s %10s %8s %9s  %-10s %s\n", "program", "variant",
              "N", "wall/exec", "+wall", "cpu/exec", "+cpu", "faults", "judged", "target",
              "verdict");
  for (const Line& l : lines) {
    if (l.failed) {
      std::printf("%-26s %-24s FAILED (see notes)\n", l.program.c_str(), l.variant.c_str());
      continue;
    }
    const double judged = (judged_by == Clock::cpu ? l.added_cpu : l.added_wall) * scale;
    char target[24] = "-", verdict[8] = "";
    if (!std::isnan(l.target)) {
      std::snprintf(target, sizeof target, "<= +%.1f ms", l.target);
      std::snprintf(verdict, sizeof verdict, "%s", judged <= l.target ? "pass" : "MISS");
    }
    std::printf("%-26s %-24s %4d %7.3f ms %+7.3f ms %7.3f ms %+7.3f ms %8.1f %+6.3f ms  %-10s %s\n",
                l.program.c_str(), l.variant.c_str(), l.n, l.wall, l.added_wall, l.cpu,
                l.added_cpu, l.faults, judged, target, verdict);
  }
  for (const std::string& note : notes) std::printf("  note: %s\n", note.c_str());
}

}  // namespace bench
