// The questionnaire driven through a stream: prompts, re-asking, warnings, and a written file
// that round-trips through the loader.
#include "launcher/commands/questionnaire.h"

#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/config/loader.h"
#include "launcher/config/schema.h"
#include "launcher/config/validate.h"
#include "launcher/config/writer.h"

namespace accel::launcher {
namespace {

using ::testing::HasSubstr;

std::vector<GpuInfo> TwoT4s() {
  GpuInfo t4;
  t4.name = "Tesla T4";
  t4.total_mib = 15360;
  t4.cc_major = 7;
  t4.cc_minor = 5;
  t4.sm_count = 40;
  t4.fp16 = true;
  std::vector<GpuInfo> gpus = {t4, t4};
  gpus[1].index = 1;
  return gpus;
}

TEST(QuestionnaireTest, TwoMachinesOfTwoGpusRoundTrips) {
  std::istringstream in(
      "0\n"          // this machine
      "multi-GPU\n"  // machine type, by name
      "2\n"          // machines
      "1\n"          // this machine's rank
      "10.0.0.1\n"   // main process IP
      "70000\n"      // bad port: asked again
      "29501\n"      // port
      "yes\n"        // same network
      "\n"           // rendezvous backend: static
      "3\n"          // total processes: not divisible by 2, asked again
      "\n"           // total: default 2 machines x 2 GPUs = 4
      "0,1\n"        // GPU ids
      "2\n"          // bf16
      "4\n"          // accumulation
      "yes\n");      // DeepSpeed
  std::ostringstream out;
  absl::StatusOr<Config> config = RunQuestionnaire(in, out, TwoT4s());
  ASSERT_TRUE(config.ok()) << config.status() << out.str();
  const std::string transcript = out.str();
  EXPECT_THAT(transcript, HasSubstr("Which type of machine are you using? ([0] No distributed "
                                    "training, [1] multi-CPU, [2] multi-GPU) [2]: "));
  EXPECT_THAT(transcript, HasSubstr("please answer an integer from 1 to 65535"));
  EXPECT_THAT(transcript, HasSubstr("the total must divide by the 2 machines"));
  EXPECT_THAT(transcript, HasSubstr("How many processes in total will you use across all "
                                    "machines? [4]: "));
  EXPECT_THAT(transcript, HasSubstr("→ 2 processes per machine"));
  EXPECT_THAT(transcript, HasSubstr("warning: bf16 needs compute capability >= 8.0; GPU 0 (Tesla "
                                    "T4) has 7.5"));
  EXPECT_THAT(transcript, HasSubstr("DeepSpeed is not supported by accel-launch"));

  EXPECT_EQ(config->distributed_type, DistributedType::kMultiGpu);
  EXPECT_EQ(config->num_machines, 2);
  EXPECT_EQ(config->machine_rank, 1);
  EXPECT_EQ(config->main_process_ip, "10.0.0.1");
  EXPECT_EQ(config->main_process_port, 29501);
  EXPECT_EQ(config->num_processes, 4);
  EXPECT_EQ(config->gpu_ids, "0,1");
  EXPECT_EQ(config->mixed_precision, MixedPrecision::kBf16);
  EXPECT_EQ(config->gradient_accumulation_steps, 4);

  const std::string yaml = ToConfigYaml(*config);
  EXPECT_EQ(yaml,
            "compute_environment: LOCAL_MACHINE\n"
            "debug: false\n"
            "distributed_type: MULTI_GPU\n"
            "downcast_bf16: 'no'\n"
            "enable_cpu_affinity: false\n"
            "gpu_ids: 0,1\n"
            "gradient_accumulation_steps: 4\n"
            "machine_rank: 1\n"
            "main_process_ip: 10.0.0.1\n"
            "main_process_port: 29501\n"
            "main_training_function: main\n"
            "mixed_precision: bf16\n"
            "num_machines: 2\n"
            "num_processes: 4\n"
            "rdzv_backend: static\n"
            "same_network: true\n"
            "tpu_env: []\n"
            "tpu_use_cluster: false\n"
            "tpu_use_sudo: false\n"
            "use_cpu: false\n");
  Config loaded;
  SourceMap sources;
  std::vector<Diagnostic> problems = ApplyConfigText("q.yaml", yaml, &loaded, &sources);
  std::vector<Diagnostic> invalid = ValidateConfig(loaded, sources);
  problems.insert(problems.end(), invalid.begin(), invalid.end());
  EXPECT_EQ(FormatDiagnostics(problems), "");
  EXPECT_EQ(ToConfigYaml(loaded), yaml);
}

TEST(QuestionnaireTest, SingleGpuDefaultsAreAccelerateCompatible) {
  GpuInfo t4 = TwoT4s()[0];
  std::istringstream in("\n\n\n1\n\n\n");  // defaults, but fp16
  std::ostringstream out;
  absl::StatusOr<Config> config = RunQuestionnaire(in, out, {t4});
  ASSERT_TRUE(config.ok()) << config.status() << out.str();
  EXPECT_EQ(config->distributed_type, DistributedType::kNo);
  EXPECT_EQ(config->num_processes, 1);
  EXPECT_EQ(config->mixed_precision, MixedPrecision::kFp16);
  // No additions at their defaults: accelerate (which rejects unknown keys) reads this file.
  EXPECT_THAT(ToConfigYaml(*config), ::testing::Not(HasSubstr("gradient_accumulation_steps")));
  EXPECT_THAT(ToConfigYaml(*config), HasSubstr("mixed_precision: fp16\n"));
}

TEST(QuestionnaireTest, EndOfInputIsAnError) {
  std::istringstream in("0\n2\n");
  std::ostringstream out;
  absl::StatusOr<Config> config = RunQuestionnaire(in, out, TwoT4s());
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(std::string(config.status().message()),
              HasSubstr("input ended before this question was answered: How many different "
                        "machines"));
}

TEST(QuestionnaireTest, SageMakerIsRefusedAndAskedAgain) {
  std::istringstream in("1\n0\n1\n\n\n\n\n\n");  // SageMaker, this machine, multi-CPU, ...
  std::ostringstream out;
  absl::StatusOr<Config> config = RunQuestionnaire(in, out, {});
  ASSERT_TRUE(config.ok()) << config.status() << out.str();
  EXPECT_THAT(out.str(), HasSubstr("Amazon SageMaker is not supported by accel-launch"));
  EXPECT_EQ(config->distributed_type, DistributedType::kMultiCpu);
  EXPECT_TRUE(config->use_cpu);
}

}  // namespace
}  // namespace accel::launcher
