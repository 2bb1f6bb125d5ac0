// The Python frame table: thousands of frames, interned from two threads at once while its
// index grows, each get one id that names them, found again on every later sight.
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "python_code.hpp"
#include "python_frame_table.hpp"

namespace liveheap::engine {
namespace {

// One code object's worth, held in this process: its name, and a location table of one
// entry (3.11's "no column" form, one code unit, line delta 0) so that its only
// instruction is on `first_line`.
struct FakeCode {
  std::string file, name;
  unsigned char linetable[2] = {0x80 | (13 << 3), 0x00};
  PythonCode code;

  FakeCode(int k, std::uintptr_t address)
      : file("/srv/app/module_" + std::to_string(k % 17) + ".py"), name("handler_" + std::to_string(k)) {
    code.address = address;
    code.file = {reinterpret_cast<const unsigned char*>(file.data()), static_cast<std::uint32_t>(file.size()),
                 1, -1};
    code.qualname = {reinterpret_cast<const unsigned char*>(name.data()),
                     static_cast<std::uint32_t>(name.size()), 1, -1};
    code.file_object = address + 8;
    code.qualname_object = address + 16;
    code.linetable_object = address + 24;
    code.linetable = linetable;
    code.linetable_size = sizeof linetable;
    code.first_line = 1000 + k;
    code.units = 1;
  }
};

TEST(PythonFrameTable, ThousandsOfFramesFromTwoThreadsEachGetOneIdThatNamesThem) {
  constexpr int kFrames = 6000;  // past the first index's 2048 and the next two growths
  // Two copies of every code object, at other addresses: the cache never answers for the
  // other thread's, so both intern every text themselves.
  std::vector<FakeCode> mine, theirs;
  mine.reserve(kFrames);
  theirs.reserve(kFrames);
  for (int k = 0; k < kFrames; ++k) {
    mine.emplace_back(k, 0x10000000 + 64 * static_cast<std::uintptr_t>(k));
    theirs.emplace_back(k, 0x20000000 + 64 * static_cast<std::uintptr_t>(k));
  }
  const std::uint32_t before = python_frame_count();
  std::vector<std::uintptr_t> mine_ids(kFrames), theirs_ids(kFrames);
  std::thread other([&] {
    for (int k = kFrames - 1; k >= 0; --k) theirs_ids[k] = intern_python_frame(theirs[k].code, 0);
  });
  for (int k = 0; k < kFrames; ++k) mine_ids[k] = intern_python_frame(mine[k].code, 0);
  other.join();
  EXPECT_EQ(python_frame_count() - before, static_cast<std::uint32_t>(kFrames));
  for (int k = 0; k < kFrames; ++k) {
    ASSERT_NE(mine_ids[k], 0u) << k;
    ASSERT_EQ(mine_ids[k], theirs_ids[k]) << k;
    PythonFrameText text;
    ASSERT_TRUE(python_frame_text(mine_ids[k], &text)) << k;
    EXPECT_EQ(std::string(text.file), mine[k].file);
    EXPECT_EQ(std::string(text.function), mine[k].name);
    EXPECT_EQ(text.line, static_cast<std::uint32_t>(1000 + k));
  }
  // Seen again, from code objects the cache does not know: the same ids, no new frame.
  for (int k = 0; k < kFrames; ++k) {
    FakeCode again(k, 0x30000000 + 64 * static_cast<std::uintptr_t>(k));
    ASSERT_EQ(intern_python_frame(again.code, 0), mine_ids[k]) << k;
  }
  EXPECT_EQ(python_frame_count() - before, static_cast<std::uint32_t>(kFrames));
}

}  // namespace
}  // namespace liveheap::engine
