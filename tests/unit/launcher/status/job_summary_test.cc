// Unit tests of the job summary and straggler detection, with rank statuses written out by hand.
#include "launcher/status/job_summary.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::launcher {
namespace {

using ::testing::HasSubstr;

// Four ranks on two machines, each with `work` seconds of own work per step over a 10 s window.
std::vector<RankStatus> Job(std::vector<double> work, std::vector<std::uint64_t> steps = {}) {
  std::vector<RankStatus> ranks;
  for (int r = 0; r < static_cast<int>(work.size()); ++r) {
    RankStatus s;
    s.rank = r;
    s.machine_rank = r / 2;
    s.host = r < 2 ? "a" : "b";
    s.state = RankState::kRunning;
    s.reports_progress = true;
    s.step = steps.empty() ? 100 : steps[r];
    s.samples = 6400;
    s.window_s = 10;
    s.steps_per_s = 5;
    s.samples_per_s = 320;
    s.step_time_s = 0.2;
    s.work_time_s = work[r];
    s.progress_age_s = 0.1 * r;
    ranks.push_back(s);
  }
  return ranks;
}

TEST(JobSummaryTest, SlowestRankAndHowFarBehind) {
  JobSummary s = Summarize(Job({0.1, 0.1, 0.1, 0.16}, {100, 101, 100, 98}));
  EXPECT_EQ(s.ranks, 4);
  EXPECT_EQ(s.reporting, 4);
  EXPECT_EQ(s.step, 100u);
  EXPECT_DOUBLE_EQ(s.samples_per_s, 1280);
  ASSERT_TRUE(s.slowest_rank.has_value());
  EXPECT_EQ(*s.slowest_rank, 3);
  EXPECT_EQ(s.slowest_machine, 1);
  EXPECT_NEAR(s.slowest_slower, 0.6, 1e-9);
  EXPECT_EQ(s.slowest_behind, 3u);
  EXPECT_DOUBLE_EQ(s.oldest_progress_age_s, 0.3);
}

TEST(JobSummaryTest, RanksWithoutProgressAreCountedNotHung) {
  std::vector<RankStatus> ranks = Job({0.1, 0.1});
  for (RankStatus& r : ranks) {
    r.reports_progress = false;
    r.work_time_s = 0;
  }
  JobSummary s = Summarize(ranks);
  EXPECT_EQ(s.reporting, 0);
  EXPECT_EQ(s.no_progress, 2);
  EXPECT_FALSE(s.slowest_rank.has_value());
  EXPECT_TRUE(FindStragglers(ranks, 0.25, 0).empty());
}

TEST(JobSummaryTest, AStragglerIsARankWellAboveTheMedian) {
  std::vector<Straggler> found = FindStragglers(Job({0.1, 0.1, 0.1, 0.2}), 0.25, 5);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].rank, 3);
  EXPECT_EQ(found[0].machine_rank, 1);
  EXPECT_NEAR(found[0].slower, 1.0, 1e-9);
  EXPECT_THAT(DescribeStraggler(found[0]),
              HasSubstr("rank 3 (machine 1, host b) is a straggler: 0.2000 s of own work per "
                        "step, 100% more than the median rank's 0.1000 s over the last 10.0 s"));
  EXPECT_TRUE(FindStragglers(Job({0.1, 0.1, 0.1, 0.12}), 0.25, 5).empty());  // within 25 %
  EXPECT_TRUE(FindStragglers(Job({0.1, 0.1, 0.1, 0.2}), 0.25, 11).empty());  // window too short
}

TEST(JobSummaryTest, AMachineWhoseEveryRankIsSlowIsNamedInstead) {
  std::vector<Straggler> found = FindStragglers(Job({0.1, 0.1, 0.3, 0.2}), 0.25, 5);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].rank, -1);
  EXPECT_EQ(found[0].machine_rank, 1);
  EXPECT_DOUBLE_EQ(found[0].work_time_s, 0.3);
  EXPECT_THAT(DescribeStraggler(found[0]), HasSubstr("machine 1 (host b) is a straggler"));
}

TEST(JobSummaryTest, StragglerLogReportsOnceUntilRecovered) {
  StragglerLog log(0.25);
  EXPECT_EQ(log.Update(Job({0.1, 0.1, 0.1, 0.2}), 5).size(), 1u);
  EXPECT_TRUE(log.Update(Job({0.1, 0.1, 0.1, 0.2}), 5).empty());  // already said
  EXPECT_EQ(log.current().size(), 1u);
  EXPECT_TRUE(log.Update(Job({0.1, 0.1, 0.1, 0.115}), 5).empty());  // between: no news
  EXPECT_TRUE(log.Update(Job({0.1, 0.1, 0.1, 0.2}), 5).empty());
  EXPECT_TRUE(log.Update(Job({0.1, 0.1, 0.1, 0.1}), 5).empty());   // recovered
  EXPECT_EQ(log.Update(Job({0.1, 0.1, 0.1, 0.2}), 5).size(), 1u);  // a new episode
}

TEST(JobSummaryTest, SubMillisecondDifferencesAreNotStragglers) {
  // 125 % more own work, but half a millisecond: scheduling noise, not a straggler.
  EXPECT_TRUE(FindStragglers(Job({0.0004, 0.0004, 0.0004, 0.0009}), 0.25, 0).empty());
  // The same ratio a millisecond and more above the median is one.
  const std::vector<Straggler> found = FindStragglers(Job({0.004, 0.004, 0.004, 0.009}), 0.25, 0);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].rank, 3);
}

}  // namespace
}  // namespace accel::launcher
