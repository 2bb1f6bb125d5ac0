// End to end under LD_PRELOAD: an unmodified program (samples/exact_truth.cpp) allocates
// known bytes at known lines; liveheap_preload's admin server, started by LIVEHEAP_ADDR,
// must report exactly that through POST /baseline + GET /diff?format=json.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "child_process.hpp"
#include "client.hpp"
#include "gtest/gtest.h"
#include "truth_sites.hpp"
#include "../support/temp_dir.hpp"

namespace http_test {
namespace {

class PreloadTest : public ::testing::Test {
 protected:
  // Starts exact_truth --phases under LD_PRELOAD and waits for its first phase.
  void SetUp() override {
    port_ = free_port();
    program_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{LIVEHEAP_EXACT_TRUTH, "--phases"},
        std::vector<std::string>{std::string("LD_PRELOAD=") + LIVEHEAP_PRELOAD_LIBRARY,
                                 "LIVEHEAP_ADDR=127.0.0.1:" + std::to_string(port_), "LIVEHEAP_MODE=exact"});
    const auto ready = program_->read_line(20000);
    ASSERT_EQ(ready.value_or("EOF"), "BASELINE-READY");
  }

  // Lets the program allocate; returns the sites it reports.
  std::vector<Site> allocate() {
    program_->write_line("go");
    std::vector<Site> sites;
    EXPECT_EQ(program_->read_line(20000).value_or("EOF"), "ALLOCATED");
    while (const auto line = program_->read_line(1000)) {
      if (!line->starts_with("SITE ")) break;
      sites.push_back(parse_site(*line));
    }
    return sites;
  }

  std::uint16_t port_ = 0;
  std::unique_ptr<ChildProcess> program_;
};

TEST_F(PreloadTest, DiffReportsTheExactTruth) {
  ASSERT_EQ(post(port_, "/debug/memory/baseline").status, 200);
  const std::vector<Site> sites = allocate();
  ASSERT_GE(sites.size(), 5u);

  const Reply reply = get(port_, "/debug/memory/diff?format=json&limit=100");
  ASSERT_EQ(reply.status, 200) << reply.body;
  const auto report = reply.json();
  EXPECT_EQ(report["mode"], "exact");
  for (const Site& site : sites) {
    const nlohmann::json found = find_site(report, site);
    if (site.bytes == 0) {  // allocated and freed again: no growth, if listed at all
      if (!found.is_null()) {
        EXPECT_EQ(found["size_diff"], 0) << site.line;
        EXPECT_EQ(found["count_diff"], 0) << site.line;
      }
      continue;
    }
    ASSERT_FALSE(found.is_null()) << site.file << ":" << site.line << "\n" << report.dump(1);
    EXPECT_EQ(found["size_diff"], site.bytes) << site.line;
    EXPECT_EQ(found["count_diff"], site.count) << site.line;
  }
  EXPECT_EQ(program_->wait(10000), 0);
}

TEST_F(PreloadTest, LookingAtTheHeapDoesNotGrowIt) {
  allocate();  // then the program sits idle, waiting on stdin
  ASSERT_EQ(post(port_, "/debug/memory/baseline").status, 200);
  for (int i = 0; i < 5; ++i)
    for (const char* target :
         {"/debug/memory/stats", "/debug/memory/top?format=json&key=traceback", "/debug/memory/diff?limit=50",
          "/debug/memory/tracebacks?format=json", "/debug/memory/baseline", "/debug/memory/top?limit=0",
          "/debug/memory/", "/debug/memory/nope", "/elsewhere"})
      get(port_, target);
  const auto report = get(port_, "/debug/memory/diff?format=json&limit=10000").json();
  EXPECT_EQ(report["total"]["size_diff"], 0) << report.dump(1);
  EXPECT_EQ(report["total"]["count_diff"], 0) << report.dump(1);
}

// The process's resident memory, from /proc.
// A field of /proc/<pid>/status in bytes ("VmRSS:", "VmHWM:"), or -1.
long status_bytes(pid_t pid, const std::string& field) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.starts_with(field)) return std::stol(line.substr(field.size())) * 1024;
  return -1;
}

