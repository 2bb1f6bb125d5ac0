// Python frames among native ones, on hand-built snapshots: the interpreter's own C frames
// are plumbing, so `key=line` names the Python line of a pure-Python allocation and the
// extension's line of an extension's; text tracebacks show Python frames in tracemalloc's
// form, JSON frames say their kind; with cumulative=1 an include glob shows the app's lines
// wherever they are in the stack.
#include <gtest/gtest.h>

#include "hand_built.hpp"
#include "liveheap/format.hpp"
#include "liveheap/json.hpp"
#include "liveheap/report.hpp"
#include "liveheap/snapshot.hpp"

namespace liveheap {
namespace {

using hand_built::kMalloc;

Frame python(const char* file, unsigned line, const char* function) {
  return Frame{function, file, line, std::string(kPythonModule), 0x8000000000000000u + line};
}
Frame interpreter(const char* function, const char* module = "/usr/bin/python3.11") {
  return Frame{function, "", 0, module, 0x500000};
}

const Frame kBytearray = python("/srv/app.py", 22, "return_bytesio");
const Frame kModule = python("/srv/app.py", 40, "<module>");
const Frame kAgg{
    "RendererAgg::RendererAgg(unsigned int, unsigned int, double)", "src/_backend_agg.cpp", 54,
    "/usr/lib/python3/dist-packages/matplotlib/backends/_backend_agg.cpython-311-x86_64-linux-gnu.so",
    0x7f0000001000};

Snapshot mixed() {
  return hand_built::snap(
      {{{kMalloc, interpreter("PyObject_Malloc"), interpreter("bytearray___init__"), kBytearray,
         interpreter("_PyEval_EvalFrameDefault.cold", "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0"),
         kModule},
        1 << 20,
        1},
       {{kMalloc, kAgg, interpreter("type_call"), python("/srv/app.py", 30, "draw"), kModule}, 480000, 1}});
}

TEST(PythonFrameReports, LineKeyNamesThePythonLineOrTheExtensionsLine) {
  const std::vector<Statistic> stats = mixed().statistics(KeyType::line);
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(format_statistic(stats[0], KeyType::line),
            "/srv/app.py:22: size=1024 KiB, count=1, average=1024 KiB");
  EXPECT_EQ(format_statistic(stats[1], KeyType::line),
            "src/_backend_agg.cpp:54: size=469 KiB, count=1, average=469 KiB");
}

TEST(PythonFrameReports, InterpreterModulesArePlumbingAndPythonFramesAreNot) {
  EXPECT_TRUE(is_plumbing(interpreter("f", "/usr/bin/python3.11")));
  EXPECT_TRUE(is_plumbing(interpreter("f", "/opt/pyenv/versions/3.11.7/bin/python3.11d")));
  EXPECT_TRUE(is_plumbing(interpreter("f", "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0")));
  EXPECT_TRUE(
      is_plumbing(interpreter("f", "/usr/lib/python3.11/lib-dynload/_json.cpython-311-x86_64-linux-gnu.so")));
  EXPECT_FALSE(is_plumbing(interpreter("f", "/usr/bin/python_server")));
  EXPECT_FALSE(is_plumbing(kAgg));
  EXPECT_FALSE(is_plumbing(kBytearray));
  EXPECT_FALSE(is_plumbing(python("/usr/lib/python3.11/copy.py", 1, "deepcopy")));
}

TEST(PythonFrameReports, TextTracebacksShowThemAsTracemallocDoes) {
  const Snapshot s = mixed();
  std::string text;
  for (const std::string& line : format_traceback(s.traces()[0].traceback, TracebackStyle{.source = false}))
    text += line + "\n";
  EXPECT_NE(text.find("  File \"/srv/app.py\", line 22, in return_bytesio\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  File \"/srv/app.py\", line 40, in <module>"), std::string::npos) << text;
}

TEST(PythonFrameReports, JsonFramesSayTheirKind) {
  const nlohmann::json frames = to_json(mixed().traces()[1].traceback);
  ASSERT_EQ(frames.size(), 5u);
  EXPECT_EQ(frames[1]["kind"], "native");
  EXPECT_EQ(frames[3]["kind"], "python");
  EXPECT_EQ(frames[4]["short_function"], "<module>");  // a Python name as it is
  EXPECT_EQ(frames[1]["short_function"], "RendererAgg::RendererAgg");
}

TEST(PythonFrameReports, CumulativeIncludeShowsTheAppsLinesWhereverTheyAreInTheStack) {
  ReportRequest request;
  request.cumulative = true;
  request.include = {"*/app.py"};
  const Report report = make_report(mixed(), request);
  std::vector<std::string> keys;
  for (const ReportLine& line : report.lines) keys.push_back(line.key + " " + std::to_string(line.size));
  // The extension's allocation counts at the app's draw line, and both at <module>.
  EXPECT_EQ(keys, (std::vector<std::string>{"/srv/app.py:40 1528576", "/srv/app.py:22 1048576",
                                            "/srv/app.py:30 480000"}));
  // Without cumulative=1 an include glob still tests the line's own frame.
  request.cumulative = false;
  ASSERT_EQ(make_report(mixed(), request).lines.size(), 1u);
  EXPECT_EQ(make_report(mixed(), request).lines[0].key, "/srv/app.py:22");
}

}  // namespace
}  // namespace liveheap
