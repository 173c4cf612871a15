// Unit tests of the plan: device fallback rules and the exact worker
// environment contract.
#include "launcher/agent/plan.h"

#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::launcher {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

std::map<std::string, std::string> ToMap(const std::vector<std::string>& env) {
  std::map<std::string, std::string> out;
  for (const std::string& e : env) {
    const auto eq = e.find('=');
    EXPECT_TRUE(out.emplace(e.substr(0, eq), e.substr(eq + 1)).second) << "duplicate " << e;
  }
  return out;
}

Config TwoProcessConfig() {
  Config c;
  c.num_processes = 2;
  c.run_id = "run42";
  return c;
}

TEST(PlanTest, OneProcessIsSingleAndNeedsNoRendezvous) {
  Config c;
  auto plan = MakePlan(c, 1, "");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->single_process);
  EXPECT_EQ(plan->world_size, 1);
  EXPECT_FALSE(plan->use_cpu);
  EXPECT_EQ(plan->backend, "nccl");
  EXPECT_THAT(plan->notices, IsEmpty());
}

TEST(PlanTest, NoGpuFallsBackToCpuAndFp16ToFp32WithOneNoticeEach) {
  Config c = TwoProcessConfig();
  c.mixed_precision = MixedPrecision::kFp16;
  auto plan = MakePlan(c, 0, "cuInit: no CUDA-capable device is detected");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->use_cpu);
  EXPECT_EQ(plan->backend, "gloo");
  EXPECT_EQ(plan->precision, MixedPrecision::kNo);
  EXPECT_EQ(plan->nproc_per_machine, 2);
  ASSERT_THAT(plan->notices, SizeIs(2));
  EXPECT_THAT(plan->notices[0], HasSubstr("no CUDA-capable device"));
  EXPECT_THAT(plan->notices[1], HasSubstr("fp32"));
}

TEST(PlanTest, Bf16StaysOnCpu) {
  Config c = TwoProcessConfig();
  c.use_cpu = true;
  c.mixed_precision = MixedPrecision::kBf16;
  auto plan = MakePlan(c, 4, "");
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->use_cpu);
  EXPECT_EQ(plan->precision, MixedPrecision::kBf16);
  EXPECT_THAT(plan->notices, IsEmpty());  // asked for CPU: nothing fell back
}

TEST(PlanTest, FewerGpusOnOneMachineRunsOnThosePresent) {
  Config c;
  c.num_processes = 4;
  auto plan = MakePlan(c, 2, "");
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->nproc_per_machine, 2);
  EXPECT_EQ(plan->world_size, 2);
  ASSERT_THAT(plan->notices, SizeIs(1));
  EXPECT_THAT(plan->notices[0], HasSubstr("only 2 GPU"));
}

TEST(PlanTest, FewerGpusOnAMultiMachineJobIsAnError) {
  Config c;
  c.num_machines = 2;
  c.num_processes = 8;
  c.machine_rank = 1;
  c.main_process_ip = "10.0.0.1";
  auto plan = MakePlan(c, 2, "");
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.status().message(), HasSubstr("never changes its world size"));
  EXPECT_THAT(plan.status().message(), HasSubstr("machine 1 has 2"));
}

TEST(PlanTest, GpuIdsBecomeCudaVisibleDevices) {
  Config c = TwoProcessConfig();
  c.gpu_ids = "1,3";
  auto plan = MakePlan(c, 4, "");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->cuda_visible_devices, "1,3");
  auto env = ToMap(WorkerEnv(*plan, RendezvousResult{}, 0, WorkerFiles{"/e", ""},
                             {"CUDA_VISIBLE_DEVICES=0,1,2,3"}));
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "1,3");
}

TEST(PlanTest, GpuIdBeyondTheMachineIsAnError) {
  Config c = TwoProcessConfig();
  c.gpu_ids = "0,7";
  auto plan = MakePlan(c, 2, "");
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.status().message(), HasSubstr("names GPU 7"));
}

