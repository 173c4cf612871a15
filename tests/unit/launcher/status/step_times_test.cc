// Unit tests of the step-time CSV and the heat map built from it.
#include "launcher/status/step_times.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/files.h"

namespace accel::launcher {
namespace {

using ::testing::HasSubstr;

std::vector<RankStatus> Ranks(double slow_work) {
  std::vector<RankStatus> ranks;
  for (int r = 0; r < 3; ++r) {
    RankStatus s;
    s.rank = r;
    s.machine_rank = r / 2;
    s.reports_progress = true;
    s.step = 10;
    s.interval_s = 1;
    s.interval_steps = 10;
    s.interval_work_s = r == 2 ? slow_work : 0.01;
    ranks.push_back(s);
  }
  return ranks;
}

TEST(StepTimesTest, WrittenRowsParseBack) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/step_times.csv";
  {
    auto writer = StepTimesWriter::Open(path);
    ASSERT_TRUE(writer.ok()) << writer.status();
    ASSERT_TRUE(writer->Append(1.0, Ranks(0.05)).ok());
  }
  auto writer = StepTimesWriter::Open(path);  // appends, no second header
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE(writer->Append(2.0, Ranks(0.07)).ok());
  const std::string text = testing::ReadFile(path);
  EXPECT_EQ(text.rfind("time_s,rank,machine,step,steps,work_s,interval_s\n", 0), 0u);
  auto rows = ParseStepTimes(text);
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 6u);
  EXPECT_EQ((*rows)[5].rank, 2);
  EXPECT_EQ((*rows)[5].machine_rank, 1);
  EXPECT_DOUBLE_EQ((*rows)[5].time_s, 2.0);
  EXPECT_DOUBLE_EQ((*rows)[5].work_s, 0.07);
}

TEST(StepTimesTest, BadLinesAreNamed) {
  auto rows = ParseStepTimes("time_s,rank,machine,step,steps,work_s,interval_s\n1,2,3\n");
  ASSERT_FALSE(rows.ok());
  EXPECT_THAT(rows.status().message(), HasSubstr("line 2"));
}

TEST(StepTimesTest, HeatMapFillsGapsAndFindsTheHotRank) {
  std::vector<StepTimeRow> rows;
  for (int t = 0; t < 6; ++t) {
    for (int r = 0; r < 3; ++r) {
      if (r == 1 && t == 3) continue;  // a gap: the previous value carries on
      rows.push_back(StepTimeRow{t + 0.5, r, 0, 0, 10, r == 2 ? 0.09 : 0.01 * (r + 1), 1.0});
    }
  }
  HeatMap map = MakeHeatMap(rows);
  ASSERT_EQ(map.ranks.size(), 3u);
  EXPECT_DOUBLE_EQ(map.bin_s, 1.0);
  ASSERT_EQ(map.cells[1].size(), 6u);
  EXPECT_DOUBLE_EQ(map.cells[1][3], 0.02);
  EXPECT_EQ(HottestRank(map), 2);
  const std::string data = HeatMapData(map);
  EXPECT_THAT(data, HasSubstr("0.000 0 0.010000\n0.000 1 0.020000\n0.000 2 0.090000\n\n"));
  const std::string script = HeatMapScript(map, "/d/it's.dat", "/d/out.png", "run x");
  EXPECT_THAT(script, HasSubstr("set output '/d/out.png'"));
  EXPECT_THAT(script, HasSubstr("plot '/d/it''s.dat' using 1:2:3 with image"));
}

// Start-up (5 s before any rank reports work) is not typical work: rank 2, slow for 3 of its 5
// measured seconds, is the hot row; counted from time 0, rank 1's median was higher.
TEST(StepTimesTest, TheHotRankIsJudgedFromItsFirstWork) {
  std::vector<StepTimeRow> rows;
  for (int t = 5; t < 10; ++t) {
    for (int r = 0; r < 3; ++r) {
      const double work = r == 2 && t >= 7 ? 0.09 : r == 1 ? 0.02 : 0.01;
      rows.push_back(StepTimeRow{t + 0.5, r, 0, 0, 10, work, 1.0});
    }
  }
  HeatMap map = MakeHeatMap(rows);
  ASSERT_EQ(map.cells[2].size(), 10u);
  EXPECT_DOUBLE_EQ(map.cells[2][0], 0);
  EXPECT_EQ(HottestRank(map), 2);
}

}  // namespace
}  // namespace accel::launcher
