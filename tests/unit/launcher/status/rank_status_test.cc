// Unit tests of the rank-status encoding machines publish through the store.
#include "launcher/status/rank_status.h"

#include "gtest/gtest.h"

namespace accel::launcher {
namespace {

TEST(RankStatusTest, MachineStatusRoundTrips) {
  MachineStatus m;
  m.machine_rank = 1;
  m.attempt = 2;
  m.seq = 77;
  RankStatus r;
  r.rank = 3;
  r.machine_rank = 1;
  r.local_rank = 1;
  r.host = "host\twith tab";
  r.pid = 4242;
  r.state = RankState::kWaiting;
  r.reports_progress = true;
  r.step = 120;
  r.samples = 7680;
  r.collective = 360;
  r.window_s = 9.5;
  r.steps_per_s = 12.25;
  r.samples_per_s = 784;
  r.step_time_s = 0.08;
  r.work_time_s = 0.03125;
  r.interval_s = 1;
  r.interval_work_s = 0.0625;
  r.interval_steps = 12;
  r.progress_age_s = 1.5;
  m.ranks.push_back(r);
  r.rank = 2;
  r.state = RankState::kExited;
  r.exit_code = 4;
  m.ranks.push_back(r);

  std::optional<MachineStatus> back = DecodeMachineStatus(EncodeMachineStatus(m));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->machine_rank, 1);
  EXPECT_EQ(back->attempt, 2);
  EXPECT_EQ(back->seq, 77u);
  ASSERT_EQ(back->ranks.size(), 2u);
  const RankStatus& b = back->ranks[0];
  EXPECT_EQ(b.rank, 3);
  EXPECT_EQ(b.local_rank, 1);
  EXPECT_EQ(b.host, "host with tab");
  EXPECT_EQ(b.pid, 4242);
  EXPECT_EQ(b.state, RankState::kWaiting);
  EXPECT_EQ(b.step, 120u);
  EXPECT_EQ(b.samples, 7680u);
  EXPECT_EQ(b.collective, 360u);
  EXPECT_DOUBLE_EQ(b.steps_per_s, 12.25);
  EXPECT_DOUBLE_EQ(b.work_time_s, 0.03125);
  EXPECT_DOUBLE_EQ(b.interval_work_s, 0.0625);
  EXPECT_EQ(b.interval_steps, 12u);
  EXPECT_DOUBLE_EQ(b.progress_age_s, 1.5);
  EXPECT_EQ(DescribeState(back->ranks[1]), "exited with code 4");
}

TEST(RankStatusTest, GarbageIsRejected) {
  EXPECT_FALSE(DecodeMachineStatus("").has_value());
  EXPECT_FALSE(DecodeMachineStatus("something else\t1\t2\t3\n").has_value());
  EXPECT_FALSE(DecodeMachineStatus("accel-status 1\t0\t0\t1\n1\t2\t3\n").has_value());
}

}  // namespace
}  // namespace accel::launcher
