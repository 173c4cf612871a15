// Slurm node list expansion and scheduler detection.
#include "launcher/config/scheduler_detect.h"

#include "gtest/gtest.h"

namespace accel::launcher {
namespace {

std::vector<std::string> Expand(const std::string& list) {
  auto hosts = ExpandNodeList(list);
  EXPECT_TRUE(hosts.ok()) << hosts.status();
  return hosts.ok() ? *hosts : std::vector<std::string>{};
}

using V = std::vector<std::string>;

TEST(NodeListTest, RangesListsAndPadding) {
  EXPECT_EQ(Expand("gpu01"), V{"gpu01"});
  EXPECT_EQ(Expand("gpu[01-04,07]"), (V{"gpu01", "gpu02", "gpu03", "gpu04", "gpu07"}));
  EXPECT_EQ(Expand("a,b"), (V{"a", "b"}));
  EXPECT_EQ(Expand("n[8-11]"), (V{"n8", "n9", "n10", "n11"}));
  EXPECT_EQ(Expand("n[098-101]"), (V{"n098", "n099", "n100", "n101"}));
  EXPECT_EQ(Expand("gpu[1-2],cpu[3],login"), (V{"gpu1", "gpu2", "cpu3", "login"}));
  EXPECT_EQ(Expand("host-1.example.com"), V{"host-1.example.com"});
}

TEST(NodeListTest, SeveralBracketGroups) {
  EXPECT_EQ(Expand("n[1-2]-ib[3-4]"), (V{"n1-ib3", "n1-ib4", "n2-ib3", "n2-ib4"}));
  EXPECT_EQ(Expand("r[1,3]c[01-02]"), (V{"r1c01", "r1c02", "r3c01", "r3c02"}));
}

TEST(NodeListTest, MalformedListsNameTheProblem) {
  EXPECT_EQ(ExpandNodeList("gpu[01-04").status().message(), "unbalanced '[' in 'gpu[01-04'");
  EXPECT_EQ(ExpandNodeList("gpu]1").status().message(), "unbalanced ']' in 'gpu]1'");
  EXPECT_EQ(ExpandNodeList("gpu[4-1]").status().message(), "bad range '4-1' in 'gpu[4-1]'");
  EXPECT_EQ(ExpandNodeList("gpu[a-b]").status().message(), "bad range 'a-b' in 'gpu[a-b]'");
  EXPECT_EQ(ExpandNodeList("a,,b").status().message(), "empty host in 'a,,b'");
}

TEST(SchedulerDetectTest, SlurmValues) {
  auto info = DetectScheduler(FixedEnvironment({{"SLURM_JOB_ID", "1"},
                                                {"SLURM_NODEID", "3"},
                                                {"SLURM_NNODES", "4"},
                                                {"SLURM_JOB_NODELIST", "node[10-13]"}}));
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->name, "Slurm");
  ASSERT_EQ(info->values.size(), 4u);
  EXPECT_EQ(info->values[0].key, "machine_rank");
  EXPECT_EQ(info->values[0].value, "3");
  EXPECT_EQ(info->values[1].value, "4");
  EXPECT_EQ(info->values[2].key, "main_process_ip");
  EXPECT_EQ(info->values[2].value, "node10");
  EXPECT_EQ(info->values[3].key, "main_process_port");
  EXPECT_EQ(info->values[3].value, "10001");
  EXPECT_TRUE(info->values[3].fallback);
  EXPECT_EQ(info->values[3].origin, "SLURM_JOB_ID=1 (port 10000 + job id % 10000)");
}

TEST(SchedulerDetectTest, SlurmPortFollowsTheJobId) {
  auto info = DetectScheduler(FixedEnvironment({{"SLURM_JOB_ID", "123456"}}));
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->values.size(), 1u);
  EXPECT_EQ(info->values[0].value, "13456");
  EXPECT_EQ(DetectScheduler(FixedEnvironment({{"SLURM_JOB_ID", "x"}})).status().message(),
            "read SLURM_JOB_ID: expected a non-negative integer, got 'x'");
}

TEST(SchedulerDetectTest, OpenMpiValues) {
  auto info = DetectScheduler(
      FixedEnvironment({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}}));
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->name, "Open MPI");
  ASSERT_EQ(info->values.size(), 2u);
  EXPECT_EQ(info->values[0].origin, "OMPI_COMM_WORLD_RANK=1");
  EXPECT_EQ(info->values[1].origin, "OMPI_COMM_WORLD_SIZE=2");
}

TEST(SchedulerDetectTest, KubernetesIndexedJobGivesTheMachineRank) {
  auto info =
      DetectScheduler(FixedEnvironment({{"JOB_COMPLETION_INDEX", "2"}, {"HOSTNAME", "train-2"}}));
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->name, "Kubernetes");
  ASSERT_EQ(info->values.size(), 1u);
  EXPECT_EQ(info->values[0].key, "machine_rank");
  EXPECT_EQ(info->values[0].value, "2");
  EXPECT_EQ(info->values[0].origin, "JOB_COMPLETION_INDEX=2");
  EXPECT_EQ(DetectScheduler(FixedEnvironment({{"JOB_COMPLETION_INDEX", "-1"}})).status().message(),
            "read JOB_COMPLETION_INDEX: expected a non-negative integer, got '-1'");
}

TEST(SchedulerDetectTest, SlurmAndOpenMpiComeBeforeKubernetes) {
  auto slurm = DetectScheduler(FixedEnvironment(
      {{"SLURM_JOB_ID", "1"}, {"SLURM_NODEID", "0"}, {"JOB_COMPLETION_INDEX", "3"}}));
  EXPECT_EQ(slurm->name, "Slurm");
  auto mpi = DetectScheduler(
      FixedEnvironment({{"OMPI_COMM_WORLD_RANK", "1"}, {"JOB_COMPLETION_INDEX", "3"}}));
  EXPECT_EQ(mpi->name, "Open MPI");
  EXPECT_EQ(mpi->values[0].value, "1");
}

TEST(SchedulerDetectTest, NothingOrGarbage) {
  auto none = DetectScheduler(FixedEnvironment({{"HOME", "/h"}}));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->name, "");
  EXPECT_TRUE(none->values.empty());
  EXPECT_EQ(DetectScheduler(FixedEnvironment({{"SLURM_JOB_ID", "1"}, {"SLURM_NODEID", "x"}}))
                .status()
                .message(),
            "read SLURM_NODEID: expected a non-negative integer, got 'x'");
  EXPECT_EQ(DetectScheduler(FixedEnvironment({{"SLURM_JOB_ID", "1"}, {"SLURM_JOB_NODELIST", "a["}}))
                .status()
                .message(),
            "expand SLURM_JOB_NODELIST='a[': unbalanced '[' in 'a['");
}

}  // namespace
}  // namespace accel::launcher