long resident_bytes(pid_t pid) { return status_bytes(pid, "VmRSS:"); }

// Debug information is read by the symbolizer process, not the traced one: twenty reports
// of every kind grow the program by its tracker's tables and little else (libc's debug
// information alone is 20 MB, libstdc++'s more).
TEST_F(PreloadTest, LookingCostsTheProcessNoDebugInformation) {
  allocate();
  const long before = resident_bytes(program_->pid());
  const long tracker_before =
      get(port_, "/debug/memory/stats?format=json").json()["tracker_memory"].get<long>();
  ASSERT_EQ(post(port_, "/debug/memory/baseline").status, 200);
  for (int i = 0; i < 4; ++i)
    for (const char* target :
         {"/debug/memory/top?key=traceback&limit=1000", "/debug/memory/diff?limit=1000&verdicts=1",
          "/debug/memory/tracebacks?format=json", "/debug/memory/peak", "/debug/memory/pprof/heap"})
      ASSERT_EQ(get(port_, target).status, 200) << target;
  const nlohmann::json stats = get(port_, "/debug/memory/stats?format=json").json();
  const long grown = resident_bytes(program_->pid()) - before;
  const long tracker_grown = stats["tracker_memory"].get<long>() - tracker_before;
  EXPECT_LE(grown - tracker_grown, 2L << 20) << "grew " << grown << " B, the tracker's own " << tracker_grown;
  EXPECT_GT(stats["symbolizer"]["addresses_resolved"].get<long>(), 20) << stats.dump(1);
  ASSERT_TRUE(stats["symbolizer"].contains("process")) << stats.dump(1);
  EXPECT_NE(stats["symbolizer"]["process"]["pid"].get<long>(), program_->pid());
  EXPECT_GT(stats["symbolizer"]["process"]["rss_bytes"].get<long>(), 0);
}

// A started exact_truth --phases's baseline, its allocations, then the top stacks of the
// diff on `port` (JSON, whole tracebacks).
nlohmann::json diff_of_exact_truth(ChildProcess& program, std::uint16_t port) {
  EXPECT_EQ(program.read_line(20000).value_or("EOF"), "BASELINE-READY");
  EXPECT_EQ(post(port, "/debug/memory/baseline").status, 200);
  program.write_line("go");
  EXPECT_EQ(program.read_line(20000).value_or("EOF"), "ALLOCATED");
  const Reply diff = get(port, "/debug/memory/diff?format=json&key=traceback&limit=5");
  EXPECT_EQ(diff.status, 200) << diff.body;
  return diff.status == 200 ? diff.json() : nlohmann::json::object();
}

// No symbolizer to start: reports still answer, their functions named by their symbols (or
// module+offset) without lines, and /stats says why. The program runs on, quietly.
TEST(PreloadSymbolizer, WithoutItReportsNameFunctionsWithoutLinesAndSayWhy) {
  const std::uint16_t port = free_port();
  ChildProcess program({LIVEHEAP_EXACT_TRUTH, "--phases"},
                       {std::string("LD_PRELOAD=") + LIVEHEAP_PRELOAD_LIBRARY,
                        "LIVEHEAP_ADDR=127.0.0.1:" + std::to_string(port), "LIVEHEAP_MODE=exact",
                        "LIVEHEAP_SYMBOLIZER=/nonexistent/liveheap-symbolizer"});
  const nlohmann::json report = diff_of_exact_truth(program, port);
  ASSERT_FALSE(report["stats"].empty()) << report.dump(1);
  for (const nlohmann::json& stat : report["stats"])
    for (const nlohmann::json& frame : stat["traceback"]) {
      EXPECT_EQ(frame["line"], 0) << frame.dump();
      EXPECT_FALSE(frame["function"].get<std::string>().empty()) << frame.dump();
    }
  const nlohmann::json stats = get(port, "/debug/memory/stats?format=json").json();
  EXPECT_NE(
      stats["symbolizer"].value("problem", "").find("LIVEHEAP_SYMBOLIZER=/nonexistent/liveheap-symbolizer"),
      std::string::npos)
      << stats.dump(1);
  EXPECT_NE(get(port, "/debug/memory/stats").body.find("symbolizer: unavailable"), std::string::npos);
  program.write_line("go");
  while (program.read_line(2000)) {
  }
  EXPECT_EQ(program.wait(10000), 0);
}

