// Python frames in native stacks, on Debian's unmodified python3 under the preload
// library: bytearrays leaked at known lines of stories/python_lines.py (a function, two
// threads, a generator, a coroutine) are keyed at those lines by /diff?key=line, with the
// bytes tracemalloc, started in the same process, counts there (within 1%). Sampled mode
// puts the same line on top. A program that looks like a CPython liveheap cannot read
// keeps its native frames, and /stats says why.
#include <cmath>
#include <fstream>
#include <map>
#include <optional>

#include <gtest/gtest.h>

#include "../support/temp_dir.hpp"
#include "e2e_support.hpp"

namespace liveheap::e2e {
namespace {

using nlohmann::json;

constexpr const char* kDebianPython = "/usr/bin/python3";  // Debian's
const std::string kScript = std::string(LIVEHEAP_STORIES_DIR) + "/python_lines.py";

// The line of `file` carrying "# site: <name>" (or "// site: <name>").
int site_line(const std::string& file, const std::string& name) {
  std::ifstream in(file);
  std::string text;
  for (int line = 1; std::getline(in, text); ++line)
    if (text.ends_with("site: " + name)) return line;
  throw std::runtime_error("no line of " + file + " marks site: " + name);
}

// The statistic of a key=line diff at file:line, or null.
json stat_at_line(const json& diff, const std::string& file, int line) {
  for (const json& stat : diff.at("stats"))
    if (stat.value("file", "") == file && stat.value("line", 0) == line) return stat;
  return nullptr;
}

// A program under the preload library with an endpoint, driven over stdin and stdout.
class TracedProgram {
 public:
  TracedProgram(std::vector<std::string> argv, const std::string& mode,
                const std::vector<std::string>& more_env = {})
      : port_(http_test::free_port()) {
    std::vector<std::string> env{std::string("LD_PRELOAD=") + LIVEHEAP_PRELOAD_LIBRARY,
                                 "LIVEHEAP_ADDR=127.0.0.1:" + std::to_string(port_), "LIVEHEAP_MODE=" + mode,
                                 "XDG_RUNTIME_DIR=" + dir_.path(), "PYTHONDONTWRITEBYTECODE=1"};
    env.insert(env.end(), more_env.begin(), more_env.end());
    process_ = std::make_unique<http_test::ChildProcess>(argv, env);
    const auto ready = process_->read_line(30000);
    if (ready != "ready") throw std::runtime_error("the program never said ready");
    if (!http_test::wait_until(
            std::chrono::seconds(30),
            [&] { return http_test::get(port_, "/debug/memory/stats").status == 200; },
            std::chrono::milliseconds(50)))
      throw std::runtime_error("the endpoint never answered");
  }
  ~TracedProgram() { process_->wait(10000); }

  // Sends "command n"; the lines it answered before "done".
  std::vector<std::string> run(const std::string& command, int n) {
    process_->write_line(command + " " + std::to_string(n));
    std::vector<std::string> lines;
    for (;;) {
      const auto line = process_->read_line(60000);
      if (!line) throw std::runtime_error("no answer to " + command);
      if (*line == "done") return lines;
      lines.push_back(*line);
    }
  }
  void baseline() const { EXPECT_EQ(http_test::post(port_, "/debug/memory/baseline").status, 200); }
  json get_json(const std::string& target) const {
    const auto reply = http_test::get(port_, target);
    EXPECT_EQ(reply.status, 200) << reply.body;
    return reply.json();
  }
  std::string get_text(const std::string& target) const { return http_test::get(port_, target).body; }

 private:
  test_support::TempDir dir_;  // the registry (XDG_RUNTIME_DIR)
  std::uint16_t port_;
  std::unique_ptr<http_test::ChildProcess> process_;
};

// tracemalloc's answer: line -> bytes grown there.
std::map<int, std::int64_t> tracemalloc_sizes(const std::vector<std::string>& lines) {
  std::map<int, std::int64_t> sizes;
  for (const std::string& l : lines) sizes[std::stoi(l)] = std::stoll(l.substr(l.find(' ') + 1));
  return sizes;
}

class PythonFrames : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("/usr/bin/python3 -c 'import sys; assert sys.version_info[:2] == (3, 11)' 2>/dev/null") !=
        0)
      GTEST_SKIP() << "needs Debian 12's python3 (3.11)";
  }
  // Leaks with `command` in `mode` and checks each line leaked at against tracemalloc.
  void expect_lines_as_tracemalloc(const std::string& command, const std::vector<std::string>& sites,
                                   const std::vector<std::string>& more_env = {}) {
    TracedProgram python({kDebianPython, kScript}, "exact", more_env);
    python.run(command, 2);  // first calls: whatever is set up once is not in the diff
    python.baseline();
    const std::map<int, std::int64_t> oracle = tracemalloc_sizes(python.run(command, 24));
    const json diff = python.get_json("/debug/memory/diff?key=line&format=json&limit=1000");
    for (const std::string& site : sites) {
      const int line = site_line(kScript, site);
      ASSERT_TRUE(oracle.contains(line)) << "tracemalloc saw nothing at " << site;
      const std::int64_t truth = oracle.at(line);
      EXPECT_GE(truth, 24 << 20) << site;
      const json stat = stat_at_line(diff, kScript, line);
      ASSERT_FALSE(stat.is_null()) << site << " (line " << line
                                   << ") is not in the diff: " << diff["stats"].dump(1);
      const auto size = stat["size_diff"].get<std::int64_t>();
      EXPECT_LE(std::abs(static_cast<double>(size - truth)), 0.01 * static_cast<double>(truth))
          << site << ": liveheap " << size << " B, tracemalloc " << truth << " B";
    }
  }
};

