// Unit tests of the hang diagnosis: which rank is named, and the encodings agents exchange.
#include "launcher/process/hang_verdict.h"

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::launcher {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

RankSnapshot Rank(int rank, int machine, absl::Duration idle, std::optional<progress::Record> p) {
  RankSnapshot r;
  r.rank = rank;
  r.machine_rank = machine;
  r.host = "node" + std::to_string(machine);
  r.idle_for = idle;
  r.progress = p;
  return r;
}

progress::Record Counts(std::uint64_t step, std::uint64_t started, std::uint64_t done) {
  return progress::Record{step, started, done, true};
}

TEST(HangVerdictTest, AStoppedRankIsTheRootCauseAndTheOthersWait) {
  // SIGSTOP inside collective 9: every rank is in it, only the stopped one is different.
  std::vector<RankSnapshot> ranks = {
      Rank(0, 0, absl::Seconds(5), Counts(4, 9, 8)), Rank(1, 0, absl::Seconds(5), Counts(4, 9, 8)),
      Rank(2, 1, absl::Seconds(5), Counts(4, 9, 8)), Rank(3, 1, absl::Seconds(5), Counts(4, 9, 8))};
  ranks[3].stopped = true;
  HangVerdict v = DiagnoseHang(ranks, absl::Seconds(5));
  EXPECT_EQ(v.rank, 3);
  EXPECT_EQ(v.machine_rank, 1);
  EXPECT_EQ(v.host, "node1");
  EXPECT_FALSE(v.inferred);
  EXPECT_THAT(v.others, ElementsAre("rank 0 (machine 0): waiting in collective 9 (step 4)",
                                    "rank 1 (machine 0): waiting in collective 9 (step 4)",
                                    "rank 2 (machine 1): waiting in collective 9 (step 4)"));
  EXPECT_EQ(DescribeVerdict(v),
            "hang: rank 3 (machine 1) is stopped (process state T: SIGSTOP or a debugger); no "
            "rank advanced, used CPU or wrote output for 5.0 s");
}

TEST(HangVerdictTest, TheRankThatNeverReachedTheCollectiveIsTheRootCause) {
  // Rank 2 completed collective 8 and stopped advancing; the others wait in collective 9.
  std::vector<RankSnapshot> ranks = {Rank(2, 1, absl::Seconds(6), Counts(4, 8, 8)),
                                     Rank(0, 0, absl::Seconds(5), Counts(4, 9, 8)),
                                     Rank(1, 0, absl::Seconds(5), Counts(4, 9, 8))};
  HangVerdict v = DiagnoseHang(ranks, absl::Seconds(5));
  EXPECT_EQ(v.rank, 2);
  EXPECT_FALSE(v.inferred);
  EXPECT_EQ(v.why,
            "did not reach collective 9 (it completed collective 8 and started no other, "
            "at step 4)");
  EXPECT_THAT(v.others, ElementsAre("rank 0 (machine 0): waiting in collective 9 (step 4)",
                                    "rank 1 (machine 0): waiting in collective 9 (step 4)"));
}

TEST(HangVerdictTest, WithoutProgressTheRankIdleFirstIsNamedAsInferred) {
  std::vector<RankSnapshot> ranks = {Rank(0, 0, absl::Seconds(5), std::nullopt),
                                     Rank(1, 1, absl::Seconds(7), std::nullopt)};
  HangVerdict v = DiagnoseHang(ranks, absl::Seconds(5));
  EXPECT_EQ(v.rank, 1);
  EXPECT_TRUE(v.inferred);
  EXPECT_THAT(v.why, HasSubstr("went idle first (no CPU time or output for 7.0 s; the program "
                               "reports no progress, so this is inferred)"));
  EXPECT_THAT(v.others, ElementsAre("rank 0 (machine 0): idle for 5.0 s"));
  EXPECT_THAT(DescribeVerdict(v), HasSubstr("hang (inferred): rank 1 (machine 1) went idle first"));
}

TEST(HangVerdictTest, EveryRankInTheSameCollectiveIsInferredFromIdleTimes) {
  std::vector<RankSnapshot> ranks = {Rank(0, 0, absl::Seconds(5), Counts(4, 9, 8)),
                                     Rank(1, 0, absl::Seconds(6), Counts(4, 9, 8))};
  HangVerdict v = DiagnoseHang(ranks, absl::Seconds(5));
  EXPECT_EQ(v.rank, 1);
  EXPECT_TRUE(v.inferred);
  EXPECT_THAT(v.why, HasSubstr("every rank waits in collective 9"));
}

TEST(HangVerdictTest, SnapshotsAndVerdictsSurviveTheirEncoding) {
  std::vector<RankSnapshot> ranks = {Rank(0, 1, absl::Milliseconds(1500), Counts(3, 7, 6)),
                                     Rank(1, 1, absl::Seconds(2), std::nullopt)};
  ranks[1].stopped = true;
  ranks[1].host = "tab\there";
  ranks[0].stalled_for = absl::Milliseconds(2500);
  auto decoded = DecodeSnapshots(EncodeSnapshots(ranks));
  ASSERT_TRUE(decoded.has_value());
  ASSERT_EQ(decoded->size(), 2u);
  EXPECT_EQ((*decoded)[0].progress, ranks[0].progress);
  EXPECT_TRUE((*decoded)[0].progress->has_collectives);
  EXPECT_EQ((*decoded)[0].idle_for, absl::Milliseconds(1500));
  EXPECT_EQ((*decoded)[0].stalled_for, absl::Milliseconds(2500));
  EXPECT_EQ((*decoded)[1].host, "tab here");
  EXPECT_FALSE((*decoded)[1].progress.has_value());
  EXPECT_TRUE((*decoded)[1].stopped);
  EXPECT_FALSE(DecodeSnapshots("1\t2\tshort\n").has_value());
  EXPECT_TRUE(DecodeSnapshots("")->empty());

  HangVerdict v = DiagnoseHang(ranks, absl::Seconds(2));
  auto back = DecodeVerdict(EncodeVerdict(v));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->rank, 1);
  EXPECT_EQ(back->machine_rank, 1);
  EXPECT_EQ(back->why, v.why);
  EXPECT_EQ(back->stopped, v.stopped);
  EXPECT_EQ(back->others, v.others);
  EXPECT_EQ(DescribeVerdict(*back), DescribeVerdict(v));
  EXPECT_FALSE(DecodeVerdict("garbage").has_value());

  // A busy verdict (the stall rule) keeps its wording through the store.
  std::vector<RankSnapshot> stalled = {Rank(0, 0, absl::Seconds(6), Counts(4, 9, 8)),
                                       Rank(1, 1, absl::ZeroDuration(), Counts(4, 8, 8))};
  ASSERT_TRUE(StalledInCollective(stalled));
  HangVerdict busy = DiagnoseHang(stalled, absl::Seconds(6), /*busy=*/true);
  auto busy_back = DecodeVerdict(EncodeVerdict(busy));
  ASSERT_TRUE(busy_back.has_value());
  EXPECT_TRUE(busy_back->busy);
  EXPECT_EQ(DescribeVerdict(*busy_back), DescribeVerdict(busy));
  EXPECT_THAT(DescribeVerdict(busy), HasSubstr("it kept running, but no rank advanced for 6.0 s"));
}

