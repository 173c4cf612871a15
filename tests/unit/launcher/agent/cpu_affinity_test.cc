// Unit tests of the CPU shares behind --enable_cpu_affinity, over fake /sys trees.
#include "launcher/agent/cpu_affinity.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <thread>

#include "absl/strings/ascii.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/files.h"

namespace accel::launcher {
namespace {

using accel::testing::TempDir;
using ::testing::ElementsAre;

TEST(CpuAffinityTest, ParsesKernelCpuLists) {
  auto cpus = ParseCpuList("0-2,8,10-11\n");
  ASSERT_TRUE(cpus.ok());
  EXPECT_THAT(*cpus, ElementsAre(0, 1, 2, 8, 10, 11));
  EXPECT_FALSE(ParseCpuList("3-1").ok());
  EXPECT_FALSE(ParseCpuList("a").ok());
  EXPECT_TRUE(ParseCpuList("")->empty());
}

TEST(CpuAffinityTest, OneNodeIsSplitEvenlyBetweenRanks) {
  EXPECT_THAT(CpuShares({{0, 1}}, 2), ElementsAre(ElementsAre(0), ElementsAre(1)));
  EXPECT_THAT(CpuShares({{0, 1, 2, 3, 4, 5, 6, 7}}, 3),
              ElementsAre(ElementsAre(0, 1), ElementsAre(2, 3, 4), ElementsAre(5, 6, 7)));
  // More ranks than CPUs: they share, each still has one.
  EXPECT_THAT(CpuShares({{0, 1}}, 3), ElementsAre(ElementsAre(0), ElementsAre(1), ElementsAre(0)));
}

TEST(CpuAffinityTest, RanksFillNumaNodesInBlocks) {
  const std::vector<std::vector<int>> nodes = {{0, 1, 2, 3}, {4, 5, 6, 7}};
  EXPECT_THAT(CpuShares(nodes, 4), ElementsAre(ElementsAre(0, 1), ElementsAre(2, 3),
                                               ElementsAre(4, 5), ElementsAre(6, 7)));
  EXPECT_THAT(CpuShares(nodes, 2), ElementsAre(ElementsAre(0, 1, 2, 3), ElementsAre(4, 5, 6, 7)));
  EXPECT_THAT(CpuShares(nodes, 1), ElementsAre(ElementsAre(4, 5, 6, 7)));
}

TEST(CpuAffinityTest, NumaNodesAreReadFromSysAndLimitedToAllowedCpus) {
  TempDir sys;
  sys.Write("devices/system/node/node0/cpulist", "0-3\n");
  sys.Write("devices/system/node/node1/cpulist", "4-7\n");
  sys.Write("devices/system/node/has_cpu", "0-1\n");
  EXPECT_THAT(NumaNodes(sys.path(), {0, 1, 2, 3, 4, 5, 6, 7}),
              ElementsAre(ElementsAre(0, 1, 2, 3), ElementsAre(4, 5, 6, 7)));
  EXPECT_THAT(NumaNodes(sys.path(), {2, 3}), ElementsAre(ElementsAre(2, 3)));
  TempDir empty;  // no NUMA information: one node of the allowed CPUs
  EXPECT_THAT(NumaNodes(empty.path(), {0, 1}), ElementsAre(ElementsAre(0, 1)));
}

TEST(CpuAffinityTest, PhysicalCoresCountDistinctCores) {
  TempDir sys;
  for (const auto& [cpu, core] : {std::pair{0, 0}, {1, 1}, {2, 0}, {3, 1}}) {
    sys.Write("devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/physical_package_id",
              "0\n");
    sys.Write("devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/core_id",
              std::to_string(core) + "\n");
  }
  EXPECT_EQ(PhysicalCores(sys.path()), 2);  // 4 hyperthreads on 2 cores
  // No topology to read: the online CPUs count.
  EXPECT_EQ(PhysicalCores("/nonexistent"), std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
}

TEST(CpuAffinityTest, AllowedCpusAreTheKernelsAffinityList) {
  // What the kernel says this thread may run on, read the other way: /proc's list.
  std::ifstream status("/proc/thread-self/status");
  std::string line, listed;
  while (std::getline(status, line)) {
    if (line.rfind("Cpus_allowed_list:", 0) == 0) listed = line.substr(line.find(':') + 1);
  }
  absl::StatusOr<std::vector<int>> want =
      ParseCpuList(std::string(absl::StripAsciiWhitespace(listed)));
  ASSERT_TRUE(want.ok()) << listed;
  EXPECT_EQ(AllowedCpus(), *want);
  // Narrowed to one CPU (in a thread of its own), AllowedCpus follows.
  const int last = want->back();
  std::vector<int> narrowed;
  std::thread([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(last, &one);
    if (::sched_setaffinity(0, sizeof(one), &one) == 0) narrowed = AllowedCpus();
  }).join();
  EXPECT_THAT(narrowed, ElementsAre(last));
}

}  // namespace
}  // namespace accel::launcher
