// Unit tests of the plan: device fallback rules, what Accelerator() will see, the effective
// values `config validate` shows, the printed plan.
#include "launcher/agent/plan.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::launcher {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

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
  EXPECT_THAT(plan->notices[0],
              HasSubstr("running on CPU (MULTI_CPU over gloo instead of MULTI_GPU)"));
  EXPECT_THAT(plan->notices[1], HasSubstr("fp32"));
  EXPECT_EQ(plan->distributed_type, DistributedType::kMultiCpu);
}

TEST(PlanTest, DistributedTypeIsWhatAcceleratorWillSee) {
  Config one;
  auto single = MakePlan(one, 1, "");
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(single->distributed_type, DistributedType::kNo);
  EXPECT_FALSE(single->torchrun_env);  // accelerate launch sets no RANK for one process
  Config two = TwoProcessConfig();
  auto gpus = MakePlan(two, 2, "");
  ASSERT_TRUE(gpus.ok());
  EXPECT_EQ(gpus->distributed_type, DistributedType::kMultiGpu);
  EXPECT_TRUE(gpus->torchrun_env);
  two.use_cpu = true;
  auto cpus = MakePlan(two, 2, "");
  ASSERT_TRUE(cpus.ok());
  EXPECT_EQ(cpus->distributed_type, DistributedType::kMultiCpu);
}

TEST(PlanTest, EffectiveValuesNameEveryFallbackWithItsReason) {
  Config c = TwoProcessConfig();
  c.distributed_type = DistributedType::kMultiGpu;
  c.mixed_precision = MixedPrecision::kFp16;
  auto plan = MakePlan(c, 0, "cuInit failed");
  ASSERT_TRUE(plan.ok());
  EffectiveValues effective = EffectiveValuesOf(c, *plan, "cuInit failed");
  EXPECT_EQ(effective["mixed_precision"].value, "'no'");
  EXPECT_EQ(effective["mixed_precision"].reason, "fp16 needs a GPU; running in fp32 on CPU");
  EXPECT_EQ(effective["distributed_type"].value, "MULTI_CPU");
  EXPECT_EQ(effective["use_cpu"].value, "true");
  EXPECT_THAT(effective["use_cpu"].reason, HasSubstr("no GPU found (cuInit failed)"));
  EXPECT_EQ(effective.count("num_processes"), 0u);

  Config four;
  four.num_processes = 4;
  auto fewer = MakePlan(four, 2, "");
  ASSERT_TRUE(fewer.ok());
  effective = EffectiveValuesOf(four, *fewer, "");
  EXPECT_EQ(effective["num_processes"].value, "2");
  EXPECT_EQ(effective.count("mixed_precision"), 0u);
  Config cpu = TwoProcessConfig();
  cpu.use_cpu = true;
  auto asked = MakePlan(cpu, 0, "");
  ASSERT_TRUE(asked.ok());
  EXPECT_TRUE(EffectiveValuesOf(cpu, *asked, "").empty());  // nothing fell back
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
}

TEST(PlanTest, GpuIdBeyondTheMachineIsAnError) {
  Config c = TwoProcessConfig();
  c.gpu_ids = "0,7";
  auto plan = MakePlan(c, 2, "");
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.status().message(), HasSubstr("names GPU 7"));
}

