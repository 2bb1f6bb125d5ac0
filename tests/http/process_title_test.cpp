// A program that sets its process title keeps its module name: reports name the main
// program by its executable, not by the title written over argv[0].
#include <filesystem>
#include <string>

#include "../support/temp_dir.hpp"
#include "child_process.hpp"
#include "client.hpp"
#include "gtest/gtest.h"

namespace http_test {
namespace {

namespace fs = std::filesystem;

// The kept blocks' frame in /top's JSON: its module names the executable.
TEST(ProcessTitle, TheMainProgramIsNamedByItsExecutableNotItsTitle) {
  test_support::TempDir runtime;
  // A long argument gives the title room, as a real command line does.
  const std::string padding(64, 'x');
  const std::uint16_t port = free_port();
  ChildProcess program({LIVEHEAP_TITLE_PROGRAM, padding},
                       {std::string("LD_PRELOAD=") + LIVEHEAP_PRELOAD_LIBRARY,
                        "LIVEHEAP_ADDR=127.0.0.1:" + std::to_string(port), "LIVEHEAP_MODE=exact",
                        "XDG_RUNTIME_DIR=" + runtime.path()});
  ASSERT_EQ(program.read_line(20000).value_or("EOF"), "TITLED");
  program.write_line("go");
  ASSERT_EQ(program.read_line(20000).value_or("EOF"), "KEPT");
  const std::string exe = fs::canonical(LIVEHEAP_TITLE_PROGRAM).string();
  nlohmann::json top;
  ASSERT_TRUE(wait_until(kPatience, [&] {
    const Reply reply = get(port, "/debug/memory/top?format=json&key=traceback&limit=1000");
    if (reply.status != 200) return false;
    top = reply.json();
    return true;
  }));
  bool found = false;
  for (const auto& stat : top["stats"]) {
    for (const auto& frame : stat["traceback"]) {
      const std::string function = frame.value("function", "");
      if (function.find("keep_known") == std::string::npos) continue;
      found = true;
      EXPECT_EQ(frame.value("module", ""), exe) << frame.dump();
    }
  }
  EXPECT_TRUE(found) << top.dump(1);
  // And no frame anywhere is named after the title.
  EXPECT_EQ(top.dump().find("127.0.0.1(52284)"), std::string::npos) << top.dump(1);
}

}  // namespace
}  // namespace http_test