// The stall rule's evidence, case by case: every rank reports collectives, one is inside the
// latest collective, one never started it.
TEST(HangVerdictTest, StalledInCollectiveNeedsAWaiterAndARankBehind) {
  const absl::Duration s = absl::Seconds(1);
  EXPECT_TRUE(
      StalledInCollective({Rank(0, 0, s, Counts(1, 5, 4)), Rank(1, 0, s, Counts(1, 4, 4))}));
  // A rank behind but still inside an older collective: the others wait in 5, it is in 4.
  EXPECT_TRUE(
      StalledInCollective({Rank(0, 0, s, Counts(1, 5, 4)), Rank(1, 0, s, Counts(1, 4, 3))}));
  // All in the same collective (a slow one, or a deadlock the counts cannot tell apart).
  EXPECT_FALSE(
      StalledInCollective({Rank(0, 0, s, Counts(1, 5, 4)), Rank(1, 0, s, Counts(1, 5, 4))}));
  // Nobody waits: the leader completed collective 5 and works outside collectives.
  EXPECT_FALSE(
      StalledInCollective({Rank(0, 0, s, Counts(1, 5, 5)), Rank(1, 0, s, Counts(1, 4, 4))}));
  // A rank without collective counts (a program that reports none).
  EXPECT_FALSE(StalledInCollective({Rank(0, 0, s, Counts(1, 5, 4)), Rank(1, 0, s, std::nullopt)}));
  EXPECT_FALSE(StalledInCollective({}));
}

