// What the launcher says about the signal that stopped it.
#include "launcher/process/signals.h"

#include "gtest/gtest.h"

namespace accel::launcher {
namespace {

TEST(DescribeLauncherSignalTest, NamesSlurmWhenSlurmstepdSentIt) {
  EXPECT_EQ(DescribeLauncherSignal(SIGTERM, "slurmstepd"),
            "stopped by SIGTERM from Slurm (scancel or the job's time limit)");
  EXPECT_EQ(DescribeLauncherSignal(SIGINT, "slurmstepd"),
            "stopped by SIGINT from Slurm (scancel or the job's time limit)");
}

TEST(DescribeLauncherSignalTest, OtherwiseTheSignalNumber) {
  EXPECT_EQ(DescribeLauncherSignal(SIGTERM, "bash"), "interrupted by signal 15 (SIGTERM)");
  EXPECT_EQ(DescribeLauncherSignal(SIGINT, ""), "interrupted by signal 2 (SIGINT)");
}

}  // namespace
}  // namespace accel::launcher
