// Every config file HF accelerate writes (tests/testing/accelerate_configs, one set per version
// family from 0.15 to 1.13+) validates without a problem and plans to the job accelerate would
// run, on this machine's kind (no GPU) and on a machine with GPUs.
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "gtest/gtest.h"
#include "launcher/agent/plan.h"
#include "launcher/config/diagnostics.h"
#include "launcher/config/resolve.h"
#include "tests/testing/files.h"
#include "tests/testing/skip.h"

namespace accel::launcher {
namespace {

struct Expected {
  DistributedType type;  // what Accelerator() will see
  int world = 1;
  bool cpu = true;
  MixedPrecision precision = MixedPrecision::kNo;
};

struct Golden {
  Expected without_gpu;  // this machine
  int gpus = 0;          // a machine with this many GPUs...
  Expected with_gpus;    // ...runs this
};

Expected No() { return {DistributedType::kNo, 1, true, MixedPrecision::kNo}; }
Expected Cpu(int world) { return {DistributedType::kMultiCpu, world, true, MixedPrecision::kNo}; }
Expected Gpu(int world, MixedPrecision precision) {
  return {world == 1 ? DistributedType::kNo : DistributedType::kMultiGpu, world, false, precision};
}

const std::map<std::string, Golden>& Goldens() {
  const auto fp16 = MixedPrecision::kFp16;
  static const auto* const goldens = new std::map<std::string, Golden>{
      {"accelerate-0.15_multi_cpu.yaml", {Cpu(2), 2, Cpu(2)}},
      {"accelerate-0.20_multi_cpu.yaml", {Cpu(2), 2, Cpu(2)}},
      {"accelerate-0.22_multi_cpu.yaml", {Cpu(2), 2, Cpu(2)}},
      {"accelerate-0.29_multi_cpu.yaml", {Cpu(2), 2, Cpu(2)}},
      {"accelerate-1.13_multi_cpu.yaml", {Cpu(2), 2, Cpu(2)}},
      {"accelerate-0.20_multi_gpu.yaml", {Cpu(2), 2, Gpu(2, fp16)}},
      {"accelerate-0.22_multi_gpu.yaml", {Cpu(2), 2, Gpu(2, fp16)}},
      {"accelerate-0.29_multi_gpu.yaml", {Cpu(2), 2, Gpu(2, fp16)}},
      {"accelerate-1.13_multi_gpu.yaml", {Cpu(2), 2, Gpu(2, fp16)}},
      {"accelerate-0.20_default_config.yaml", {No(), 1, No()}},
      {"accelerate-0.22_default_config.yaml", {No(), 1, No()}},
      {"accelerate-0.29_default_config.yaml", {No(), 1, No()}},
      {"accelerate-1.13_default_config.json", {No(), 1, No()}},
      {"accelerate-1.13_no_distributed_cpu.yaml", {No(), 1, No()}},
      {"accelerate-0.20_no_distributed_gpu_fp16.yaml", {No(), 1, Gpu(1, fp16)}},
      // bf16 runs on CPU too; only fp16 falls back to fp32 there.
      {"accelerate-1.13_two_machines_rank0.yaml",
       {{DistributedType::kMultiCpu, 4, true, MixedPrecision::kBf16},
        2,
        Gpu(4, MixedPrecision::kBf16)}},
  };
  return *goldens;
}

std::string GoldenDir() {
  const char* source = std::getenv("ACCEL_SOURCE_DIR");
  return source == nullptr ? "" : std::string(source) + "/tests/testing/accelerate_configs";
}

void ExpectPlan(const std::string& name, const Config& config, int gpus, const Expected& want) {
  SCOPED_TRACE(name + " with " + std::to_string(gpus) + " GPU(s)");
  absl::StatusOr<LaunchPlan> plan = MakePlan(config, gpus, gpus == 0 ? "no driver" : "");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->distributed_type, want.type);
  EXPECT_EQ(plan->world_size, want.world);
  EXPECT_EQ(plan->use_cpu, want.cpu);
  EXPECT_EQ(plan->precision, want.precision);
}

TEST(AccelerateConfigsTest, EveryGoldenConfigValidatesAndPlansAsAccelerateRunsIt) {
  if (GoldenDir().empty()) ACCEL_SKIP_OR_FAIL("ACCEL_SOURCE_DIR is not set (run through ctest)");
  int seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(GoldenDir())) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("accelerate-", 0) != 0) continue;
    ++seen;
    auto golden = Goldens().find(name);
    ASSERT_NE(golden, Goldens().end()) << name << " has no expectation here";
    accel::testing::TempDir home;
    ResolveOptions options;
    options.config_file = entry.path().string();
    options.env = FixedEnvironment({{"HOME", home.path()}});
    options.count_gpus = [](std::string*) { return 0; };
    options.detect_scheduler = false;
    const ResolvedConfig resolved = ResolveConfig(options);
    EXPECT_EQ(FormatDiagnostics(resolved.problems), "") << name;
    EXPECT_TRUE(resolved.notices.empty()) << name << ": " << resolved.notices.front();
    ExpectPlan(name, resolved.config, 0, golden->second.without_gpu);
    ExpectPlan(name, resolved.config, golden->second.gpus, golden->second.with_gpus);
  }
  EXPECT_EQ(seen, static_cast<int>(Goldens().size()));
}

TEST(AccelerateConfigsTest, TheTwoMachineConfigKeepsItsRendezvous) {
  if (GoldenDir().empty()) ACCEL_SKIP_OR_FAIL("ACCEL_SOURCE_DIR is not set (run through ctest)");
  accel::testing::TempDir home;
  ResolveOptions options;
  options.config_file = GoldenDir() + "/accelerate-1.13_two_machines_rank0.yaml";
  options.env = FixedEnvironment({{"HOME", home.path()}});
  options.count_gpus = [](std::string*) { return 2; };
  options.detect_scheduler = false;
  const ResolvedConfig resolved = ResolveConfig(options);
  EXPECT_EQ(resolved.config.num_machines, 2);
  EXPECT_EQ(resolved.config.machine_rank, 0);
  EXPECT_EQ(resolved.config.main_process_ip, "10.0.0.1");
  EXPECT_EQ(resolved.config.main_process_port, 29500);
  EXPECT_EQ(resolved.config.processes_per_machine(), 2);
}

}  // namespace
}  // namespace accel::launcher
