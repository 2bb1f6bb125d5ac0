// The reader of the files liveheap reads (/proc's) through open(2) and read(2)
// (src/tracker/file_lines.hpp).
#include "file_lines.hpp"

#include <fstream>
#include <string>

#include "../support/temp_dir.hpp"
#include "gtest/gtest.h"

namespace {

using liveheap::tracker::FileLines;
using liveheap::tracker::read_file_text;

std::string write_file(const test_support::TempDir& dir, const std::string& text) {
  const std::string path = dir / "file";
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(FileLines, ReadsEveryLineWhateverItsLengthAndTheLastWithoutItsNewline) {
  test_support::TempDir dir;
  const std::string longer_than_a_buffer(10000, 'x');
  const std::string path = write_file(dir, "first\n\n" + longer_than_a_buffer + "\nlast");
  FileLines lines(path.c_str());
  std::string line;
  ASSERT_TRUE(lines.next(line));
  EXPECT_EQ(line, "first");
  ASSERT_TRUE(lines.next(line));
  EXPECT_EQ(line, "");
  ASSERT_TRUE(lines.next(line));
  EXPECT_EQ(line, longer_than_a_buffer);
  ASSERT_TRUE(lines.next(line));
  EXPECT_EQ(line, "last");
  EXPECT_FALSE(lines.next(line));
  EXPECT_FALSE(lines.next(line));
  EXPECT_EQ(liveheap::tracker::read_first_line(path.c_str()), "first");
}

TEST(FileLines, AFileThatCannotBeReadHasNoLinesAndNoText) {
  FileLines lines("/nonexistent/file");
  std::string line = "left over";
  EXPECT_FALSE(lines.next(line));
  EXPECT_EQ(line, "");
  EXPECT_EQ(read_file_text("/nonexistent/file"), "");
  EXPECT_EQ(liveheap::tracker::read_first_line("/nonexistent/file"), "");
}

TEST(FileLines, TheWholeTextUpToItsLimit) {
  test_support::TempDir dir;
  std::string text;
  for (int i = 0; i < 2000; ++i) text += std::to_string(i) + "\n";
  const std::string path = write_file(dir, text);
  EXPECT_EQ(read_file_text(path.c_str()), text);
  EXPECT_EQ(read_file_text(path.c_str(), 5000), text.substr(0, 5000));
}

}  // namespace
