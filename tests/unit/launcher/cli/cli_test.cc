// RunCli end to end with injected streams, environment, devices and a fake agent.
#include "launcher/cli/cli.h"

#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/defaults.h"
#include "common/exit_codes.h"
#include "common/seconds.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/config/loader.h"
#include "tests/testing/files.h"

namespace accel::launcher {
namespace {

using accel::testing::TempDir;
using ::testing::HasSubstr;

class CliTest : public ::testing::Test {
 protected:
  int Run(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
    out_.str("");
    err_.str("");
    env.emplace("HOME", home_.path());
    CliContext context;
    context.in = &in_;
    context.out = &out_;
    context.err = &err_;
    context.env = FixedEnvironment(env);
    context.count_gpus = [](std::string* why) {
      *why = "cuInit: CUDA driver version is insufficient";
      return 0;
    };
    context.detect_devices = [] {
      DeviceReport report;
      report.gpu_error = "cuInit: CUDA driver version is insufficient";
      return report;
    };
    context.run_agent = [this](const LaunchRequest& request) {
      requests_.push_back(request);
      return kExitOk;
    };
    return RunCli(args, context);
  }

  TempDir home_;
  std::istringstream in_;
  std::ostringstream out_;
  std::ostringstream err_;
  std::vector<LaunchRequest> requests_;
};

TEST_F(CliTest, ProgramAndItsArgumentsPassThrough) {
  ASSERT_EQ(Run({"--num_processes", "2", "--cpu", "./train.bin", "--num_processes", "9", "-v"}),
            kExitOk)
      << err_.str();
  ASSERT_EQ(requests_.size(), 1u);
  const LaunchRequest& r = requests_[0];
  EXPECT_EQ(r.argv, (std::vector<std::string>{"./train.bin", "--num_processes", "9", "-v"}));
  EXPECT_EQ(r.config.num_processes, 2);
  EXPECT_TRUE(r.config.use_cpu);
  EXPECT_EQ(r.config.distributed_type, DistributedType::kMultiCpu);
  EXPECT_FALSE(r.dry_run);
}

TEST_F(CliTest, LaunchSubcommandDashesAndBooleanForms) {
  ASSERT_EQ(Run({"launch", "--dry_run", "--num-processes=4", "--multi_gpu", "--mixed-precision",
                 "fp16", "--debug", "--same_network=false", "--no-tee", "--ranks_filter", "0,1",
                 "--hang_timeout", "30", "--strict", "--log_dir", "/tmp/l", "--", "prog", "a"}),
            0)
      << err_.str();
  ASSERT_EQ(requests_.size(), 1u);
  const Config& c = requests_[0].config;
  EXPECT_TRUE(requests_[0].dry_run);
  EXPECT_EQ(requests_[0].argv, (std::vector<std::string>{"prog", "a"}));
  EXPECT_EQ(c.num_processes, 4);
  EXPECT_EQ(c.distributed_type, DistributedType::kMultiGpu);
  EXPECT_EQ(c.mixed_precision, MixedPrecision::kFp16);
  EXPECT_TRUE(c.debug);
  EXPECT_FALSE(c.same_network);
  EXPECT_FALSE(c.tee);
  EXPECT_EQ(c.ranks_filter, (std::vector<int>{0, 1}));
  EXPECT_DOUBLE_EQ(c.hang_timeout_s, 30);
  EXPECT_TRUE(c.strict);
  EXPECT_EQ(c.log_dir, "/tmp/l");
}

TEST_F(CliTest, LastFormWins) {
  ASSERT_EQ(Run({"--use_cpu", "--use-cpu=false", "p"}), kExitOk);
  EXPECT_FALSE(requests_.at(0).config.use_cpu);
  ASSERT_EQ(Run({"--no-use_cpu", "--cpu", "p"}), kExitOk);
  EXPECT_TRUE(requests_.at(1).config.use_cpu);
  ASSERT_EQ(Run({"--num_processes", "2", "--num-processes=3", "--config_file", "/nonexistent",
                 "--config_file", "/dev/null", "p"}),
            0)
      << err_.str();
  EXPECT_EQ(requests_.at(2).config.num_processes, 3);
  EXPECT_EQ(requests_.at(2).config_path, "/dev/null");
}

TEST_F(CliTest, UnknownOptionSuggestsAndLaunchesNothing) {
  EXPECT_EQ(Run({"--num_proceses", "2", "p"}), kExitUsage);
  EXPECT_EQ(err_.str(),
            "accel-launch: unknown option '--num_proceses'; did you mean '--num_processes'? "
            "(see `accel-launch launch --help`)\n");
  EXPECT_TRUE(requests_.empty());
  // Even when the program's own arguments contain "--".
  EXPECT_EQ(Run({"--num_processes", "2", "--bogus", "prog", "--", "x"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("unknown option '--bogus'"));
  EXPECT_EQ(Run({"---", "prog"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("unknown option '---'"));
  // After "--", a word starting with '-' is the program.
  EXPECT_EQ(Run({"--", "-prog", "x"}), kExitOk) << err_.str();
  EXPECT_EQ(requests_.at(0).argv, (std::vector<std::string>{"-prog", "x"}));
}

TEST_F(CliTest, InvalidConfigIsAUsageErrorWithAllProblems) {
  const std::string file = home_.Write("bad.yaml", "num_processes:3\nnum_machines: 2\n");
  EXPECT_EQ(Run({"--config_file", file, "--machine_rank", "5", "p"}), kExitUsage);
  EXPECT_TRUE(requests_.empty());
  // File positions first, in order; then the rest.
  EXPECT_EQ(err_.str(),
            file +
                ":1:15: malformed YAML: missing space after ':' (write 'num_processes: 3')\n"
                "num_processes:3\n"
                "              ^\n" +
                file +
                ":1:15: num_processes 3 is not divisible by num_machines 2 (num_processes "
                "is the total over all machines; each machine runs the same number)\n"
                "num_processes:3\n"
                "              ^\n" +
                file +
                ":2:15: main_process_ip is required when num_machines is 2 (the address of "
                "machine 0; set main_process_ip or --main_process_ip)\n"
                "num_machines: 2\n"
                "              ^\n" +
                file +
                ":2:15: main_process_port 0 (a free port) only works on one machine; choose a "
                "port that every machine can reach, e.g. " +
                std::to_string(defaults::kMainProcessPort) +
                "\n"
                "num_machines: 2\n"
                "              ^\n"
                "--machine_rank 5: machine_rank 5 is out of range: it must be less than "
                "num_machines (2)\n"
                "accel-launch: 5 problems in the configuration; nothing was launched\n");
}

TEST_F(CliTest, NoProgramIsAUsageError) {
  EXPECT_EQ(Run({"launch", "--num_processes", "2"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("no program to launch"));
  EXPECT_EQ(Run({}), kExitUsage);
}

TEST_F(CliTest, HelpListsEveryKeyAsAFlag) {
  EXPECT_EQ(Run({"launch", "--help"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("--num_processes"));
  EXPECT_THAT(out_.str(), HasSubstr("--gradient_accumulation_steps"));
  EXPECT_THAT(out_.str(), HasSubstr("--no-use_cpu"));
  EXPECT_EQ(Run({"--version"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("accel-launch 0."));
}

TEST_F(CliTest, ValidatePrintsOkAndTheResolvedConfig) {
  const std::string file = home_.Write("c.yaml", "num_processes: 2\nmixed_precision: fp16\n");
  EXPECT_EQ(Run({"config", "validate", "--config_file", file}, {{"ACCEL_MAX_RESTARTS", "3"}}),
            kExitOk)
      << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("ok: " + file + "\n"));
  EXPECT_THAT(out_.str(), HasSubstr("  num_processes: 2  # " + file + ":1\n"));
  EXPECT_THAT(out_.str(), HasSubstr("  mixed_precision: fp16  # " + file + ":2\n"));
  EXPECT_THAT(out_.str(), HasSubstr("  max_restarts: 3  # ACCEL_MAX_RESTARTS=3\n"));
  EXPECT_THAT(out_.str(),
              HasSubstr(absl::StrCat("  rdzv_timeout: ", ToSeconds(defaults::kRdzvTimeout),
                                     "  # default\n")));
}

TEST_F(CliTest, ValidateReportsProblemsAsAUsageError) {
  const std::string file = home_.Write("c.yaml", "num_processes: -2\n");
  EXPECT_EQ(Run({"config", "validate", "--config_file", file}), kExitUsage);
  EXPECT_EQ(out_.str(), "");
  EXPECT_THAT(err_.str(), HasSubstr(file + ":1:16: num_processes must be at least 1, got -2\n"));
  EXPECT_THAT(err_.str(), HasSubstr("1 problem in the configuration; nothing would be launched"));
  EXPECT_EQ(Run({"config", "validate", "prog"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("unexpected argument 'prog'"));
}

TEST_F(CliTest, ConfigDefaultWritesAFileTheLoaderAccepts) {
  const std::string path = home_.path() + "/out/default.yaml";
  EXPECT_EQ(Run({"config", "default", "--config_file", path}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "accel-launch: configuration saved at " + path + "\n");
  const std::string text = testing::ReadFile(path);
  EXPECT_THAT(text, HasSubstr("use_cpu: true\n"));
  EXPECT_THAT(text, HasSubstr("mixed_precision: 'no'\n"));
  EXPECT_EQ(Run({"config", "validate", "--config_file", path}), kExitOk) << err_.str();
}

TEST_F(CliTest, ConfigWritesToAcceleratesDefaultPath) {
  in_.str("\n\n\n\n\n");  // defaults: this machine, no distributed training, no, 1, no
  EXPECT_EQ(Run({"config"}, {{"HF_HOME", home_.path() + "/hf"}}), kExitOk) << err_.str();
  const std::string path = home_.path() + "/hf/accelerate/default_config.yaml";
  EXPECT_THAT(out_.str(), HasSubstr("accel-launch: configuration saved at " + path + "\n"));
  // Lookup finds it.
  EXPECT_EQ(Run({"config", "validate"}, {{"HF_HOME", home_.path() + "/hf"}}), kExitOk)
      << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("ok: " + path + "\n"));
}

TEST_F(CliTest, EnvWithoutGpuSaysSoAndExitsZero) {
  EXPECT_EQ(Run({"env"}), kExitOk);
  EXPECT_THAT(out_.str(),
              HasSubstr("GPUs: no GPU (cuInit: CUDA driver version is insufficient)\n"));
  EXPECT_THAT(out_.str(), HasSubstr("accel-launch version: "));
  EXPECT_THAT(out_.str(), HasSubstr("Config file: none (defaults for this machine)\n"));
  EXPECT_EQ(Run({"env", "--json"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("\"gpus\": [], \"gpu_error\": \"cuInit: CUDA driver version "
                                    "is insufficient\""));
}

}  // namespace
}  // namespace accel::launcher