TEST(PlanTest, HangDetectionWatchesTwoOrMoreProcessesAndCollectivesOutlastIt) {
  Config c = TwoProcessConfig();
  c.use_cpu = true;
  auto plan = MakePlan(c, 0, "");
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->hang_timeout_s, ToSeconds(defaults::kHangTimeout));  // on by default
  EXPECT_EQ(plan->collective_timeout_ms, 300000);
  EXPECT_THAT(FormatPlan(*plan, {"prog"}), HasSubstr("hang timeout:        60 s\n"));
  EXPECT_EQ(plan->startup_timeout_s, ToSeconds(defaults::kStartupTimeout));
  EXPECT_THAT(FormatPlan(*plan, {"prog"}),
              HasSubstr("startup timeout:     600 s (no hang verdict for a rank before its first "
                        "step)\n"));
  c.hang_timeout_s = 600;  // longer than libaccel's collective deadline: the deadline follows
  plan = MakePlan(c, 0, "");
  EXPECT_EQ(plan->collective_timeout_ms, (600 + 30) * 1000);
  c.hang_timeout_s = 0;
  plan = MakePlan(c, 0, "");
  EXPECT_EQ(plan->hang_timeout_s, 0);
  EXPECT_EQ(plan->collective_timeout_ms, 0);
  EXPECT_THAT(FormatPlan(*plan, {"prog"}), HasSubstr("hang timeout:        off\n"));
  c.hang_timeout_s = 60;
  c.num_processes = 1;  // one process: nothing waits on it, the launcher execs it
  plan = MakePlan(c, 0, "");
  EXPECT_EQ(plan->hang_timeout_s, 0);
  EXPECT_EQ(CollectiveTimeoutMs(1e12), 1 << 30);  // clamped to what the worker reads
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
  plan->set_gradient_accumulation = true;  // the agent knows it came from the user
  const std::string text = FormatPlan(*plan, {"train.bin", "--epochs", "3"});
  EXPECT_THAT(text, HasSubstr("machines:            2 (this is machine 1)"));
  EXPECT_THAT(text, HasSubstr("processes/machine:   2 (world size 4)"));
  EXPECT_THAT(text, HasSubstr("ranks here:          2-3"));
  EXPECT_THAT(text, HasSubstr("devices:             cpu"));
  EXPECT_THAT(text, HasSubstr("distributed type:    MULTI_CPU"));
  EXPECT_THAT(text, HasSubstr("precision:           bf16"));
  EXPECT_THAT(text, HasSubstr("accumulation steps:  8"));
  EXPECT_THAT(text, HasSubstr("rendezvous:          10.0.0.1:29500"));
  EXPECT_THAT(text, HasSubstr("train.bin --epochs 3"));
  EXPECT_THAT(text, HasSubstr("MASTER_PORT:         a free port on machine 0\n"));
}

TEST(PlanTest, FormatPlanPrintsEveryRendezvousTimeout) {
  // A user report: torchrun's last call (30 s) and store read (60 s) were nowhere to be seen.
  Config c;
  c.num_machines = 2;
  c.num_processes = 4;
  c.min_machines = 1;
  c.use_cpu = true;
  c.rdzv_timeout_s = 120;
  c.rdzv_last_call_s = 2;
  auto plan = MakePlan(c, 0, "");
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::string text = FormatPlan(*plan, {"train.bin"});
  EXPECT_THAT(text, HasSubstr("rendezvous timeouts: join 120 s (rdzv_timeout"));
  EXPECT_THAT(text, HasSubstr("last call 2 s (rdzv_last_call), survivors of a restart 3 s"));
  EXPECT_THAT(text, HasSubstr("connect attempt 2 s"));
  EXPECT_THAT(text, HasSubstr("a worker's first store call 30 s, one store or report call 10 s"));
  EXPECT_THAT(text, HasSubstr("lost machine:        no heartbeat for 1.5 s (one every 0.5 s)"));
  EXPECT_THAT(text, HasSubstr("or after 30 s silent"));
  EXPECT_THAT(text, HasSubstr("collective timeout:  300 s"));
  c.num_processes = 1;
  c.num_machines = 1;
  c.min_machines = 0;
  plan = MakePlan(c, 0, "");
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT(FormatPlan(*plan, {"train.bin"}), Not(HasSubstr("rendezvous timeouts")));
}

TEST(PlanTest, FormatSaysWhatTheWorkersGetForTheirOwnSettings) {
  Config c;
  c.use_cpu = true;
  auto plan = MakePlan(c, 0, "");
  ASSERT_TRUE(plan.ok());
  // One process under accelerate's words: no MASTER_PORT, and the program's own accumulation.
  std::string text = FormatPlan(*plan, {"train.py"});
  EXPECT_THAT(text,
              HasSubstr("accumulation steps:  the program's own (not set on the launcher)\n"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("MASTER_PORT")));
  plan->set_gradient_accumulation = true;
  plan->gradient_accumulation_steps = 4;
  plan->torchrun_env = true;
  plan->fixed_master_port = 29555;
  text = FormatPlan(*plan, {"train.py"});
  EXPECT_THAT(text, HasSubstr("accumulation steps:  4\n"));
  EXPECT_THAT(text, HasSubstr("MASTER_PORT:         29555 (main_process_port)\n"));
  plan->fixed_master_port = 0;
  EXPECT_THAT(FormatPlan(*plan, {"train.py"}), HasSubstr("MASTER_PORT:         a free port\n"));
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