TEST(PlanTest, WorkerEnvIsTheExactContract) {
  Config c;
  c.num_machines = 2;
  c.num_processes = 4;
  c.machine_rank = 1;
  c.run_id = "r1";
  c.max_restarts = 3;
  c.gradient_accumulation_steps = 4;
  c.use_cpu = true;
  c.debug = true;
  auto plan = MakePlan(c, 0, "");
  ASSERT_TRUE(plan.ok());
  RendezvousResult rdzv;
  rdzv.base_rank = 2;
  rdzv.world_size = 4;
  rdzv.master_addr = "10.0.0.1";
  rdzv.master_port = 29501;
  rdzv.store_endpoint = "10.0.0.1:29500";
  rdzv.local_addr = "10.0.0.2";
  rdzv.token = "secret";
  rdzv.attempt = 1;
  const std::vector<std::string> base = {"PATH=/bin", "RANK=99", "ACCEL_STORE_ENDPOINT=stale",
                                         "HOME=/root"};
  auto env = ToMap(WorkerEnv(*plan, rdzv, 1, WorkerFiles{"/tmp/e.json", "/tmp/p"}, base));
  const std::map<std::string, std::string> want = {
      {"PATH", "/bin"},
      {"HOME", "/root"},
      {"RANK", "3"},
      {"LOCAL_RANK", "1"},
      {"WORLD_SIZE", "4"},
      {"LOCAL_WORLD_SIZE", "2"},
      {"GROUP_RANK", "1"},
      {"GROUP_WORLD_SIZE", "2"},
      {"ROLE_RANK", "3"},
      {"ROLE_NAME", "default"},
      {"MASTER_ADDR", "10.0.0.1"},
      {"MASTER_PORT", "29501"},
      {"TORCHELASTIC_RESTART_COUNT", "1"},
      {"TORCHELASTIC_MAX_RESTARTS", "3"},
      {"TORCHELASTIC_RUN_ID", "r1"},
      {"OMP_NUM_THREADS", "1"},
      {"ACCELERATE_MIXED_PRECISION", "no"},
      {"ACCELERATE_USE_CPU", "true"},
      {"ACCELERATE_DEBUG_MODE", "true"},
      {"ACCELERATE_GRADIENT_ACCUMULATION_STEPS", "4"},
      {"ACCEL_STORE_ENDPOINT", "10.0.0.1:29500"},
      {"ACCEL_RDZV_TOKEN", "secret"},
      {"ACCEL_ERROR_FILE", "/tmp/e.json"},
      {"ACCEL_BACKEND", "gloo"},
      {"ACCEL_PROGRESS_FILE", "/tmp/p"},
      {"ACCEL_LOCAL_ADDR", "10.0.0.2"},
  };
  EXPECT_EQ(env, want);
}

TEST(PlanTest, UserOmpNumThreadsIsKeptAndOneProcessGetsNone) {
  Config c = TwoProcessConfig();
  c.use_cpu = true;
  auto plan = MakePlan(c, 0, "");
  ASSERT_TRUE(plan.ok());
  auto env =
      ToMap(WorkerEnv(*plan, RendezvousResult{}, 0, WorkerFiles{"/e", ""}, {"OMP_NUM_THREADS=8"}));
  EXPECT_EQ(env["OMP_NUM_THREADS"], "8");

  Config one;
  one.use_cpu = true;
  auto single = MakePlan(one, 0, "");
  ASSERT_TRUE(single.ok());
  auto env1 = ToMap(WorkerEnv(*single, RendezvousResult{}, 0, WorkerFiles{"/e", ""}, {}));
  EXPECT_EQ(env1.count("OMP_NUM_THREADS"), 0u);
  EXPECT_EQ(env1.count("ACCEL_STORE_ENDPOINT"), 0u);
  EXPECT_EQ(env1.count("ACCEL_PROGRESS_FILE"), 0u);
  EXPECT_EQ(env1["WORLD_SIZE"], "1");
  EXPECT_EQ(env1["RANK"], "0");
}

TEST(PlanTest, FormatPlanNamesEverythingTheUserNeeds) {
  Config c;
  c.num_machines = 2;
  c.num_processes = 4;
  c.machine_rank = 1;
  c.run_id = "abc";
  c.use_cpu = true;
  c.gradient_accumulation_steps = 8;
  c.mixed_precision = MixedPrecision::kBf16;
  auto plan = MakePlan(c, 0, "");
  ASSERT_TRUE(plan.ok());
  plan->rendezvous_endpoint = "10.0.0.1:29500";
  const std::string text = FormatPlan(*plan, {"train.bin", "--epochs", "3"});
  EXPECT_THAT(text, HasSubstr("machines:            2 (this is machine 1)"));
  EXPECT_THAT(text, HasSubstr("processes/machine:   2 (world size 4)"));
  EXPECT_THAT(text, HasSubstr("ranks here:          2-3"));
  EXPECT_THAT(text, HasSubstr("devices:             cpu"));
  EXPECT_THAT(text, HasSubstr("precision:           bf16"));
  EXPECT_THAT(text, HasSubstr("accumulation steps:  8"));
  EXPECT_THAT(text, HasSubstr("rendezvous:          10.0.0.1:29500"));
  EXPECT_THAT(text, HasSubstr("train.bin --epochs 3"));
  EXPECT_THAT(text, HasSubstr("DDP overlap:"));
}

TEST(PlanTest, DdpOverlapIsOffWhenProcessesTimesThreadsFillTheCores) {
  Config c;
  c.num_processes = 2;
  c.use_cpu = true;
  auto plan = MakePlan(c, 0, "");
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(DescribeDdpOverlap(*plan, nullptr, nullptr, 2),
            "off: 2 processes x 1 threads >= 2 cores");
  EXPECT_EQ(DescribeDdpOverlap(*plan, nullptr, nullptr, 16),
            "on: 2 processes x 1 threads < 16 cores");
  EXPECT_EQ(DescribeDdpOverlap(*plan, "8", nullptr, 16),
            "off: 2 processes x 8 threads >= 16 cores");
  EXPECT_EQ(DescribeDdpOverlap(*plan, nullptr, "ON", 2), "on (ACCEL_OVERLAP=on)");
  plan->use_cpu = false;
  EXPECT_EQ(DescribeDdpOverlap(*plan, nullptr, nullptr, 2), "on (GPU)");
  plan->world_size = 1;
  EXPECT_EQ(DescribeDdpOverlap(*plan, nullptr, nullptr, 2), "none (world size 1)");
}

}  // namespace
}  // namespace accel::launcher
