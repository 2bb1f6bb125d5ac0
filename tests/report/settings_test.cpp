// The settings module (liveheap/settings.hpp): one parser and one message per kind of
// setting, whoever sets it (environment, HTTP, Options, liveheap-watch).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "liveheap/settings.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace settings {
namespace {

TEST(Settings, WholeNumbersAreDigitsWithinTheirRange) {
  for (const Range range : {kFrames, kSampleInterval, kHttpSampleInterval, kHistoryInterval, kLimit, kSeconds,
                            kPid, kMetricsCallsites}) {
    const std::string min = std::to_string(range.min);
    const std::string max = std::to_string(range.max);
    EXPECT_EQ(parse_whole(min, range), range.min);
    EXPECT_EQ(parse_whole(max, range), range.max);
    EXPECT_EQ(parse_whole(std::to_string(range.max + 1), range), std::nullopt) << max;
    if (range.min > 0) {
      EXPECT_EQ(parse_whole(std::to_string(range.min - 1), range), std::nullopt) << min;
    }
    for (const std::string& bad : std::vector<std::string>{
             "", "-1", "+" + max, " " + max, max + " ", max + "x", "0x10", "1.0", "99999999999999999999999"})
      EXPECT_EQ(parse_whole(bad, range), std::nullopt) << "'" << bad << "'";
  }
  EXPECT_EQ(kFrames.max, 128u);
  EXPECT_EQ(kSampleInterval.max, std::uint64_t{1} << 40);
  EXPECT_EQ(kHttpSampleInterval.min, 4096u);
  EXPECT_EQ(kHttpSampleInterval.max, kSampleInterval.max);
}

TEST(Settings, OneMessagePerKindOfMistake) {
  EXPECT_EQ(not_a_whole_number("frames", "'129'", kFrames),
            "frames='129' is not a whole number from 1 to 128");
  try {
    whole("LIVEHEAP_FRAMES", "12abc", kFrames);
    ADD_FAILURE() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "LIVEHEAP_FRAMES='12abc' is not a whole number from 1 to 128");
  }
  EXPECT_EQ(whole("LIVEHEAP_FRAMES", "64", kFrames), 64u);
  EXPECT_EQ(out_of_range("max_frames", 0, kFrames), "max_frames must be 1..128, got 0");
  EXPECT_EQ(out_of_range("sample_interval", 0, kSampleInterval, " bytes", "2^40"),
            "sample_interval must be 1..2^40 bytes, got 0");
}

TEST(Settings, FlagsModesAndPlumbing) {
  EXPECT_EQ(parse_flag("0"), false);
  EXPECT_EQ(parse_flag("1"), true);
  for (const char* bad : {"", "true", "01", "2"}) EXPECT_EQ(parse_flag(bad), std::nullopt) << bad;
  EXPECT_EQ(parse_start_mode("exact"), Mode::exact);
  EXPECT_EQ(parse_start_mode("sampled"), Mode::sampled);
  EXPECT_EQ(parse_start_mode("off"), std::nullopt);  // stopping is not a way to start
  EXPECT_EQ(parse_plumbing(" function:arena_* , */obmalloc.c"),
            (std::vector<std::string>{"function:arena_*", "*/obmalloc.c"}));
  for (const char* bad : {"", "a,,b", "function:", "function:[oops"})
    EXPECT_THROW(parse_plumbing(bad), std::invalid_argument) << bad;
}

}  // namespace
}  // namespace settings
LIVEHEAP_NAMESPACE_END
