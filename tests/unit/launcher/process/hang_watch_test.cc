// Unit tests of one attempt's hang watch: when it fires, and how machines settle on one verdict
// (a fake JobProgress stands for the other machines and the store).
#include "launcher/process/hang_watch.h"

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/files.h"

namespace accel::launcher {
namespace {

using ::testing::HasSubstr;

class FakeJobProgress : public JobProgress {
 public:
  void Publish(std::vector<RankSnapshot> ranks, absl::Duration, absl::Duration,
               absl::Time) override {
    published = std::move(ranks);
  }
  absl::Duration JobIdleFor(absl::Time) const override { return job_idle; }
  absl::Duration JobStalledFor(absl::Time) const override { return job_stalled; }
  std::vector<RankSnapshot> OtherRanks(absl::Time) const override { return others; }
  void Propose(const HangVerdict& verdict) override { proposed = verdict; }
  std::optional<HangVerdict> Settled() const override { return settled; }

  absl::Duration job_idle = absl::InfiniteDuration();
  absl::Duration job_stalled = absl::InfiniteDuration();
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
  o.sample_tree = [](pid_t) { return ProcessTreeSample{true, false, 0, 0}; };  // idle
  return o;
}

const absl::Time t0 = absl::FromUnixSeconds(1000);

// Writes a progress record (step 10) with these collective counts.
void WriteRecord(const std::string& path, std::uint64_t started, std::uint64_t done,
                 std::uint64_t step = 10) {
  std::string bytes;
  for (std::uint64_t w :
       {step, started, done, std::uint64_t{0}, std::uint64_t{0}, std::uint64_t{0}}) {
    for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>(w >> (8 * i)));
  }
  std::ofstream(path, std::ios::binary) << bytes;
}
auto NoOutput = [](int) -> std::uint64_t { return 0; };

TEST(HangWatchTest, OneMachineEndsTheAttemptAfterTheTimeout) {
  HangWatch watch(Options(0), nullptr);
  watch.Watch(0, 100, "", t0);
  watch.Watch(1, 101, "", t0);
  EXPECT_EQ(watch.Check(t0 + absl::Seconds(4), NoOutput), HangWatch::Action::kNone);
  EXPECT_EQ(watch.Check(t0 + absl::Seconds(5), NoOutput), HangWatch::Action::kEndLocal);
  EXPECT_EQ(watch.verdict().rank, 0);
  EXPECT_TRUE(watch.verdict().inferred);
  EXPECT_TRUE(watch.agreed());  // one machine: its verdict is the job's
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
  EXPECT_TRUE(watch.agreed());
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
  // Its own verdict is inferred (no progress, no stop): it waits the settle timeout and another
  // hang timeout for the reports that could show a stop elsewhere (issue 35), then acts alone.
  EXPECT_EQ(watch.Check(t0 + absl::Seconds(11.5), NoOutput), HangWatch::Action::kNone);
  EXPECT_EQ(watch.Check(t0 + absl::Seconds(12), NoOutput), HangWatch::Action::kEndLocal);
  EXPECT_EQ(watch.verdict().rank, 2);
  EXPECT_FALSE(watch.agreed());  // this machine's own: elastic membership does not act on it
}

// A verdict naming a stop this machine sees falls back after the settle timeout alone.
TEST(HangWatchTest, AnUnsettledStopFallsBackAfterTheSettleTimeout) {
  FakeJobProgress job;
  job.job_idle = absl::Seconds(6);
  HangWatchOptions options = Options(1);
  options.sample_tree = [](pid_t) { return ProcessTreeSample{true, true, 0, 0}; };  // stopped
  HangWatch watch(options, &job);
  watch.Watch(2, 100, "", t0);
  EXPECT_EQ(watch.Check(t0 + absl::Seconds(6), NoOutput), HangWatch::Action::kNone);
  EXPECT_EQ(watch.Check(t0 + absl::Seconds(7), NoOutput), HangWatch::Action::kEndLocal);
  EXPECT_EQ(watch.verdict().rank, 2);
  EXPECT_TRUE(watch.verdict().stopped);
}

// A rank with collective counts, for the stall rule.
RankSnapshot Counted(int rank, int machine, std::uint64_t started, std::uint64_t done) {
  RankSnapshot r;
  r.rank = rank;
  r.machine_rank = machine;
  progress::Record p;
  p.step = 10;
  p.collectives_started = started;
  p.collectives_done = done;
  p.has_collectives = true;
  r.progress = p;
  return r;
}

// Rank 3 on machine 1 spins (uses CPU, so the job is never idle) while the others wait in
// collective 21, which it never started: no rank advanced for the timeout, so it is named.
TEST(HangWatchTest, ARankSpinningOutsideTheCollectiveOthersWaitInIsNamed) {
  FakeJobProgress job;
  job.job_idle = absl::Seconds(1);  // rank 3 uses CPU
  job.job_stalled = absl::Seconds(5);
  job.others = {Counted(2, 1, 21, 20), Counted(3, 1, 20, 20)};
  const accel::testing::TempDir temp;
  const std::string path = temp.path() + "/progress";
  WriteRecord(path, 21, 20);
  HangWatch watch(Options(0), &job);
  watch.Watch(0, 100, path, t0);
  EXPECT_EQ(watch.Check(t0 + absl::Seconds(5), NoOutput), HangWatch::Action::kNone);
  ASSERT_TRUE(job.proposed.has_value());
  EXPECT_EQ(job.proposed->rank, 3);
  EXPECT_TRUE(job.proposed->busy);
  EXPECT_FALSE(job.proposed->inferred);
  EXPECT_THAT(DescribeVerdict(*job.proposed),
              HasSubstr("hang: rank 3 (machine 1) did not reach collective 21 (it completed "
                        "collective 20 and started no other, at step 10); it kept running, but "
                        "no rank advanced for 5.0 s"));
}

// The same stall is no hang while some rank's counts do not show one: every rank inside the same
// collective (a slow collective), or a rank that reports no collectives.
TEST(HangWatchTest, AStallWithoutCollectiveEvidenceIsNoHang) {
  for (const std::vector<RankSnapshot>& others :
       {std::vector<RankSnapshot>{Counted(2, 1, 21, 20), Counted(3, 1, 21, 20)},
        std::vector<RankSnapshot>{Counted(2, 1, 21, 20), RankSnapshot{}}}) {
    FakeJobProgress job;
    job.job_idle = absl::Seconds(1);
    job.job_stalled = absl::Seconds(60);
    job.others = others;
    job.others.back().rank = 3;
    const accel::testing::TempDir temp;
    const std::string path = temp.path() + "/progress";
    WriteRecord(path, 21, 20);
    HangWatch watch(Options(0), &job);
    watch.Watch(0, 100, path, t0);
    EXPECT_EQ(watch.Check(t0 + absl::Seconds(60), NoOutput), HangWatch::Action::kNone);
    EXPECT_FALSE(job.proposed.has_value());
  }
}

// Machine 1 saw no hang (its launcher was starved, and the job looks active to it since), but the
// other machines settled the job's verdict: it acts on it at its next check.
TEST(HangWatchTest, AVerdictSettledElsewhereIsActedOnWithoutAHangSeenHere) {
  FakeJobProgress job;
  job.job_idle = absl::ZeroDuration();
  HangVerdict settled;
  settled.rank = 3;
  settled.machine_rank = 1;
  HangWatch watch(Options(1), &job);
  watch.Watch(3, 100, "", t0);
  EXPECT_EQ(watch.Check(t0 + absl::Seconds(1), NoOutput), HangWatch::Action::kNone);
  job.settled = settled;
  EXPECT_EQ(watch.Check(t0 + absl::Seconds(1.1), NoOutput), HangWatch::Action::kEndLocal);
  EXPECT_EQ(watch.verdict().rank, 3);
  EXPECT_TRUE(watch.agreed());
  EXPECT_FALSE(job.proposed.has_value());
}

// Issue 35's start-up grace: a rank whose record shows no step and no collective (still importing
// torch on a loaded host, no CPU, no output) is not hung within the startup timeout; once it has
// made its first step or started its first collective, or past the startup timeout, the hang
// timeout applies as to any rank.
TEST(HangWatchTest, ARankBeforeItsFirstStepIsNotHungWithinTheStartupTimeout) {
  const accel::testing::TempDir temp;
  const std::string path = temp.path() + "/progress";
  WriteRecord(path, 0, 0, /*step=*/0);
  HangWatchOptions options = Options(0);
  options.startup_timeout = absl::Seconds(20);
  HangWatch watch(options, nullptr);
  watch.Watch(0, 100, path, t0);
  for (int s = 1; s <= 19; ++s) {
    EXPECT_EQ(watch.Check(t0 + absl::Seconds(s), NoOutput), HangWatch::Action::kNone) << s;
  }
  // Past the startup timeout: the hang timeout runs from its end.
  EXPECT_EQ(watch.Check(t0 + absl::Seconds(23.5), NoOutput), HangWatch::Action::kNone);
  EXPECT_EQ(watch.Check(t0 + absl::Seconds(24.5), NoOutput), HangWatch::Action::kEndLocal);

  // After its first step, no grace: 5 s idle is a hang.
  WriteRecord(path, 1, 1, /*step=*/1);
  HangWatch stepped(options, nullptr);
  stepped.Watch(0, 100, path, t0);
  EXPECT_EQ(stepped.Check(t0 + absl::Seconds(1), NoOutput), HangWatch::Action::kNone);
  EXPECT_EQ(stepped.Check(t0 + absl::Seconds(6.5), NoOutput), HangWatch::Action::kEndLocal);

  // Nor after its first collective: a program that never steps (plain torch.distributed) and
  // waits in a collective is judged like any rank.
  WriteRecord(path, 1, 0, /*step=*/0);
  HangWatch collecting(options, nullptr);
  collecting.Watch(0, 100, path, t0);
  EXPECT_EQ(collecting.Check(t0 + absl::Seconds(1), NoOutput), HangWatch::Action::kNone);
  EXPECT_EQ(collecting.Check(t0 + absl::Seconds(6.5), NoOutput), HangWatch::Action::kEndLocal);
}

// A stopped process gets no grace: it is named a hang timeout after it stopped.
TEST(HangWatchTest, AStoppedRankBeforeItsFirstStepIsNamed) {
  const accel::testing::TempDir temp;
  const std::string path = temp.path() + "/progress";
  WriteRecord(path, 0, 0, /*step=*/0);
  HangWatchOptions options = Options(0);
  options.startup_timeout = absl::Seconds(600);
  options.sample_tree = [](pid_t) { return ProcessTreeSample{true, true, 0, 0}; };
  HangWatch watch(options, nullptr);
  watch.Watch(0, 100, path, t0);
  EXPECT_EQ(watch.Check(t0 + absl::Seconds(1), NoOutput), HangWatch::Action::kNone);
  EXPECT_EQ(watch.Check(t0 + absl::Seconds(6), NoOutput), HangWatch::Action::kEndLocal);
  EXPECT_TRUE(watch.verdict().stopped);
}

}  // namespace
}  // namespace accel::launcher