// Issue 25: machine 0 copied machine 1's ranks before rank 2 was seen stopped, and its ranks had
// been idle longer, so from its copy alone rank 1 "went idle first". Generated jobs of 2-4
// machines x 2 ranks, every rank in the same collective, one rank stopped: whichever machines
// reported (always the stopped rank's: every machine reports within a period) and whatever
// copies were read before, the verdict names the stopped rank, ignores the copies of a machine
// that reported, and does not depend on the order of the copies.
TEST(HangVerdictTest, TheJobVerdictNamesAnObservedStopOverAnyInference) {
  std::mt19937 gen(25);
  for (int c = 0; c < 500; ++c) {
    const int machines = 2 + static_cast<int>(gen() % 3);
    const int world = 2 * machines;
    const int stopped = static_cast<int>(gen() % static_cast<unsigned>(world));
    auto idle = [&gen] { return absl::Milliseconds(4000 + static_cast<int>(gen() % 3000)); };
    std::map<int, std::vector<RankSnapshot>> reports;
    std::vector<RankSnapshot> last_read;  // the copies read before the hang was reported
    std::vector<bool> reported(machines);
    for (int m = 0; m < machines; ++m) {
      reported[m] = m == stopped / 2 || gen() % 2 == 0;
      for (int rank = 2 * m; rank < 2 * m + 2; ++rank) {
        RankSnapshot fresh = Rank(rank, m, idle(), Counts(30, 61, 60));
        fresh.stopped = rank == stopped;
        // What another machine may have copied earlier: the stop not seen yet, or a stop that
        // is over; idle times that make another rank look idle first.
        RankSnapshot stale = Rank(rank, m, idle() + absl::Seconds(2), Counts(30, 61, 60));
        stale.stopped = rank != stopped && gen() % 4 == 0;
        if (reported[m]) reports[m].push_back(fresh);
        if (gen() % 3 != 0) last_read.push_back(reported[m] ? stale : fresh);
      }
    }
    SCOPED_TRACE(::testing::Message() << "case " << c << ": " << machines << " machines, rank "
                                      << stopped << " stopped");
    const HangVerdict v = DecideJobVerdict(reports, last_read, absl::Seconds(5), false);
    EXPECT_EQ(v.rank, stopped);
    EXPECT_EQ(v.machine_rank, stopped / 2);
    EXPECT_FALSE(v.inferred);
    EXPECT_THAT(DescribeVerdict(v), HasSubstr("is stopped (process state T"));
    std::shuffle(last_read.begin(), last_read.end(), gen);
    EXPECT_EQ(EncodeVerdict(DecideJobVerdict(reports, last_read, absl::Seconds(5), false)),
              EncodeVerdict(v));
  }
}

TEST(HangVerdictTest, AMachineWithoutAReportIsJudgedByItsLastReadRanks) {
  // Machine 1 never reported (its launcher starved): its last-read ranks stand in for it, and a
  // stop seen there is named; without one, the rank idle longest of all is inferred.
  std::map<int, std::vector<RankSnapshot>> reports = {
      {0,
       {Rank(0, 0, absl::Seconds(6), Counts(4, 9, 8)),
        Rank(1, 0, absl::Seconds(7), Counts(4, 9, 8))}}};
  std::vector<RankSnapshot> last_read = {Rank(0, 0, absl::Seconds(1), Counts(4, 9, 8)),
                                         Rank(2, 1, absl::Seconds(5), Counts(4, 9, 8)),
                                         Rank(3, 1, absl::Seconds(5), Counts(4, 9, 8))};
  last_read[0].stopped = true;  // machine 0 reported: its stale copy does not count
  last_read[2].stopped = true;
  HangVerdict v = DecideJobVerdict(reports, last_read, absl::Seconds(5), false);
  EXPECT_EQ(v.rank, 3);
  EXPECT_FALSE(v.inferred);
  EXPECT_EQ(v.others.size(), 3u);
  last_read[2].stopped = false;
  v = DecideJobVerdict(reports, last_read, absl::Seconds(5), false);
  EXPECT_EQ(v.rank, 1);
  EXPECT_TRUE(v.inferred);
}

}  // namespace
}  // namespace accel::launcher