// LIVEHEAP_SYMBOLIZER is the value the process started with, though the full library that
// reads it is loaded later, beside the host's threads: a program that clears its environment
// meanwhile (as nginx's workers do) keeps the symbolizer it was given.
TEST(PreloadSymbolizer, TheOneNamedAtStartStaysNamedWhenTheProgramClearsItsEnvironment) {
  const std::uint16_t port = free_port();
  ChildProcess program({"/usr/bin/python3", "-c",
                        "import os, sys; os.environ.clear(); print('READY', flush=True); sys.stdin.read()"},
                       {std::string("LD_PRELOAD=") + LIVEHEAP_PRELOAD_LIBRARY,
                        "LIVEHEAP_ADDR=127.0.0.1:" + std::to_string(port), "LIVEHEAP_SAMPLE_INTERVAL=4096",
                        "LIVEHEAP_SYMBOLIZER=/nonexistent/liveheap-symbolizer"});
  ASSERT_EQ(program.read_line(20000).value_or("EOF"), "READY");
  ASSERT_EQ(get(port, "/debug/memory/top?key=traceback&limit=3").status, 200);
  const nlohmann::json stats = get(port, "/debug/memory/stats?format=json").json();
  EXPECT_NE(
      stats["symbolizer"].value("problem", "").find("LIVEHEAP_SYMBOLIZER=/nonexistent/liveheap-symbolizer"),
      std::string::npos)
      << stats.dump(1);
  EXPECT_EQ(program.wait(10000), 0);
}

// Fields of /proc/<pid>/stat after the command's closing parenthesis (field 3 is [0]).
std::vector<std::string> stat_fields(pid_t pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::istringstream rest(text.substr(text.rfind(')') + 1));
  std::vector<std::string> fields;
  for (std::string f; rest >> f;) fields.push_back(f);
  return fields;
}

// Starts `argv` (exact_truth, maybe through a wrapper) with a symbolizer of its own (a path
// of its own to the same executable: its own socket), asks one report and, while the
// program still runs, the symbolizer's pid, ppid and exit signal (/proc/<pid>/stat).
struct SymbolizerSeen {
  pid_t program = 0;
  pid_t pid = 0;
  pid_t parent = 0;
  std::string command_line;  // its arguments, joined by spaces
};
SymbolizerSeen symbolizer_of_a_report(const std::string& link, std::vector<std::string> argv) {
  const std::uint16_t port = free_port();
  ChildProcess program(std::move(argv), {std::string("LD_PRELOAD=") + LIVEHEAP_PRELOAD_LIBRARY,
                                         "LIVEHEAP_ADDR=127.0.0.1:" + std::to_string(port),
                                         "LIVEHEAP_MODE=exact", "LIVEHEAP_SYMBOLIZER=" + link});
  SymbolizerSeen seen;
  EXPECT_EQ(program.read_line(20000).value_or("EOF"), "BASELINE-READY");
  seen.program = program.pid();
  EXPECT_EQ(get(port, "/debug/memory/top?key=traceback&limit=3").status, 200);
  const nlohmann::json stats = get(port, "/debug/memory/stats?format=json").json();
  EXPECT_TRUE(stats["symbolizer"].contains("process")) << stats.dump(1);
  seen.pid = stats["symbolizer"].value("process", nlohmann::json::object()).value("pid", 0);
  if (seen.pid <= 0) return seen;
  const std::vector<std::string> fields = stat_fields(seen.pid);
  seen.parent = std::stoi(fields.at(1));
  std::ifstream cmdline("/proc/" + std::to_string(seen.pid) + "/cmdline");
  for (std::string arg; std::getline(cmdline, arg, '\0');) seen.command_line += arg + " ";
  ::kill(seen.pid, SIGTERM);  // this test's symbolizer: not left for its idle minute
  return seen;
}

