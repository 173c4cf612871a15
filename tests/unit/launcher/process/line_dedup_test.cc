// Unit tests of console de-duplication (launcher/process/line_dedup.h): lines alike from several
// ranks once with the rank set, order per rank, tracebacks whole, the window, the memory bound;
// and the OutputRouter with a window (log files keep every line).
#include "launcher/process/line_dedup.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::launcher {
namespace {

using ::testing::ElementsAre;

const absl::Time kT0 = absl::FromUnixSeconds(1000);
const absl::Duration kWindow = absl::Milliseconds(250);

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out = absl::StrSplit(text, '\n');
  if (!out.empty() && out.back().empty()) out.pop_back();
  return out;
}

TEST(RankSetPrefixTest, RangesAndSingles) {
  EXPECT_EQ(RankSetPrefix({3}), "[rank 3] ");
  EXPECT_EQ(RankSetPrefix({3, 1, 2, 0}), "[ranks 0-3] ");
  EXPECT_EQ(RankSetPrefix({0, 1, 2, 5, 7, 8, 9, 62}), "[ranks 0-2,5,7-9,62] ");
  EXPECT_EQ(RankSetPrefix({4, 4, 6}), "[ranks 4,6] ");
}

TEST(LineDedupTest, AllRanksAlikeIsOneLineAtOnce) {
  LineDedup dedup(kWindow);
  dedup.SetRankCount(8);
  std::string out;
  for (int rank = 0; rank < 7; ++rank) dedup.Add(rank, "warning: x", kT0, &out);
  EXPECT_EQ(out, "");  // rank 7 may still print it
  dedup.Add(7, "warning: x", kT0, &out);
  EXPECT_EQ(out, "[ranks 0-7] warning: x\n");
  EXPECT_TRUE(dedup.empty());
}

TEST(LineDedupTest, SomeRanksAreLetOutWhenTheWindowEnds) {
  LineDedup dedup(kWindow);
  dedup.SetRankCount(8);
  std::string out;
  dedup.Add(0, "warning: x", kT0, &out);
  dedup.Add(2, "warning: x", kT0 + absl::Milliseconds(100), &out);
  EXPECT_EQ(dedup.NextDue(), kT0 + kWindow);
  dedup.FlushDue(kT0 + absl::Milliseconds(249), &out);
  EXPECT_EQ(out, "");
  dedup.FlushDue(kT0 + kWindow, &out);
  EXPECT_EQ(out, "[ranks 0,2] warning: x\n");
  // A rank that prints it after the window starts a new line.
  dedup.Add(3, "warning: x", kT0 + absl::Milliseconds(300), &out);
  dedup.FlushAll(&out);
  EXPECT_THAT(Lines(out), ElementsAre("[ranks 0,2] warning: x", "[rank 3] warning: x"));
}

TEST(LineDedupTest, DifferingLinesKeepEachRanksOrder) {
  LineDedup dedup(kWindow);
  dedup.SetRankCount(2);
  std::string out;
  dedup.Add(1, "x", kT0, &out);
  dedup.Add(0, "y", kT0, &out);
  dedup.Add(0, "x", kT0, &out);  // joins rank 1's "x", printed after rank 0's "y"
  dedup.Add(1, "loss 1.5", kT0, &out);
  dedup.Add(0, "loss 1.4", kT0, &out);
  dedup.FlushAll(&out);
  EXPECT_THAT(Lines(out),
              ElementsAre("[rank 0] y", "[ranks 0-1] x", "[rank 0] loss 1.4", "[rank 1] loss 1.5"));
}

TEST(LineDedupTest, ALineOfItsOwnBetweenSharedOnesArrivingRankByRank) {
  // Each rank's three lines come in one read, one rank after the other.
  LineDedup dedup(kWindow);
  dedup.SetRankCount(3);
  std::string out;
  for (int rank = 0; rank < 3; ++rank) {
    dedup.Add(rank, "warning: same", kT0, &out);
    dedup.Add(rank, absl::StrCat("rank ", rank, " of 3"), kT0, &out);
    dedup.Add(rank, "warning: same", kT0, &out);
  }
  dedup.FlushAll(&out);
  EXPECT_THAT(Lines(out), ElementsAre("[ranks 0-2] warning: same", "[rank 2] rank 2 of 3",
                                      "[rank 1] rank 1 of 3", "[rank 0] rank 0 of 3",
                                      "[ranks 0-2] warning: same"));
}

