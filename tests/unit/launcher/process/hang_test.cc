// Unit tests of the hang detector: progress files on disk, process trees from a fake sampler.
#include "launcher/process/hang.h"

#include <fstream>
#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/files.h"

namespace accel::launcher {
namespace {

// Writes `words` as little-endian 64-bit words (one word: the old 8-byte file).
void WriteWords(const std::string& path, std::vector<std::uint64_t> words) {
  std::string bytes;
  for (std::uint64_t w : words) {
    for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>(w >> (8 * i)));
  }
  std::ofstream(path, std::ios::binary) << bytes;
}

// What the fake /proc says: per pid, the CPU ticks and whether it is stopped.
struct FakeProc {
  std::map<pid_t, ProcessTreeSample> trees;
  TreeSampler sampler() {
    return [this](pid_t pid) { return trees[pid]; };
  }
};

class HangDetectorTest : public ::testing::Test {
 protected:
  HangDetectorTest() : hang_(3, "node3", proc_.sampler(), absl::Seconds(1), 0.05) {
    for (pid_t pid : {100, 101}) proc_.trees[pid] = ProcessTreeSample{true, false, 0, 0};
  }
  void Sample(absl::Time now) {
    hang_.Sample(now, [this](int rank) { return bytes_[rank]; });
  }
  const absl::Time t0_ = absl::FromUnixSeconds(1000);
  const accel::testing::TempDir temp_;
  FakeProc proc_;
  std::map<int, std::uint64_t> bytes_;
  HangDetector hang_;
};

TEST(ReadProgressFileTest, ReadsTheRecordAndTheOldStepOnlyFile) {
  const accel::testing::TempDir temp;
  WriteWords(temp.path() + "/old", {0x0102030405ULL});
  WriteWords(temp.path() + "/new", {7, 12, 11, 0});
  const auto old = ReadProgressFile(temp.path() + "/old");
  ASSERT_TRUE(old.has_value());
  EXPECT_EQ(old->step, 0x0102030405ULL);
  EXPECT_FALSE(old->has_collectives);
  const auto record = ReadProgressFile(temp.path() + "/new");
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ(record->step, 7u);
  EXPECT_EQ(record->collectives_started, 12u);
  EXPECT_EQ(record->collectives_done, 11u);
  EXPECT_TRUE(record->in_collective());
  EXPECT_FALSE(ReadProgressFile(temp.path() + "/absent").has_value());
}

TEST_F(HangDetectorTest, ProgressKeepsARankActiveAndIdleTimeCountsFromItsLastAdvance) {
  const std::string p0 = temp_.path() + "/p0";
  WriteWords(p0, {1, 2, 2, 0});
  hang_.Watch(0, 100, p0, t0_);
  hang_.Watch(1, 101, "", t0_);
  Sample(t0_);
  WriteWords(p0, {2, 4, 4, 0});
  Sample(t0_ + absl::Seconds(4));
  Sample(t0_ + absl::Seconds(9));
  EXPECT_EQ(hang_.IdleFor(t0_ + absl::Seconds(9)), absl::Seconds(5));
  std::vector<RankSnapshot> ranks = hang_.Snapshots(t0_ + absl::Seconds(9));
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[0].rank, 0);
  EXPECT_EQ(ranks[0].machine_rank, 3);
  EXPECT_EQ(ranks[0].host, "node3");
  ASSERT_TRUE(ranks[0].progress.has_value());
  EXPECT_EQ(ranks[0].progress->collectives_done, 4u);
  EXPECT_EQ(ranks[0].idle_for, absl::Seconds(5));
  EXPECT_FALSE(ranks[1].progress.has_value());  // no progress file: not a libaccel program
  EXPECT_EQ(ranks[1].idle_for, absl::Seconds(9));
}

