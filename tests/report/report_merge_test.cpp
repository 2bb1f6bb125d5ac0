// pid=all's merge of report documents (merge in liveheap/report.hpp) on hand-built reports:
// the sum of the processes' own reports, line by line.
#include <gtest/gtest.h>

#include "liveheap/report.hpp"

namespace liveheap {
namespace {

ReportLine line(const std::string& key, std::int64_t size, std::int64_t count, std::int64_t size_diff,
                std::int64_t count_diff) {
  ReportLine l;
  l.key = key;
  l.frame = Frame{"work()", key, 1, "/bin/app", 0};
  l.traceback = Traceback{l.frame};
  l.size = size;
  l.count = count;
  l.size_diff = size_diff;
  l.count_diff = count_diff;
  return l;
}

Report diff_of(std::vector<ReportLine> lines, std::string against = "the baseline") {
  Report r;
  r.diff = ReportAgainst{std::move(against), 1000};
  for (const ReportLine& l : lines) {
    r.total.size += l.size;
    r.total.count += l.count;
    r.total.size_diff += l.size_diff;
    r.total.count_diff += l.count_diff;
  }
  r.keys = lines.size();
  r.lines = std::move(lines);
  r.group_processes = 2;
  return r;
}

TEST(ReportMerge, EachLineIsTheSumOfTheProcessesLinesOfItsKey) {
  const Report a = diff_of({line("a.cpp:1", 3000, 3, 3000, 3), line("b.cpp:2", 100, 1, 0, 0)});
  const Report b =
      diff_of({line("a.cpp:1", 6000, 3, 6000, 3), line("c.cpp:3", 50, 1, 50, 1)}, kAgainstNothing);
  const Report merged = merge({{41, a}, {42, b}}, {{43, 502, "unreachable"}}, 2, false);
  EXPECT_EQ(merged.total, (ReportTotal{9150, 8, 9050, 7}));
  EXPECT_EQ(merged.keys, 3u);
  ASSERT_EQ(merged.lines.size(), 2u);  // the limit: the biggest growth first
  EXPECT_EQ(merged.lines[0].key, "a.cpp:1");
  EXPECT_EQ(merged.lines[0].size_diff, 9000);
  EXPECT_EQ(merged.lines[0].count, 6);
  EXPECT_EQ(merged.lines[0].average, 1500.0);
  EXPECT_EQ(merged.lines[1].key, "c.cpp:3");
  EXPECT_EQ(merged.pids, (std::vector<long>{41, 42}));
  EXPECT_EQ(merged.failed, (std::vector<ReportFailure>{{43, 502, "unreachable"}}));
  ASSERT_EQ(merged.processes.size(), 2u);
  EXPECT_EQ(merged.processes[0], (Report::Process{41, a.total, false}));
  EXPECT_EQ(merged.processes[1], (Report::Process{42, b.total, true}));  // it had no baseline
  EXPECT_EQ(merged.diff->against, "the baseline");
  EXPECT_FALSE(merged.group_processes.has_value());  // the merge is the group
}

TEST(ReportMerge, WholeStacksAreOneLineWhenTheirFramesAreTheSameWhateverTheirAddresses) {
  Report a = diff_of({line("x", 10, 1, 10, 1)});
  Report b = diff_of({line("x", 20, 1, 20, 1)});
  a.request.key = b.request.key = KeyType::traceback;
  a.lines[0].traceback = Traceback{Frame{"work()", "x.cpp", 1, "/bin/app", 0x1000}};
  b.lines[0].traceback = Traceback{Frame{"work()", "x.cpp", 1, "/bin/app", 0x2000}};
  const Report merged = merge({{1, a}, {2, b}}, {}, 10, false);
  ASSERT_EQ(merged.lines.size(), 1u);
  EXPECT_EQ(merged.lines[0].size, 30);
  b.lines[0].traceback = Traceback{Frame{"work()", "x.cpp", 2, "/bin/app", 0x2000}};
  EXPECT_EQ(merge({{1, a}, {2, b}}, {}, 10, false).lines.size(), 2u);
}

}  // namespace
}  // namespace liveheap