// The symbolizer is never a child the host sees exit: it is init's, or, in a host that
// adopts orphans (PID 1 of a container, a subreaper), it is told so and never exits while
// the host lives (SymbolizerProcess.* in tests/symbolize shows what it does instead).
TEST(PreloadSymbolizer, NoHostGetsASigchldFromIt) {
  test_support::TempDir dir;
  const std::string link = dir.path() + "/liveheap-symbolizer";
  ASSERT_EQ(::symlink(LIVEHEAP_SYMBOLIZER_EXECUTABLE, link.c_str()), 0);

  const SymbolizerSeen detached = symbolizer_of_a_report(link, {LIVEHEAP_EXACT_TRUTH, "--phases"});
  ASSERT_GT(detached.pid, 0);
  EXPECT_NE(detached.parent, detached.program) << "the symbolizer is the host's child";

  // PR_SET_CHILD_SUBREAPER (36) is kept across exec: the program adopts its orphans.
  const SymbolizerSeen kept = symbolizer_of_a_report(
      link,
      {"/usr/bin/python3", "-c",
       "import ctypes, os, sys; ctypes.CDLL(None).prctl(36, 1, 0, 0, 0); os.execv(sys.argv[1], sys.argv[1:])",
       LIVEHEAP_EXACT_TRUTH, "--phases"});
  ASSERT_GT(kept.pid, 0);
  EXPECT_EQ(kept.parent, kept.program) << "a subreaper adopts the symbolizer";
  EXPECT_NE(kept.command_line.find("--stay-with " + std::to_string(kept.program) + " "), std::string::npos)
      << kept.command_line;
  EXPECT_EQ(detached.command_line.find("--stay-with"), std::string::npos) << detached.command_line;
}

// The files a preloaded program needs from this build, copied into `dir` as an installation
// lays them out: the preload library, its full part and the symbolizer, side by side.
void copy_preload_files(const std::string& dir) {
  const std::filesystem::path built = std::filesystem::path(LIVEHEAP_PRELOAD_LIBRARY).parent_path();
  for (const char* file : {"libliveheap_preload.so", "libliveheap_preload_full.so"})
    std::filesystem::copy_file(built / file, std::filesystem::path(dir) / file);
  std::filesystem::copy_file(LIVEHEAP_SYMBOLIZER_EXECUTABLE, dir + "/liveheap-symbolizer");
}

// The executable of the symbolizer process /stats names (and ends it: it is this test's
// alone, its socket named after its path), or "" when there is none.
std::string symbolizer_executable(std::uint16_t port) {
  const nlohmann::json stats = get(port, "/debug/memory/stats?format=json").json();
  EXPECT_TRUE(stats["symbolizer"].contains("process")) << stats.dump(1);
  const int pid = stats["symbolizer"].value("process", nlohmann::json::object()).value("pid", 0);
  if (pid <= 0) return "";
  std::error_code error;
  const std::string executable =
      std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", error);
  ::kill(pid, SIGTERM);
  return executable;
}

