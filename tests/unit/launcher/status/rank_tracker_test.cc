// Unit tests of RankTracker: progress records and process states from fakes, times chosen so the
// rates are exact.
#include "launcher/status/rank_tracker.h"

#include <chrono>
#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::launcher {
namespace {

class RankTrackerTest : public ::testing::Test {
 protected:
  RankTrackerTest()
      : tracker_(
            1, "node1", absl::Seconds(4),
            [this](const std::string& path) -> std::optional<progress::Record> {
              auto it = records_.find(path);
              if (it == records_.end()) return std::nullopt;
              return it->second;
            },
            [this](pid_t pid) { return stopped_[pid]; }) {}

  static progress::Record Rec(std::uint64_t step, std::uint64_t started, std::uint64_t done,
                              double collective_s, std::uint64_t samples) {
    progress::Record r;
    r.step = step;
    r.collectives_started = started;
    r.collectives_done = done;
    r.collective_ns = static_cast<std::uint64_t>(collective_s * 1e9);
    r.samples = samples;
    r.has_collectives = true;
    r.has_timing = true;
    return r;
  }
  RankStatus Only(absl::Time now) {
    std::vector<RankStatus> all = tracker_.Statuses(now);
    EXPECT_EQ(all.size(), 1u);
    return all.empty() ? RankStatus{} : all.front();
  }