TEST_F(HangDetectorTest, CpuUseAboveTheFractionIsActivityBackgroundTicksAreNot) {
  hang_.Watch(0, 100, "", t0_);
  const double hz = ClockTicksPerSecond();
  // 1% of a core for 3 s (a blocked rank's background threads): idle all along.
  for (int i = 1; i <= 30; ++i) {
    proc_.trees[100].cpu_ticks = static_cast<std::uint64_t>(i * 0.001 * hz);
    Sample(t0_ + absl::Milliseconds(100 * i));
  }
  EXPECT_EQ(hang_.IdleFor(t0_ + absl::Seconds(3)), absl::Seconds(3));
  // Half a core for a second: active until then.
  std::uint64_t ticks = proc_.trees[100].cpu_ticks;
  for (int i = 31; i <= 40; ++i) {
    ticks += static_cast<std::uint64_t>(0.05 * hz);
    proc_.trees[100].cpu_ticks = ticks;
    Sample(t0_ + absl::Milliseconds(100 * i));
  }
  EXPECT_LT(hang_.IdleFor(t0_ + absl::Seconds(4)), absl::Milliseconds(1));
}

TEST_F(HangDetectorTest, OutputIsActivityAndAStoppedRankNeverIs) {
  hang_.Watch(0, 100, "", t0_);
  hang_.Watch(1, 101, "", t0_);
  bytes_[0] = 10;
  Sample(t0_ + absl::Seconds(2));
  proc_.trees[101].stopped = true;
  bytes_[1] = 99;  // a stopped rank's last output was read late: it does not count
  Sample(t0_ + absl::Seconds(3));
  std::vector<RankSnapshot> ranks = hang_.Snapshots(t0_ + absl::Seconds(5));
  EXPECT_EQ(ranks[0].idle_for, absl::Seconds(3));
  EXPECT_FALSE(ranks[0].stopped);
  EXPECT_EQ(ranks[1].idle_for, absl::Seconds(5));
  EXPECT_TRUE(ranks[1].stopped);
  hang_.Forget(0);
  hang_.Forget(1);
  EXPECT_EQ(hang_.IdleFor(t0_), absl::InfiniteDuration());  // nothing watched: never hung
}

// A spinning rank uses CPU (active) but does not advance; samples and I/O bytes advance a rank
// without making it active, and the first record read is neither.
TEST_F(HangDetectorTest, CpuIsActivityNotAnAdvanceSamplesAndBytesAreAdvances) {
  const std::string p0 = temp_.path() + "/p0";
  WriteWords(p0, {1, 2, 2, 0, 0, 0});
  hang_.Watch(0, 100, p0, t0_);
  hang_.Watch(1, 101, "", t0_);
  const double hz = ClockTicksPerSecond();
  for (int i = 1; i <= 40; ++i) {  // rank 1 spins: a whole core for 4 s
    proc_.trees[101].cpu_ticks = static_cast<std::uint64_t>(i * 0.1 * hz);
    Sample(t0_ + absl::Milliseconds(100 * i));
  }
  const absl::Time t4 = t0_ + absl::Seconds(4);
  EXPECT_LT(hang_.IdleFor(t4), absl::Milliseconds(1));
  EXPECT_EQ(hang_.StalledFor(t4), absl::Seconds(4));
  WriteWords(p0, {1, 2, 2, 0, 64, 0});  // samples only: an advance, no activity
  Sample(t0_ + absl::Seconds(5));
  proc_.trees[101].io_bytes = 4096;  // rank 1 wrote a checkpoint
  Sample(t0_ + absl::Seconds(6));
  std::vector<RankSnapshot> ranks = hang_.Snapshots(t0_ + absl::Seconds(7));
  EXPECT_EQ(ranks[0].stalled_for, absl::Seconds(2));
  EXPECT_EQ(ranks[0].idle_for, absl::Seconds(7));
  EXPECT_EQ(ranks[1].stalled_for, absl::Seconds(1));
  EXPECT_EQ(hang_.StalledFor(t0_ + absl::Seconds(7)), absl::Seconds(1));
}

}  // namespace
}  // namespace accel::launcher