// The symbolizer is looked for beside the library whose code asks for it: the preload
// library's full part, loaded on first need from the preload library's directory. Copied
// elsewhere with the two libraries (as installed), it is that copy that runs, and names
// every frame with its line.
TEST(PreloadSymbolizer, TheOneBesideTheLibrariesIsStarted) {
  test_support::TempDir dir;
  copy_preload_files(dir.path());
  const std::uint16_t port = free_port();
  ChildProcess program({LIVEHEAP_EXACT_TRUTH, "--phases"},
                       {"LD_PRELOAD=" + dir.path() + "/libliveheap_preload.so",
                        "LIVEHEAP_ADDR=127.0.0.1:" + std::to_string(port), "LIVEHEAP_MODE=exact"});
  const nlohmann::json report = diff_of_exact_truth(program, port);
  bool named = false;
  for (const nlohmann::json& stat : report["stats"])
    for (const nlohmann::json& frame : stat["traceback"])
      named |= frame["file"].get<std::string>().ends_with("exact_truth.cpp") && frame["line"].get<int>() > 0;
  EXPECT_TRUE(named) << report.dump(1);
  std::ifstream maps("/proc/" + std::to_string(program.pid()) + "/maps");
  const std::string mapped((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
  EXPECT_NE(mapped.find(dir.path() + "/libliveheap_preload_full.so"), std::string::npos) << mapped;
  EXPECT_EQ(symbolizer_executable(port), dir.path() + "/liveheap-symbolizer");
  program.write_line("go");
  while (program.read_line(2000)) {
  }
  EXPECT_EQ(program.wait(10000), 0);
}

// LD_PRELOAD may name the library relative to the working directory, which the program may
// leave (a daemon's chdir("/")) before its endpoint's first connection loads the full
// library: both it and the symbolizer are still found where they were at start.
TEST(PreloadSymbolizer, ARelativePreloadPathHoldsAfterTheProgramChangesDirectory) {
  test_support::TempDir dir;
  copy_preload_files(dir.path());
  const std::uint16_t port = free_port();
  ChildProcess program({"/bin/sh", "-c",
                        "cd \"$1\" && LD_PRELOAD=./libliveheap_preload.so exec /bin/sh -c 'cd / && echo "
                        "READY && read x || true'",
                        "sh", dir.path()},
                       {"LIVEHEAP_ADDR=127.0.0.1:" + std::to_string(port), "LIVEHEAP_MODE=exact"});
  ASSERT_EQ(program.read_line(20000).value_or("EOF"), "READY");
  const Reply top = get(port, "/debug/memory/top?key=traceback&limit=3");
  ASSERT_EQ(top.status, 200) << top.body;
  EXPECT_EQ(symbolizer_executable(port), dir.path() + "/liveheap-symbolizer");
  EXPECT_EQ(program.wait(10000), 0);
}

// A wrapper that execs the program (pyenv's shims, `env`, a shell's `exec`) loads the
// preload library first and starts an admin server; exec must close its listening socket,
// or the program inherits a socket no thread serves (clients hang) and cannot bind its own.
TEST(PreloadWrapper, TheProgramAWrapperExecsServesThePort) {
  const std::uint16_t port = free_port();
  ChildProcess program({"/bin/sh", "-c", std::string("exec ") + LIVEHEAP_EXACT_TRUTH + " --phases"},
                       {std::string("LD_PRELOAD=") + LIVEHEAP_PRELOAD_LIBRARY,
                        "LIVEHEAP_ADDR=127.0.0.1:" + std::to_string(port), "LIVEHEAP_MODE=exact"});
  ASSERT_EQ(program.read_line(20000).value_or("EOF"), "BASELINE-READY");
  const Reply stats = get(port, "/debug/memory/stats?format=json");
  ASSERT_EQ(stats.status, 200) << "no answer on the port: the wrapper's socket leaked into the program";
  EXPECT_EQ(stats.json()["mode"], "exact");
  // The program, not the wrapper, answers: its traced heap follows its allocations.
  ASSERT_EQ(post(port, "/debug/memory/baseline").status, 200);
  program.write_line("go");
  ASSERT_EQ(program.read_line(20000).value_or("EOF"), "ALLOCATED");
  const auto diff = get(port, "/debug/memory/diff?format=json").json();
  EXPECT_GT(diff["total"]["size_diff"].get<long>(), 0) << diff.dump(1);
}

// LIVEHEAP_PLUMBING: the program's own arena counts as plumbing, so key=line names the
// arena's callers; without it, the arena's one malloc line takes everything.
std::vector<Site> run_arena(ChildProcess& program, std::uint16_t port, nlohmann::json& diff) {
  EXPECT_EQ(program.read_line(20000).value_or("EOF"), "READY");
  EXPECT_EQ(post(port, "/debug/memory/baseline").status, 200);
  program.write_line("go");
  std::vector<Site> sites;
  while (const auto line = program.read_line(20000)) {
    if (!line->starts_with("SITE ")) break;
    sites.push_back(parse_site(*line));
  }
  diff = get(port, "/debug/memory/diff?format=json&key=line&limit=1000").json();
  return sites;
}

TEST(PreloadPlumbing, ANamedArenaPointsKeyLineAtItsCallers) {
  for (const bool named : {false, true}) {
    const std::uint16_t port = free_port();
    std::vector<std::string> env{std::string("LD_PRELOAD=") + LIVEHEAP_PRELOAD_LIBRARY,
                                 "LIVEHEAP_ADDR=127.0.0.1:" + std::to_string(port), "LIVEHEAP_MODE=exact"};
    // Matches the name as shown ("(anonymous namespace)::arena_allocate"), not the full one.
    if (named) env.push_back("LIVEHEAP_PLUMBING=*/no_such_dir/*, function:*arena_allocate");
    ChildProcess program({LIVEHEAP_ARENA_PROGRAM}, env);
    nlohmann::json diff;
    const std::vector<Site> sites = run_arena(program, port, diff);
    ASSERT_EQ(sites.size(), 3u);
    const Site& small = sites[0];
    const Site& big = sites[1];
    const Site& arena = sites[2];
    if (named) {
      for (const Site* site : {&small, &big}) {
        const nlohmann::json stat = find_site(diff, *site);
        ASSERT_FALSE(stat.is_null()) << site->line << "\n" << diff.dump(1);
        EXPECT_EQ(stat["size_diff"], site->bytes) << site->line;
        EXPECT_EQ(stat["count_diff"], site->count) << site->line;
      }
      EXPECT_TRUE(find_site(diff, arena).is_null()) << diff.dump(1);
      const std::string text = get(port, "/debug/memory/diff?key=line&limit=2").body;
      EXPECT_NE(text.find(":" + std::to_string(big.line) +
                          ": size=293 KiB (+293 KiB), count=3 (+3), average=97.7 KiB\n"),
                std::string::npos)
          << text;
    } else {
      const nlohmann::json stat = find_site(diff, arena);
      ASSERT_FALSE(stat.is_null()) << diff.dump(1);
      EXPECT_EQ(stat["size_diff"], arena.bytes);
      EXPECT_EQ(stat["count_diff"], arena.count);
      EXPECT_TRUE(find_site(diff, small).is_null());
      EXPECT_TRUE(find_site(diff, big).is_null());
    }
    EXPECT_EQ(program.wait(10000), 0);
  }
}

// Debian's python3 building large lists (the list's array doubles as it fills: a block
// realloc'ed past its size again and again, sampled at each step) and bytes objects of a
// few MiB, freed: under the preload library in sampled mode, its peak resident set stays
// within 2 MiB or 2% (the larger) of the same script's without liveheap.
constexpr const char* kListsScript =
    "import sys\n"
    "x = [str(i) for i in range(1500000)]\n"
    "y = list(range(1500000))\n"
    "blobs = [bytes(4 << 20) for _ in range(12)]\n"
    "del blobs[:6]\n"
    "print('READY', flush=True)\n"
    "sys.stdin.readline()\n";

long python_peak_resident(const std::vector<std::string>& env) {
  ChildProcess python({"/usr/bin/python3", "-c", kListsScript}, env);
  EXPECT_EQ(python.read_line(60000).value_or("EOF"), "READY");
  const long peak = status_bytes(python.pid(), "VmHWM:");
  EXPECT_EQ(python.wait(20000), 0);
  return peak;
}

TEST(PreloadSampled, APythonBuildingListsPeaksWithinTwoMebibytesOrTwoPercentOfBare) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  // Medians of three: the interpreter's own peak moves by a few hundred KiB run to run.
  std::vector<long> bare, sampled;
  for (int i = 0; i < 3; ++i) {
    bare.push_back(python_peak_resident({}));
    sampled.push_back(python_peak_resident(
        {std::string("LD_PRELOAD=") + LIVEHEAP_PRELOAD_LIBRARY, "LIVEHEAP_MODE=sampled"}));
  }
  std::sort(bare.begin(), bare.end());
  std::sort(sampled.begin(), sampled.end());
  const long allowed = std::max(2L << 20, bare[1] / 50);
  EXPECT_LE(sampled[1] - bare[1], allowed) << "peak " << sampled[1] << " B sampled, " << bare[1] << " B bare";
}

// A sampled block never reaches glibc, but glibc's free of a large block of its own raises
// its mmap threshold to that size: the next block of up to that size comes from its heap,
// not from a fresh mapping faulted in page by page. Freed sampled, an 8 MiB block (sampled
// whatever the draw: 16 intervals) must leave glibc where its own would have: a 4 MiB block
// asked of glibc directly afterwards is not mapped (mallinfo2's hblks), as without liveheap.
constexpr const char* kThresholdScript = R"(
import ctypes
class Info(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]
libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = Info
libc.__libc_malloc.restype = ctypes.c_void_p
hooks = ctypes.CDLL(None)
hooks.malloc.restype = ctypes.c_void_p
hooks.free.argtypes = [ctypes.c_void_p]
hooks.free(hooks.malloc(8 << 20))
before = libc.mallinfo2().hblks
block = libc.__libc_malloc(4 << 20)
print(libc.mallinfo2().hblks - before)
)";

