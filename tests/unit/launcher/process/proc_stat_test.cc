// Unit tests of /proc parsing: the stat line (a command name may hold spaces and parentheses) and
// this test process's own entry.
#include "launcher/process/proc_stat.h"

#include <unistd.h>

#include "gtest/gtest.h"

namespace accel::launcher {
namespace {

TEST(ProcStatTest, ParsesStateAndCpuTimeAfterAnAwkwardName) {
  const std::string line =
      "4242 (my (odd) name) T 1 4242 4242 0 -1 4194304 100 0 0 0 250 50 7 3 20 0 1 0 5 1 1";
  auto stat = ParseProcStat(line);
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(stat->state, 'T');
  EXPECT_EQ(stat->cpu_ticks, 250u + 50u + 7u + 3u);
  EXPECT_FALSE(ParseProcStat("4242 (cut").has_value());
  EXPECT_FALSE(ParseProcStat("4242 (x) S 1 2").has_value());
}

TEST(ProcStatTest, ParsesTheBytesReadAndWritten) {
  EXPECT_EQ(ParseProcIo("rchar: 6976\nwchar: 24\nsyscr: 10\nsyscw: 2\nread_bytes: 4096\n"),
            6976u + 24u);
  EXPECT_FALSE(ParseProcIo("").has_value());
  EXPECT_FALSE(ParseProcIo("syscr: 10\n").has_value());
}

TEST(ProcStatTest, ReadsThisProcess) {
  auto stat = ReadProcStat(::getpid());
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(stat->state, 'R');  // reading its own stat: running
  const ProcessTreeSample tree = SampleProcessTree(::getpid());
  EXPECT_TRUE(tree.alive);
  EXPECT_FALSE(tree.stopped);
  EXPECT_GT(tree.io_bytes, 0u);  // it read its own /proc files at least
  EXPECT_FALSE(SampleProcessTree(-1).alive);
  EXPECT_GT(ClockTicksPerSecond(), 0);
}

}  // namespace
}  // namespace accel::launcher