TEST(LineDedupTest, NoLineWaitsLongerThanTheWindow) {
  LineDedup dedup(kWindow);
  dedup.SetRankCount(4);
  std::string out;
  dedup.Add(0, "first", kT0, &out);
  // Rank 1 has nothing held: its line is queued first, but "first" still leaves on time.
  dedup.Add(1, "second", kT0 + absl::Milliseconds(200), &out);
  EXPECT_EQ(dedup.NextDue(), kT0 + kWindow);
  dedup.FlushDue(kT0 + kWindow, &out);
  EXPECT_THAT(Lines(out), ElementsAre("[rank 1] second", "[rank 0] first"));
  EXPECT_TRUE(dedup.empty());
}

TEST(LineDedupTest, ARanksRepeatedLineIsNotMergedIntoItself) {
  LineDedup dedup(kWindow);
  dedup.SetRankCount(2);
  std::string out;
  dedup.Add(0, "step", kT0, &out);
  dedup.Add(0, "step", kT0, &out);
  dedup.Add(1, "step", kT0, &out);  // joins rank 0's first
  dedup.Add(1, "step", kT0, &out);  // and then its second
  EXPECT_THAT(Lines(out), ElementsAre("[ranks 0-1] step", "[ranks 0-1] step"));
}

TEST(LineDedupTest, EveryStepOnceWithSixtyFourRanks) {
  LineDedup dedup(kWindow);
  dedup.SetRankCount(64);
  std::string out;
  for (int step = 0; step < 5; ++step) {
    const absl::Time t = kT0 + absl::Seconds(step);
    for (int rank = 63; rank >= 0; --rank) {
      dedup.Add(rank, "UserWarning: the same every step", t, &out);
    }
  }
  EXPECT_EQ(Lines(out),
            std::vector<std::string>(5, "[ranks 0-63] UserWarning: the same every step"));
}

TEST(LineDedupTest, TracebacksPassWholeUnderTheirRank) {
  const std::vector<std::string> traceback = {
      "Traceback (most recent call last):",
      "  File \"train.py\", line 3, in <module>",
      "    main()",
      "ValueError: bad",
      "",
      "During handling of the above exception, another exception occurred:",
      "",
      "Traceback (most recent call last):",
      "  File \"train.py\", line 5, in <module>",
      "RuntimeError: worse",
  };
  LineDedup dedup(kWindow);
  dedup.SetRankCount(2);
  std::string out;
  dedup.Add(0, "warning: w", kT0, &out);
  for (const std::string& line : traceback) {
    dedup.Add(0, line, kT0, &out);
    dedup.Add(1, line, kT0, &out);  // the same traceback from rank 1: not merged either
  }
  dedup.Add(1, "warning: w", kT0, &out);  // after its own traceback
  dedup.FlushAll(&out);
  // Each rank's traceback whole and in order; rank 1's (it had nothing held) is queued first,
  // and its warning joins rank 0's, which rank 0 printed before its own traceback.
  std::vector<std::string> expected;
  for (const std::string& line : traceback) expected.push_back("[rank 1] " + line);
  expected.push_back("[ranks 0-1] warning: w");
  for (const std::string& line : traceback) expected.push_back("[rank 0] " + line);
  EXPECT_EQ(Lines(out), expected);
  // After the exception line, lines merge again.
  out.clear();
  dedup.Add(0, "warning: w", kT0, &out);
  dedup.Add(1, "warning: w", kT0, &out);
  EXPECT_EQ(out, "[ranks 0-1] warning: w\n");
}

TEST(LineDedupTest, OneRankPassesAtOnce) {
  LineDedup dedup(kWindow);
  dedup.SetRankCount(1);
  std::string out;
  dedup.Add(5, "hello", kT0, &out);
  EXPECT_EQ(out, "[rank 5] hello\n");
}

TEST(LineDedupTest, HeldBytesAreBounded) {
  LineDedup dedup(absl::Hours(1), /*max_held_bytes=*/4096);
  dedup.SetRankCount(2);
  std::string out;
  for (int i = 0; i < 1000; ++i) dedup.Add(0, absl::StrCat("line ", i), kT0, &out);
  const std::vector<std::string> lines = Lines(out);
  EXPECT_GT(lines.size(), 900u);  // the oldest went out although their window had not ended
  EXPECT_EQ(lines.front(), "[rank 0] line 0");
  dedup.FlushAll(&out);
  EXPECT_EQ(Lines(out).size(), 1000u);
  EXPECT_EQ(Lines(out).back(), "[rank 0] line 999");
}

}  // namespace
}  // namespace accel::launcher