TEST(PreloadSampled, AFreedSampledBlockMovesGlibcsMmapThresholdAsItsOwnWould) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  ChildProcess bare({"/usr/bin/python3", "-c", kThresholdScript}, {});
  ASSERT_EQ(bare.read_line(60000).value_or("EOF"), "0") << "glibc's dynamic threshold is off here";
  EXPECT_EQ(bare.wait(20000), 0);
  ChildProcess sampled({"/usr/bin/python3", "-c", kThresholdScript},
                       {std::string("LD_PRELOAD=") + LIVEHEAP_PRELOAD_LIBRARY, "LIVEHEAP_MODE=sampled"});
  EXPECT_EQ(sampled.read_line(60000).value_or("EOF"), "0") << "the 4 MiB block was mapped";
  EXPECT_EQ(sampled.wait(20000), 0);
}

// /stats says what sampled mode holds: its live samples, in glibc's heap (hosted) and in the
// region's runs, the freed runs the region keeps for reuse and the most it may keep now.
TEST(PreloadSampled, StatsShowWhatSampledModeHolds) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  const std::uint16_t port = free_port();
  ChildProcess python({"/usr/bin/python3", "-c", kListsScript},
                      {std::string("LD_PRELOAD=") + LIVEHEAP_PRELOAD_LIBRARY, "LIVEHEAP_MODE=sampled",
                       "LIVEHEAP_ADDR=127.0.0.1:" + std::to_string(port)});
  ASSERT_EQ(python.read_line(60000).value_or("EOF"), "READY");
  const Reply json = get(port, "/debug/memory/stats?format=json");
  ASSERT_EQ(json.status, 200) << json.body;
  const nlohmann::json sampled = json.json().at("sampled");
  // Six 4 MiB blobs are live (each sampled: 8 sample intervals), and the lists' arrays.
  EXPECT_GE(sampled.at("samples_live").get<long>(), 6) << sampled.dump();
  // glibc underneath: in its heap, with a header and the slack before a page boundary each.
  EXPECT_GE(sampled.at("hosted_bytes").get<long>(), 6L * (4 << 20)) << sampled.dump();
  EXPECT_GE(sampled.at("kept_limit").get<long>(), 2L << 20) << sampled.dump();
  EXPECT_LE(sampled.at("kept_limit").get<long>(), 64L << 20) << sampled.dump();
  EXPECT_LE(sampled.at("kept_bytes").get<long>(), sampled.at("kept_limit").get<long>()) << sampled.dump();
  EXPECT_TRUE(sampled.at("madvise_calls").is_number()) << sampled.dump();
  // One page at most for each of the first 64 threads, apart from the kept runs' limit.
  const long thread_kept = sampled.at("thread_kept_bytes").get<long>();
  EXPECT_TRUE(thread_kept >= 0 && thread_kept <= 64 * 4096 && thread_kept % 4096 == 0) << sampled.dump();
  const Reply text = get(port, "/debug/memory/stats");
  EXPECT_NE(text.body.find("\nsampled: "), std::string::npos) << text.body;
  EXPECT_EQ(python.wait(20000), 0);
}

}  // namespace
}  // namespace http_test
