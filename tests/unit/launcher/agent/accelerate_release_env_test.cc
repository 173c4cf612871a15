// The workers' variables that differ between accelerate releases in ways a per-release default
// cannot express (each checked against that release's own launch code by the golden_all files,
// tests/testing/accelerate_env): 1.8-1.12's OpenMP/CCL variables, fp8_config before 1.4, and the
// parallelism variables of 1.10/1.11.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "launcher/agent/worker_env.h"
#include "launcher/config/accelerate_args.h"
#include "launcher/config/config.h"
#include "launcher/config/yaml.h"

namespace accel::launcher {
namespace {

using Env = std::map<std::string, std::string>;

Env EnvOf(const Config& config, int gpus) {
  absl::StatusOr<LaunchPlan> plan = MakePlan(config, gpus, "no driver");
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (!plan.ok()) return {};
  RendezvousResult rdzv;
  rdzv.world_size = plan->world_size;
  Env out;
  for (const std::string& e : WorkerEnv(*plan, rdzv, 0, WorkerFiles{"/e", "", ""}, {})) {
    out[e.substr(0, e.find('='))] = e.substr(e.find('=') + 1);
  }
  return out;
}

void SetSection(Config* config, const std::string& section, const std::string& yaml) {
  YamlValue value;
  YamlError error;
  ASSERT_TRUE(ParseYaml(yaml, &value, &error)) << error.message;
  ASSERT_TRUE(SetAccelerateSection(value, section, config).ok());
}

std::string Get(const Env& env, const std::string& name) {
  auto it = env.find(name);
  return it == env.end() ? "<unset>" : it->second;
}

TEST(AccelerateReleaseEnvTest, SimpleLauncherSetsOpenMpAndCclVariablesFromOnePointEightToTwelve) {
  struct Case {
    std::string version;
    int processes;
    std::string kmp, ccl;
  };
  const std::string pin = "granularity=fine,compact,1,0";
  for (const Case& c : std::vector<Case>{{"1.7", 2, "<unset>", "<unset>"},
                                         {"1.8", 2, pin, "0"},
                                         {"1.12", 2, pin, "0"},
                                         {"1.12", 1, pin, "<unset>"},
                                         {"1.13", 2, "<unset>", "<unset>"},
                                         {"1.14", 2, "<unset>", "<unset>"}}) {
    Config config;
    config.use_cpu = true;
    config.num_processes = c.processes;
    config.accelerate_version = c.version;
    const Env env = EnvOf(config, 0);
    EXPECT_EQ(Get(env, "KMP_AFFINITY"), c.kmp) << c.version << " x " << c.processes;
    EXPECT_EQ(Get(env, "KMP_BLOCKTIME"), c.kmp == pin ? "1" : "<unset>") << c.version;
    EXPECT_EQ(Get(env, "CCL_WORKER_COUNT"), c.ccl) << c.version << " x " << c.processes;
  }
}

TEST(AccelerateReleaseEnvTest, ThePluginLaunchersNeverSetThem) {
  Config config;
  config.num_processes = 2;
  config.accelerate_version = "1.12";
  config.accelerate_plugin = "FSDP";
  const Env env = EnvOf(config, 2);
  EXPECT_EQ(Get(env, "KMP_AFFINITY"), "<unset>");
  EXPECT_EQ(Get(env, "CCL_WORKER_COUNT"), "<unset>");
}

TEST(AccelerateReleaseEnvTest, BeforeOnePointFourTheFileFp8SectionIsNotRead) {
  for (const std::string version : {"1.3", "1.4"}) {
    Config config;
    config.num_processes = 2;
    config.fp8 = true;
    config.accelerate_version = version;
    SetSection(&config, "fp8_config", "backend: TE\nfp8_format: HYBRID\n");
    SetSection(&config, "fp8_config", "fp8_opt_level=O1");  // an option: read by every release
    const Env env = EnvOf(config, 2);
    const bool reads_file = version == "1.4";
    EXPECT_EQ(Get(env, "ACCELERATE_FP8_BACKEND"), reads_file ? "TE" : "<unset>") << version;
    EXPECT_EQ(Get(env, "ACCELERATE_FP8_FORMAT"), reads_file ? "HYBRID" : "E4M3") << version;
    EXPECT_EQ(Get(env, "ACCELERATE_FP8_OPT_LEVEL"), "O1") << version;
    // The linear-precision tuple: one variable before 1.4, three from 1.4.
    EXPECT_EQ(Get(env, "ACCELERATE_FP8_OVERRIDE_LINEAR_PRECISION"),
              reads_file ? "<unset>" : "(False, False, False)")
        << version;
    EXPECT_EQ(Get(env, "ACCELERATE_FP8_OVERRIDE_FPROP"), reads_file ? "False" : "<unset>")
        << version;
  }
}

TEST(AccelerateReleaseEnvTest, ParallelismBackendsAndSequenceParallelismFromOnePointTwelve) {
  for (const std::string version : {"1.11", "1.12"}) {
    Config config;
    config.num_processes = 2;
    config.accelerate_version = version;
    config.accelerate_plugin = "FSDP";
    SetSection(&config, "parallelism_config",
               "parallelism_config_dp_shard_size: 2\nparallelism_config_cp_size: 1\n");
    const Env env = EnvOf(config, 2);
    const bool backends = version == "1.12";
    EXPECT_EQ(Get(env, "PARALLELISM_CONFIG_DP_SHARD_SIZE"), "2") << version;
    EXPECT_EQ(Get(env, "PARALLELISM_CONFIG_CP_BACKEND") != "<unset>", backends) << version;
    EXPECT_EQ(Get(env, "PARALLELISM_CONFIG_SP_SIZE") != "<unset>", backends) << version;
    EXPECT_EQ(Get(env, "PARALLELISM_CONFIG_SP_BACKEND") != "<unset>", backends) << version;
  }
}

}  // namespace
}  // namespace accel::launcher