  const absl::Time t0_ = absl::FromUnixSeconds(5000);
  std::map<std::string, progress::Record> records_;
  std::map<pid_t, bool> stopped_;
  RankTracker tracker_;
};

TEST_F(RankTrackerTest, PaceOverTheWindowAndTheLastInterval) {
  tracker_.Started(2, 0, 100, "p2", t0_);
  records_["p2"] = Rec(0, 0, 0, 0, 0);
  tracker_.Sample(t0_);
  records_["p2"] = Rec(10, 20, 20, 0.5, 640);  // 1 s: 10 steps, 0.5 s in collectives
  tracker_.Sample(t0_ + absl::Seconds(1));
  records_["p2"] = Rec(30, 60, 60, 1.0, 1920);  // next 1 s: 20 steps, 0.5 s in collectives
  tracker_.Sample(t0_ + absl::Seconds(2));
  RankStatus s = Only(t0_ + absl::Seconds(2));
  EXPECT_EQ(s.rank, 2);
  EXPECT_EQ(s.machine_rank, 1);
  EXPECT_EQ(s.host, "node1");
  EXPECT_EQ(s.pid, 100);
  EXPECT_EQ(s.state, RankState::kRunning);
  EXPECT_TRUE(s.reports_progress);
  EXPECT_EQ(s.step, 30u);
  EXPECT_DOUBLE_EQ(s.window_s, 2);
  EXPECT_DOUBLE_EQ(s.steps_per_s, 15);
  EXPECT_DOUBLE_EQ(s.samples_per_s, 960);
  EXPECT_DOUBLE_EQ(s.step_time_s, 2.0 / 30);
  EXPECT_DOUBLE_EQ(s.work_time_s, 1.0 / 30);
  EXPECT_DOUBLE_EQ(s.interval_s, 1);
  EXPECT_EQ(s.interval_steps, 20u);
  EXPECT_DOUBLE_EQ(s.interval_work_s, 0.5 / 20);
  EXPECT_DOUBLE_EQ(s.progress_age_s, 0);
}

TEST_F(RankTrackerTest, OldSamplesLeaveTheWindow) {
  tracker_.Started(0, 0, 100, "p0", t0_);
  for (int i = 0; i <= 10; ++i) {
    // 1 step/s for the first 5 s, then 4 steps/s.
    const std::uint64_t step = i <= 5 ? i : 5 + 4 * (i - 5);
    records_["p0"] = Rec(step, 0, 0, 0, 0);
    tracker_.Sample(t0_ + absl::Seconds(i));
  }
  RankStatus s = Only(t0_ + absl::Seconds(10));
  EXPECT_DOUBLE_EQ(s.window_s, 4);  // one sample a window old is the baseline
  EXPECT_DOUBLE_EQ(s.steps_per_s, 4);
}

TEST_F(RankTrackerTest, WaitingInTheSameCollectiveStoppedAndExited) {
  tracker_.Started(0, 0, 100, "p0", t0_);
  records_["p0"] = Rec(5, 11, 10, 0.1, 0);  // inside collective 11
  tracker_.Sample(t0_);
  tracker_.Sample(t0_ + absl::Milliseconds(500));
  EXPECT_EQ(Only(t0_ + absl::Milliseconds(500)).state, RankState::kRunning);  // not for long yet
  tracker_.Sample(t0_ + absl::Seconds(2));
  RankStatus s = Only(t0_ + absl::Seconds(2));
  EXPECT_EQ(s.state, RankState::kWaiting);
  EXPECT_EQ(DescribeState(s), "waiting in collective 11");
  EXPECT_DOUBLE_EQ(s.progress_age_s, 2);

  stopped_[100] = true;
  tracker_.Sample(t0_ + absl::Seconds(3));
  EXPECT_EQ(Only(t0_ + absl::Seconds(3)).state, RankState::kStopped);

  tracker_.Exited(0, 3, 0, t0_ + absl::Seconds(4));
  s = Only(t0_ + absl::Seconds(4));
  EXPECT_EQ(s.state, RankState::kExited);
  EXPECT_EQ(DescribeState(s), "exited with code 3");
  tracker_.Exited(0, 0, 9, t0_ + absl::Seconds(4));
  EXPECT_EQ(DescribeState(Only(t0_ + absl::Seconds(4))), "killed by signal 9 (SIGKILL)");
}

TEST_F(RankTrackerTest, AProgramWithoutARecordReportsNoProgress) {
  tracker_.Started(0, 0, 100, "", t0_);  // no progress file at all
  tracker_.Sample(t0_ + absl::Seconds(1));
  RankStatus s = Only(t0_ + absl::Seconds(1));
  EXPECT_EQ(s.state, RankState::kStarting);
  EXPECT_FALSE(s.reports_progress);
  tracker_.Sample(t0_ + absl::Seconds(11));
  s = Only(t0_ + absl::Seconds(11));
  EXPECT_EQ(s.state, RankState::kRunning);
  EXPECT_EQ(DescribeState(s), "no progress reported");
}

TEST_F(RankTrackerTest, TimeSeenStoppedIsOwnWorkEvenInsideACollective) {
  tracker_.Started(3, 1, 100, "p3", t0_);
  records_["p3"] = Rec(0, 0, 0, 0, 0);
  tracker_.Sample(t0_);
  // 2 s, 4 steps, 1.8 s of it waiting in collectives (it was stopped inside one): own work 0.2 s,
  // but the second sample saw it stopped, so its second second is its own: 1 s / 4 steps.
  records_["p3"] = Rec(2, 4, 4, 0.9, 0);
  tracker_.Sample(t0_ + absl::Seconds(1));
  stopped_[100] = true;
  records_["p3"] = Rec(4, 8, 7, 1.8, 0);
  tracker_.Sample(t0_ + absl::Seconds(2));
  RankStatus s = Only(t0_ + absl::Seconds(2));
  EXPECT_DOUBLE_EQ(s.work_time_s, 0.25);
  EXPECT_DOUBLE_EQ(s.interval_work_s, 0.5);  // the last interval: 1 s stopped, 2 steps
  // Not stopped: own work is the wall time less the wait.
  stopped_[100] = false;
  records_["p3"] = Rec(6, 12, 12, 2.7, 0);
  tracker_.Sample(t0_ + absl::Seconds(3));
  s = Only(t0_ + absl::Seconds(3));
  EXPECT_NEAR(s.interval_work_s, 0.05, 1e-9);  // (1 s - 0.9 s) / 2 steps
}

TEST_F(RankTrackerTest, AWaitInProgressCountsAsWaiting) {
  tracker_.Started(0, 0, 100, "p0", t0_);
  records_["p0"] = Rec(0, 0, 0, 0, 0);
  tracker_.Sample(t0_);
  // 1 s later, 2 steps, no wait ended yet, but one has been going on for ~0.8 s (on the real
  // monotonic clock, as the worker writes it): own work is at most 0.2 s, not 1 s.
  progress::Record r = Rec(2, 3, 2, 0, 0);
  r.wait_since_ns = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          (std::chrono::steady_clock::now() - std::chrono::milliseconds(800)).time_since_epoch())
          .count());
  records_["p0"] = r;
  tracker_.Sample(t0_ + absl::Seconds(1));
  const RankStatus s = Only(t0_ + absl::Seconds(1));
  EXPECT_GT(s.work_time_s, 0);
  EXPECT_LE(s.work_time_s, 0.1);  // (1 s - >= 0.8 s) / 2 steps
}

}  // namespace
}  // namespace accel::launcher
