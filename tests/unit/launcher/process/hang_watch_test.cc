// Unit tests of one attempt's hang watch: when it fires, and how machines settle on one verdict
// (a fake JobProgress stands for the other machines and the store).
#include "launcher/process/hang_watch.h"

#include <map>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::launcher {
namespace {

using ::testing::HasSubstr;

class FakeJobProgress : public JobProgress {
 public:
  void Publish(std::vector<RankSnapshot> ranks, absl::Duration, absl::Time) override {
    published = std::move(ranks);
  }
  absl::Duration JobIdleFor(absl::Time) const override { return job_idle; }
  std::vector<RankSnapshot> OtherRanks(absl::Time) const override { return others; }
  void Propose(const HangVerdict& verdict) override { proposed = verdict; }
  std::optional<HangVerdict> Settled() const override { return settled; }

  absl::Duration job_idle = absl::InfiniteDuration();
  std::vector<RankSnapshot> others;
  std::vector<RankSnapshot> published;
  std::optional<HangVerdict> proposed;
  std::optional<HangVerdict> settled;
};

HangWatchOptions Options(int machine) {
  HangWatchOptions o;
  o.machine_rank = machine;
  o.host = "node" + std::to_string(machine);
  o.hang_timeout = absl::Seconds(5);
  o.settle_timeout = absl::Seconds(1);
  o.remote_wait = absl::Seconds(3);
  o.sample_tree = [](pid_t) { return ProcessTreeSample{true, false, 0}; };  // idle
  return o;
}

const absl::Time t0 = absl::FromUnixSeconds(1000);
auto NoOutput = [](int) -> std::uint64_t { return 0; };

TEST(HangWatchTest, OneMachineEndsTheAttemptAfterTheTimeout) {
  HangWatch watch(Options(0), nullptr);
  watch.Watch(0, 100, "", t0);
  watch.Watch(1, 101, "", t0);
  EXPECT_EQ(watch.Check(t0 + absl::Seconds(4), NoOutput), HangWatch::Action::kNone);
  EXPECT_EQ(watch.Check(t0 + absl::Seconds(5), NoOutput), HangWatch::Action::kEndLocal);
  EXPECT_EQ(watch.verdict().rank, 0);
  EXPECT_TRUE(watch.verdict().inferred);
}

TEST(HangWatchTest, ARankActiveOnAnotherMachineKeepsTheJobAlive) {
  FakeJobProgress job;
  job.job_idle = absl::Seconds(1);
  HangWatch watch(Options(0), &job);
  watch.Watch(0, 100, "", t0);
  EXPECT_EQ(watch.Check(t0 + absl::Seconds(60), NoOutput), HangWatch::Action::kNone);
  ASSERT_EQ(job.published.size(), 1u);  // this machine's ranks went out all the same
  EXPECT_EQ(job.published[0].idle_for, absl::Seconds(60));
}

TEST(HangWatchTest, TheSettledVerdictNamesARemoteRankAndThisMachineWaitsForItsReport) {
  FakeJobProgress job;
  job.job_idle = absl::Seconds(6);
  RankSnapshot stopped;
  stopped.rank = 3;
  stopped.machine_rank = 1;
  stopped.stopped = true;
  job.others = {stopped};
  HangWatch watch(Options(0), &job);
  watch.Watch(0, 100, "", t0);
  EXPECT_EQ(watch.Check(t0 + absl::Seconds(6), NoOutput), HangWatch::Action::kNone);
  ASSERT_TRUE(job.proposed.has_value());
  EXPECT_EQ(job.proposed->rank, 3);
  job.settled = job.proposed;
  EXPECT_EQ(watch.Check(t0 + absl::Seconds(6.1), NoOutput), HangWatch::Action::kWaitRemote);
  EXPECT_THAT(watch.verdict().others[0], HasSubstr("rank 0 (machine 0): idle for"));
  EXPECT_EQ(watch.Check(t0 + absl::Seconds(8), NoOutput), HangWatch::Action::kNone);
  EXPECT_EQ(watch.Check(t0 + absl::Seconds(9.2), NoOutput), HangWatch::Action::kEndRemote);
  EXPECT_EQ(watch.Check(t0 + absl::Seconds(20), NoOutput), HangWatch::Action::kNone);
}

TEST(HangWatchTest, AnotherMachinesEarlierVerdictWinsOverOurs) {
  FakeJobProgress job;
  job.job_idle = absl::Seconds(6);
  HangWatch watch(Options(1), &job);
  watch.Watch(2, 100, "", t0);
  EXPECT_EQ(watch.Check(t0 + absl::Seconds(6), NoOutput), HangWatch::Action::kNone);
  ASSERT_TRUE(job.proposed.has_value());
  EXPECT_EQ(job.proposed->rank, 2);  // ours names our rank...
  HangVerdict first;
  first.rank = 0;
  first.machine_rank = 0;
  job.settled = first;  // ...but machine 0 proposed first
  EXPECT_EQ(watch.Check(t0 + absl::Seconds(6.1), NoOutput), HangWatch::Action::kWaitRemote);
  EXPECT_EQ(watch.verdict().rank, 0);
}

TEST(HangWatchTest, AnUnsettledProposalFallsBackToThisMachinesVerdict) {
  FakeJobProgress job;
  job.job_idle = absl::Seconds(6);
  HangWatch watch(Options(1), &job);
  watch.Watch(2, 100, "", t0);
  EXPECT_EQ(watch.Check(t0 + absl::Seconds(6), NoOutput), HangWatch::Action::kNone);
  EXPECT_EQ(watch.Check(t0 + absl::Seconds(6.5), NoOutput), HangWatch::Action::kNone);
  EXPECT_EQ(watch.Check(t0 + absl::Seconds(7), NoOutput), HangWatch::Action::kEndLocal);
  EXPECT_EQ(watch.verdict().rank, 2);
}

}  // namespace
}  // namespace accel::launcher
