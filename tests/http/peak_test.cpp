// GET /peak: per line, what was live when the traced heap reached its high-water mark, with
// /top's parameters and shape; POST /reset-peak starts a new record from the heap now.
// Not reformatted: an allocation and the __LINE__ that names it share a line or a fixed offset.
// clang-format off
#include <chrono>
#include <cstdlib>
#include <string>

#include "peak.hpp"
#include "server_fixture.hpp"

namespace http_test {
namespace {

using PeakTest = ServerTest;

// The blocks escape here, so the compiler cannot elide a malloc that is only freed.
void* volatile g_escape = nullptr;

constexpr long kA = 8 << 20;
constexpr long kB = 2 << 20;

// The JSON stat of this file at `line` in `report`, or null.
nlohmann::json at_line(const nlohmann::json& report, int line) {
  for (const auto& stat : report["stats"])
    if (stat["file"].get<std::string>().ends_with("peak_test.cpp") && stat["line"] == line) return stat;
  return nullptr;
}

nlohmann::json report(std::uint16_t port, const std::string& route) {
  const Reply reply = get(port, "/debug/memory/" + route + "?format=json&limit=10000&include=*peak_test.cpp");
  EXPECT_EQ(reply.status, 200) << reply.body;
  return reply.json();
}

// Until /peak shows `bytes` at `line`.
testing::AssertionResult wait_for_peak(std::uint16_t port, int line, long bytes) {
  return wait_until(kPatience, [&] {
    const nlohmann::json stat = at_line(report(port, "peak"), line);
    return !stat.is_null() && stat["size"] == bytes;
  }) << ": /peak never showed " << bytes << " B at line " << line;
}

// Until the peak thread has looked since the last time the allocation path woke it (the
// server is in this process): what it would record, it has.
testing::AssertionResult wait_for_recorder() {
  return wait_until(kPatience, [] { return liveheap::peak::caught_up(); }, std::chrono::milliseconds(1))
         << ": the peak thread never looked after its last wake-up";
}

TEST_F(PeakTest, ShowsTheLineThatMadeThePeakAfterItsBlockIsGone) {
  // The record moves only when the heap passes it by 1/32: start from an empty one.
  ASSERT_EQ(post(port(), "/debug/memory/clear").status, 200);
  void* a = std::malloc(kA); const int line_x = __LINE__;
  g_escape = a;
  ASSERT_TRUE(wait_for_peak(port(), line_x, kA));
  std::free(a);
  void* b = std::malloc(kB); const int line_y = __LINE__;
  g_escape = b;
  ASSERT_TRUE(wait_for_recorder());  // the record stays

  const nlohmann::json peak = report(port(), "peak");
  ASSERT_FALSE(at_line(peak, line_x).is_null()) << peak.dump();
  EXPECT_EQ(at_line(peak, line_x)["size"], kA);
  EXPECT_EQ(at_line(peak, line_x)["count"], 1);
  EXPECT_TRUE(at_line(peak, line_y).is_null()) << peak.dump();
  EXPECT_EQ(peak["key"], "line");
  EXPECT_FALSE(peak["total"].contains("size_diff"));

  const nlohmann::json top = report(port(), "top");
  EXPECT_TRUE(at_line(top, line_x).is_null()) << top.dump();
  ASSERT_FALSE(at_line(top, line_y).is_null()) << top.dump();
  EXPECT_EQ(at_line(top, line_y)["size"], kB);
  EXPECT_EQ(at_line(top, line_y)["count"], 1);

  const Reply text = get(port(), "/debug/memory/peak?limit=1&include=*peak_test.cpp");
  EXPECT_TRUE(text.body.starts_with("Top 1 of ")) << text.body;
  EXPECT_NE(text.body.find(" lines: size=8192 KiB"), std::string::npos) << text.body;
  EXPECT_TRUE(text.body.ends_with("peak_test.cpp:" + std::to_string(line_x) +
                                  ": size=8192 KiB, count=1, average=8192 KiB\n"))
      << text.body;

  // key=traceback in text: each line followed by its whole stack, as on /top.
  const std::string frame_x = "peak_test.cpp\", line " + std::to_string(line_x) + ", in ";
  const Reply stacks = get(port(), "/debug/memory/peak?key=traceback&limit=1&include=*peak_test.cpp");
  EXPECT_NE(stacks.body.find(frame_x), std::string::npos) << stacks.body;
  EXPECT_NE(stacks.body.find("  File \""), stacks.body.rfind("  File \"")) << "one frame only:\n" << stacks.body;
  const Reply top_stacks = get(port(), "/debug/memory/top?key=traceback&limit=1&include=*peak_test.cpp");
  EXPECT_NE(top_stacks.body.find("peak_test.cpp\", line " + std::to_string(line_y) + ", in "),
            std::string::npos) << top_stacks.body;

  // traceback=1 with key=line: each statistic with its whole stack, not only the key's frame.
  const Reply whole = get(port(), "/debug/memory/top?traceback=1&format=json&limit=10000&include=*peak_test.cpp");
  const nlohmann::json y = at_line(whole.json(), line_y);
  ASSERT_FALSE(y.is_null()) << whole.body;
  ASSERT_GT(y["traceback"].size(), 1u) << y.dump();
  bool has_main = false;
  for (const auto& frame : y["traceback"]) has_main = has_main || frame["function"] == "main";
  EXPECT_TRUE(has_main) << "the stack stops short of main: " << y.dump();

  ASSERT_EQ(post(port(), "/debug/memory/reset-peak").status, 200);  // the record is the heap now
  const nlohmann::json reset = report(port(), "peak");
  EXPECT_TRUE(at_line(reset, line_x).is_null()) << reset.dump();
  EXPECT_EQ(at_line(reset, line_y)["size"], kB);
  std::free(b);
}

TEST_F(PeakTest, TakesTopsParametersOnly) {
  EXPECT_EQ(get(port(), "/debug/memory/peak?seconds=1").status, 400);
  EXPECT_EQ(get(port(), "/debug/memory/peak?key=nope").status, 400);
  EXPECT_EQ(get(port(), "/debug/memory/peak?key=traceback&format=json").status, 200);
  EXPECT_EQ(get(port(), "/debug/memory/peak?format=folded").status, 200);
  EXPECT_EQ(post(port(), "/debug/memory/peak").status, 405);
}

}  // namespace
}  // namespace http_test
