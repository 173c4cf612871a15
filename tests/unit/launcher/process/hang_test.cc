// Unit tests of the hang detector over progress files. Files only; no processes.
#include "launcher/process/hang.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/process/failure_report.h"
#include "launcher/process/os_util.h"
#include "launcher/process/output.h"
#include "launcher/process/subprocess.h"
#include "tests/testing/files.h"

namespace accel::launcher {
namespace {

using accel::testing::ReadFile;

using ::testing::ElementsAre;
using ::testing::HasSubstr;

void WriteProgress(const std::string& path, std::uint64_t step) {
  unsigned char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(step >> (8 * i));
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<char*>(bytes), 8);
}

TEST(HangDetectorTest, ReportsWhenNoWatchedRankAdvances) {
  const accel::testing::TempDir temp;
  const std::string& dir = temp.path();
  HangDetector hang(absl::Seconds(5));
  hang.Watch(0, dir + "/p0");
  hang.Watch(1, dir + "/p1");
  hang.Watch(2, dir + "/never_written");
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  WriteProgress(dir + "/p0", 10);
  WriteProgress(dir + "/p1", 0x0102030405ULL);
  EXPECT_EQ(ReadProgressFile(dir + "/p1"), 0x0102030405ULL);
  EXPECT_TRUE(hang.Check(t0).empty());
  WriteProgress(dir + "/p0", 11);
  EXPECT_TRUE(hang.Check(t0 + absl::Seconds(4)).empty());
  EXPECT_TRUE(hang.Check(t0 + absl::Seconds(8)).empty());  // rank 0 advanced at t0+4
  auto stalled = hang.Check(t0 + absl::Seconds(9));
  ASSERT_EQ(stalled.size(), 2u);  // rank 2 never reported progress: not watched
  EXPECT_EQ(stalled[0].rank, 0);  // lowest step first
  EXPECT_EQ(stalled[0].step, 11u);
  EXPECT_EQ(stalled[1].rank, 1);
  EXPECT_EQ(stalled[1].stalled_for, absl::Seconds(9));
  RemoveTree(dir);
}

TEST(HangDetectorTest, NothingWatchedNeverHangs) {
  HangDetector hang(absl::Seconds(1));
  hang.Watch(0, "/nonexistent/accel/progress");
  EXPECT_TRUE(hang.Check(absl::Now() + absl::Hours(1)).empty());
}

}  // namespace
}  // namespace accel::launcher
