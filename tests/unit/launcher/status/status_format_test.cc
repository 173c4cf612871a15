// Unit tests of the status line, table and JSON.
#include "launcher/status/status_format.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::launcher {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

JobView Job() {
  JobView job;
  job.run_id = "job-x";
  job.attempt = 1;
  job.num_machines = 2;
  job.world_size = 2;
  for (int r = 0; r < 2; ++r) {
    RankStatus s;
    s.rank = r;
    s.machine_rank = r;
    s.host = r == 0 ? "alpha" : "beta";
    s.pid = 1000 + r;
    s.state = RankState::kRunning;
    s.reports_progress = true;
    s.step = 50 - r;
    s.samples = 3200;
    s.window_s = 10;
    s.steps_per_s = 5;
    s.samples_per_s = 320;
    s.work_time_s = r == 0 ? 0.1 : 0.25;
    s.progress_age_s = r == 0 ? 0.2 : 0.7;
    job.ranks.push_back(s);
  }
  return job;
}

TEST(StatusFormatTest, LineSaysStepRateSlowestRankAndLastAdvance) {
  JobView job = Job();
  const std::string line = FormatStatusLine(Summarize(job.ranks), {});
  EXPECT_EQ(line,
            "step 49 | 640 samples/s | slowest rank 1 (machine 1): 150% more work per step, 1 "
            "steps behind | every rank advanced within 0.7 s");
}

TEST(StatusFormatTest, LineWithoutProgressSaysSo) {
  JobView job = Job();
  for (RankStatus& r : job.ranks) r.reports_progress = false;
  EXPECT_EQ(FormatStatusLine(Summarize(job.ranks), {}), "2 ranks, no progress reported");
}

TEST(StatusFormatTest, TableHasEveryRankAndTheStraggler) {
  JobView job = Job();
  job.ranks[1].state = RankState::kWaiting;
  job.ranks[1].collective = 7;
  std::vector<Straggler> slow = FindStragglers(job.ranks, 0.25, 5);
  const std::string table = FormatStatusTable(job, slow);
  EXPECT_THAT(table, HasSubstr("run job-x, generation 1, 2 machines, 2 ranks"));
  EXPECT_THAT(table, HasSubstr("alpha"));
  EXPECT_THAT(table, HasSubstr("1001"));
  EXPECT_THAT(table, HasSubstr("waiting in collective 7"));
  EXPECT_THAT(table, HasSubstr("straggler: rank 1"));
  EXPECT_THAT(table, HasSubstr("rank 1 (machine 1, host beta) is a straggler"));
}

// A straggler caught stopped (a duty cycle of SIGSTOP, as tests/netns/launcher/status_test.sh
// slows its rank, or a debugger) is both: STATE says stopped, the line still names it.
TEST(StatusFormatTest, AStoppedStragglerIsShownStoppedAndNamedAStraggler) {
  JobView job = Job();
  job.ranks[1].state = RankState::kStopped;
  std::vector<Straggler> slow = FindStragglers(job.ranks, 0.25, 5);
  ASSERT_EQ(slow.size(), 1u);
  const std::string table = FormatStatusTable(job, slow);
  EXPECT_THAT(table, HasSubstr("s  stopped\n"));
  EXPECT_THAT(table, HasSubstr("| 1 stopped | straggler: rank 1\n"));
  EXPECT_THAT(table, HasSubstr("rank 1 (machine 1, host beta) is a straggler"));
}

TEST(StatusFormatTest, JsonListsRanksAndStragglers) {
  JobView job = Job();
  job.ranks[0].state = RankState::kExited;
  job.ranks[0].exit_code = 2;
  const std::string json = FormatStatusJson(job, FindStragglers(job.ranks, 0.25, 5));
  EXPECT_THAT(json, HasSubstr("\"run_id\": \"job-x\""));
  EXPECT_THAT(json, HasSubstr("\"rank\": 0, \"machine\": 0, \"host\": \"alpha\", \"local_rank\": "
                              "0, \"pid\": 1000, \"state\": \"exited\""));
  EXPECT_THAT(json, HasSubstr("\"exit_code\": 2"));
  EXPECT_THAT(json, HasSubstr("\"step\": 49"));
  EXPECT_THAT(json, Not(HasSubstr("\"stragglers\": [{")));  // one live rank: no median
}

}  // namespace
}  // namespace accel::launcher