TEST_F(PythonFrames, ABytearrayLeakIsKeyedAtItsPythonLineWithTracemallocsBytes) {
  expect_lines_as_tracemalloc("function", {"function"});
}

// A native stack cut at the frame limit (4 return addresses: the bytearray's allocation is
// deeper) is walked again whole, its evaluator frames counted against the Python runs, and
// keeps its Python lines.
TEST_F(PythonFrames, AStackCutAtTheFrameLimitKeepsItsPythonLine) {
  expect_lines_as_tracemalloc("function", {"function"}, {"LIVEHEAP_FRAMES=4"});
}

TEST_F(PythonFrames, TwoThreadsLeakingAreEachAtTheirOwnLine) {
  expect_lines_as_tracemalloc("threads", {"first thread", "second thread"});
}

TEST_F(PythonFrames, AGeneratorsLeakIsAtItsLine) { expect_lines_as_tracemalloc("generator", {"generator"}); }

TEST_F(PythonFrames, ACoroutinesLeakIsAtItsLine) { expect_lines_as_tracemalloc("coroutine", {"coroutine"}); }

TEST_F(PythonFrames, TracebacksShowPythonFramesInTracemallocsFormAndJsonTheirKind) {
  TracedProgram python({kDebianPython, kScript}, "exact");
  python.baseline();
  python.run("function", 8);
  const int line = site_line(kScript, "function");
  const std::string text = python.get_text("/debug/memory/diff?key=traceback&limit=3");
  EXPECT_NE(text.find("  File \"" + kScript + "\", line " + std::to_string(line) + ", in leak_in_function"),
            std::string::npos)
      << text;
  // The caller's line in the chain: the dispatch table's lambda, then main at module level.
  EXPECT_NE(text.find(", in <lambda>"), std::string::npos) << text;
  EXPECT_NE(text.find(", in main"), std::string::npos) << text;
  EXPECT_NE(text.find(", in <module>"), std::string::npos) << text;
  const json diff = python.get_json("/debug/memory/diff?key=traceback&format=json&limit=3");
  const json& top = diff.at("stats").at(0);
  bool python_frame = false, native_frame = false;
  for (const json& frame : top.at("traceback")) {
    python_frame = python_frame || (frame["kind"] == "python" && frame["line"] == line);
    native_frame = native_frame || frame["kind"] == "native";
  }
  EXPECT_TRUE(python_frame && native_frame) << top.dump(1);
  const std::string stats = python.get_text("/debug/memory/stats");
  EXPECT_NE(stats.find("\npython frames: on (CPython 3.11."), std::string::npos) << stats;
}

TEST_F(PythonFrames, SampledModePutsTheLeakingLineOnTop) {
  TracedProgram python({kDebianPython, kScript}, "sampled");
  python.baseline();
  python.run("function", 64);
  const json diff = python.get_json("/debug/memory/diff?key=line&format=json&limit=5");
  const json& top = diff.at("stats").at(0);
  EXPECT_EQ(top["file"], kScript) << diff.dump(1);
  EXPECT_EQ(top["line"], site_line(kScript, "function")) << diff.dump(1);
  // A weighted estimate of the 64 MiB leaked: within 25% (each MiB is sampled with
  // probability 1 - e^-2 at the default interval).
  EXPECT_NEAR(top["size_diff"].get<double>(), 64.0 * (1 << 20), 16.0 * (1 << 20)) << top.dump();
}

// A CPython liveheap has no layout for, and a 3.11 without the symbols it needs: native
// frames only, the leak at its C++ line, and /stats naming the reason in one line.
TEST(PythonFramesUnsupported, AnUnknownVersionKeepsNativeFramesAndStatsSaysWhy) {
  const std::string source = LIVEHEAP_FAKE_CPYTHON_SOURCE;
  const int line = site_line(source, "evaluator");
  const std::pair<const char*, const char*> cases[] = {
      {LIVEHEAP_FAKE_PYTHON312,
       "python frames: off: CPython 3.12.1 is not supported (3.11 is): native frames only"},
      {LIVEHEAP_FAKE_PYTHON311_INCOMPLETE,
       "python frames: off: CPython 3.11.2 has no symbol PyGILState_GetThisThreadState: native frames only"}};
  for (const auto& [program, said] : cases) {
    TracedProgram fake({program}, "exact");
    fake.baseline();
    fake.run("leak", 4);
    const std::string stats = fake.get_text("/debug/memory/stats");
    EXPECT_NE(stats.find("\n" + std::string(said) + "\n"), std::string::npos) << stats;
    const json diff = fake.get_json("/debug/memory/diff?key=line&format=json&limit=5");
    const json stat = stat_at_line(diff, source, line);
    ASSERT_FALSE(stat.is_null()) << diff.dump(1);
    EXPECT_EQ(stat["size_diff"], 4 << 20);
    EXPECT_EQ(stat["kind"], "native");
  }
}

}  // namespace
}  // namespace liveheap::e2e
