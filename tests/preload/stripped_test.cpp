// A stripped program installed under /usr/lib (PostgreSQL's postmaster is one) has frames
// that are module+offset names in a system path, as a system library's are: its stacks must
// still show the program's own frames, not one "… N frames in postgres, libc.so.6 …" line.
// The program is run from /usr/libexec through a bind mount in a mount namespace of its own
// (unshare -rm), so nothing outside the test changes.
#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "../http/child_process.hpp"
#include "../http/client.hpp"
#include "../support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;

TEST(PreloadStripped, AStrippedProgramUnderUsrLibShowsItsOwnFrames) {
  if (std::system("/usr/bin/unshare -rm true >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no user and mount namespaces here (unshare -rm): cannot run from /usr/libexec";
  test_support::TempDir dir;
  fs::copy_file(LIVEHEAP_STRIPPED_KEEPER_PATH, dir.path() + "/stripped_keeper");
  const std::uint16_t port = http_test::free_port();
  // The preload library only for the program itself, not for unshare, sh or mount.
  const std::string script =
      "mount --bind \"$1\" /usr/libexec && exec env LD_PRELOAD=\"$2\" LIVEHEAP_ADDR=\"$3\" "
      "LIVEHEAP_MODE=exact /usr/libexec/stripped_keeper";
  http_test::ChildProcess program({"/usr/bin/unshare", "-rm", "sh", "-c", script, "sh", dir.path(),
                                   LIVEHEAP_PRELOAD_PATH, "127.0.0.1:" + std::to_string(port)},
                                  {});
  ASSERT_EQ(program.read_line(20000).value_or("EOF"), "READY");

  const http_test::Reply stacks = http_test::get(port, "/debug/memory/tracebacks?limit=1");
  ASSERT_EQ(stacks.status, 200) << stacks.body;
  EXPECT_NE(stacks.body.find("size=4096 KiB, count=4"), std::string::npos) << stacks.body;
  // keep(), fill() and main() at least: each a line of its own, named by module and offset.
  const std::string own = "  File \"/usr/libexec/stripped_keeper\", in stripped_keeper+0x";
  std::size_t shown = 0;
  for (std::size_t at = stacks.body.find(own); at != std::string::npos; at = stacks.body.find(own, at + 1))
    ++shown;
  EXPECT_GE(shown, 3u) << stacks.body;
  EXPECT_EQ(program.wait(10000), 0);
}

}  // namespace
