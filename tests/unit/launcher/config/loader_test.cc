// Golden-string tests for config file loading and validation diagnostics: every error class,
// with the exact caret position.
#include "launcher/config/loader.h"

#include <cstdlib>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "launcher/config/schema.h"
#include "launcher/config/validate.h"
#include "launcher/config/writer.h"
#include "tests/testing/files.h"
#include "tests/testing/skip.h"
#include "tests/unit/launcher/config/problems.h"

namespace accel::launcher {
namespace {

TEST(ConfigLoaderTest, AcceptsWhatAccelerateWrites) {
  Config c;
  EXPECT_EQ(Problems(R"(compute_environment: LOCAL_MACHINE
debug: false
distributed_type: MULTI_GPU
downcast_bf16: 'no'
enable_cpu_affinity: false
gpu_ids: all
machine_rank: 0
main_training_function: main
mixed_precision: fp16
num_machines: 1
num_processes: 2
rdzv_backend: static
same_network: true
tpu_env: []
tpu_use_cluster: false
tpu_use_sudo: false
use_cpu: false
deepspeed_config: {}
fsdp_config: {}
megatron_lm_config: {}
dynamo_config:
  dynamo_backend: 'NO'
)",
                     &c),
            "");
  EXPECT_EQ(c.distributed_type, DistributedType::kMultiGpu);
  EXPECT_EQ(c.mixed_precision, MixedPrecision::kFp16);
  EXPECT_EQ(c.num_processes, 2);
  EXPECT_FALSE(c.downcast_bf16);
  EXPECT_EQ(c.gpu_ids, "all");
}

TEST(ConfigLoaderTest, ReadsAcceleratesOldSpellings) {
  Config c;
  EXPECT_EQ(Problems("distributed_type: NO\nfp16: true\ndynamo_backend: 'NO'\n", &c), "");
  EXPECT_EQ(c.mixed_precision, MixedPrecision::kFp16);
  EXPECT_EQ(Problems("dynamo_backend: inductor\n", &c), "");
  EXPECT_EQ(c.dynamo_backend, "INDUCTOR");
  EXPECT_EQ(Problems("dynamo_backend: INDUCTR\n"),
            "cfg.yaml:1:17: dynamo_backend: expected a torch dynamo backend (NO, INDUCTOR, EAGER, "
            "AOT_EAGER, CUDAGRAPHS, ...), got 'INDUCTR'; did you mean 'INDUCTOR'?\n"
            "dynamo_backend: INDUCTR\n"
            "                ^\n");
}

TEST(ConfigLoaderTest, ReadsOurAdditionsAndLists) {
  Config c;
  EXPECT_EQ(Problems("gradient_accumulation_steps: 4\nrdzv_timeout: 12.5\nmax_restarts: 2\n"
                     "gpu_ids: [0, 2]\nranks_filter: 0,1\nlog_dir: /tmp/logs\ntee: yes\n"
                     "num_processes: 2\n",
                     &c),
            "");
  EXPECT_EQ(c.gradient_accumulation_steps, 4);
  EXPECT_DOUBLE_EQ(c.rdzv_timeout_s, 12.5);
  EXPECT_EQ(c.max_restarts, 2);
  EXPECT_EQ(c.gpu_ids, "0,2");
  EXPECT_EQ(c.ranks_filter, (std::vector<int>{0, 1}));
  EXPECT_EQ(c.log_dir, "/tmp/logs");
  EXPECT_TRUE(c.tee);
}

TEST(ConfigLoaderTest, UnknownKeySuggestsTheClosest) {
  EXPECT_EQ(Problems("num_machines: 1\nnum_proceses: 2\n"),
            "cfg.yaml:2:1: unknown key 'num_proceses'; did you mean 'num_processes'?\n"
            "num_proceses: 2\n"
            "^\n");
  EXPECT_EQ(Problems("  \nfoo: 1\n"), "cfg.yaml:2:1: unknown key 'foo'\nfoo: 1\n^\n");
  EXPECT_EQ(Problems("num-processes: 1\n"),
            "cfg.yaml:1:1: unknown key 'num-processes'; did you mean 'num_processes'?\n"
            "num-processes: 1\n^\n");
}

TEST(ConfigLoaderTest, WrongTypesPointAtTheValue) {
  EXPECT_EQ(Problems("num_processes: two\nuse_cpu: maybe\nrdzv_timeout: -3\n"),
            "cfg.yaml:1:16: num_processes: expected an integer, got 'two'\n"
            "num_processes: two\n"
            "               ^\n"
            "cfg.yaml:2:10: use_cpu: expected true or false, got 'maybe'\n"
            "use_cpu: maybe\n"
            "         ^\n"
            "cfg.yaml:3:15: rdzv_timeout: expected a number of seconds >= 0, got '-3'\n"
            "rdzv_timeout: -3\n"
            "              ^\n");
  EXPECT_EQ(Problems("gpu_ids: first\n"),
            "cfg.yaml:1:10: gpu_ids: expected 'all' or GPU indices like 0,1, got 'first'\n"
            "gpu_ids: first\n"
            "         ^\n");
  EXPECT_EQ(Problems("num_machines: [1, 2]\n"),
            "cfg.yaml:1:15: num_machines: expected an integer, got a list\n"
            "num_machines: [1, 2]\n"
            "              ^\n");
}

TEST(ConfigLoaderTest, AWrongValueOfAnEmptyLookingKindPointsAfterTheColon) {
  EXPECT_EQ(Problems("num_processes: []\nuse_cpu: true\n"),
            "cfg.yaml:1:16: num_processes: expected an integer, got a list\n"
            "num_processes: []\n"
            "               ^\n");
}

TEST(ConfigLoaderTest, EnumsSuggestAndRejectUnsupported) {
  EXPECT_EQ(Problems("distributed_type: MULTI_GPUS\n"),
            "cfg.yaml:1:19: distributed_type: expected NO, MULTI_GPU or MULTI_CPU, got "
            "'MULTI_GPUS'; did you mean 'MULTI_GPU'?\n"
            "distributed_type: MULTI_GPUS\n"
            "                  ^\n");
  EXPECT_EQ(Problems("distributed_type: XLA\n"),
            "cfg.yaml:1:19: distributed_type: distributed_type XLA is not supported by "
            "accel-launch (supported: NO, MULTI_GPU, MULTI_CPU, and FSDP, DEEPSPEED, MEGATRON_LM "
            "for Python scripts)\n"
            "distributed_type: XLA\n"
            "                  ^\n");
  EXPECT_EQ(Problems("distributed_type: DEEPSPEED\nmixed_precision: fp8\n"), "");
}

TEST(ConfigLoaderTest, NonEmptyUnsupportedSectionIsAnError) {
  EXPECT_EQ(Problems("tp_config:\n  tp_size: 2\nfsdp_config: {}\n"),
            "cfg.yaml:2:3: tp_config: tensor parallelism (tp_config) is not supported by "
            "accel-launch; remove this section or leave it empty ({})\n"
            "  tp_size: 2\n"
            "  ^\n");
  EXPECT_EQ(Problems("fsdp_config: {fsdp_sharding_strategy: FULL_SHARD}\n"), "");
  EXPECT_EQ(Problems("fsdp_config: {fsdp_sharding_strategy: [1, {a: 2}]}\n"),
            "cfg.yaml:1:14: fsdp_config: fsdp_sharding_strategy: expected a list of single "
            "values\n"
            "fsdp_config: {fsdp_sharding_strategy: [1, {a: 2}]}\n"
            "             ^\n");
}

TEST(ConfigLoaderTest, OutOfRangeValues) {
  EXPECT_EQ(Problems("num_machines: 2\nmachine_rank: 2\nmain_process_ip: 10.0.0.1\n"
                     "main_process_port: 70000\nnum_processes: 2\n"),
            "cfg.yaml:2:15: machine_rank 2 is out of range: it must be less than num_machines (2)\n"
            "machine_rank: 2\n"
            "              ^\n"
            "cfg.yaml:4:20: main_process_port 70000 is out of range 0..65535\n"
            "main_process_port: 70000\n"
            "                   ^\n");
  EXPECT_EQ(Problems("num_processes: -1\nmain_process_port: -5\n"),
            "cfg.yaml:1:16: num_processes must be at least 1, got -1\n"
            "num_processes: -1\n"
            "               ^\n"
            "cfg.yaml:2:20: main_process_port -5 is out of range 0..65535\n"
            "main_process_port: -5\n"
            "                   ^\n");
}

TEST(ConfigLoaderTest, NotDivisibleAndMissingMainProcessIp) {
  EXPECT_EQ(Problems("num_machines: 2\nnum_processes: 3\nmain_process_port: 29500\n"),
            "cfg.yaml:2:16: num_processes 3 is not divisible by num_machines 2 (num_processes is "
            "the total over all machines; each machine runs the same number)\n"
            "num_processes: 3\n"
            "               ^\n"
            "cfg.yaml:1:15: main_process_ip is required when num_machines is 2 (the address of "
            "machine 0; set main_process_ip or --main_process_ip)\n"
            "num_machines: 2\n"
            "              ^\n");
}

TEST(ConfigLoaderTest, MissingSpaceAfterColonIsReportedAndTheRestStillChecked) {
  EXPECT_EQ(Problems("num_machines: 1\nnum_processes:2\nmixed_precison: fp16\n"),
            "cfg.yaml:2:15: malformed YAML: missing space after ':' (write 'num_processes: 2')\n"
            "num_processes:2\n"
            "              ^\n"
            "cfg.yaml:3:1: unknown key 'mixed_precison'; did you mean 'mixed_precision'?\n"
            "mixed_precison: fp16\n"
            "^\n");
}

TEST(ConfigLoaderTest, MalformedYamlHasAPosition) {
  const std::string out = Problems("num_machines: 1\n  num_processes: 2\n");
  EXPECT_EQ(out.rfind("cfg.yaml:2:", 0), 0u) << out;
  EXPECT_NE(out.find("malformed YAML: "), std::string::npos) << out;
  EXPECT_EQ(Problems("gpu_ids: [0, 1\n").rfind("cfg.yaml:", 0), 0u);
  EXPECT_EQ(Problems("- a\n- b\n"),
            "cfg.yaml:1:1: expected a mapping of config keys (key: value per line)\n- a\n^\n");
}

TEST(ConfigLoaderTest, DuplicateKey) {
  EXPECT_EQ(Problems("num_processes: 1\nnum_processes: 1\n"),
            "cfg.yaml:2:1: duplicate key 'num_processes' (first set on line 1)\n"
            "num_processes: 1\n"
            "^\n");
}

TEST(ConfigLoaderTest, AllProblemsAtOnce) {
  const std::string out =
      Problems("num_machines: 0\nnum_processes: x\nfoo: 1\nipex_config: {ipex: true}\n");
  EXPECT_NE(out.find("cfg.yaml:1:15: num_machines must be at least 1, got 0"), std::string::npos)
      << out;
  EXPECT_NE(out.find("cfg.yaml:2:16: num_processes: expected an integer"), std::string::npos);
  EXPECT_NE(out.find("cfg.yaml:3:1: unknown key 'foo'"), std::string::npos);
  EXPECT_NE(out.find("cfg.yaml:4:14: ipex_config: IPEX"), std::string::npos) << out;
}

TEST(ConfigLoaderTest, RejectedValueDoesNotCauseFollowUpErrors) {
  // num_machines is unusable, so "machine_rank 1 >= num_machines" would only be noise.
  EXPECT_EQ(Problems("num_machines: two\nmachine_rank: 1\nnum_processes: 3\n"),
            "cfg.yaml:1:15: num_machines: expected an integer, got 'two'\n"
            "num_machines: two\n"
            "              ^\n");
}

// Every key of the schema: `key: null`, `key: ~` and `key:` mean "unset", as accelerate's loader
// reads them, and leave the key's default in place without a problem.
TEST(ConfigLoaderTest, NullTildeAndEmptyAreUnsetForEveryKey) {
  const std::string defaults = ToConfigYaml(Config{});
  for (const KeySpec& spec : Schema()) {
    for (const char* unset : {" null", " ~", "", " Null", " NULL"}) {
      const std::string text = absl::StrCat(spec.name, ":", unset, "\n");
      Config c;
      SourceMap sources;
      EXPECT_EQ(FormatDiagnostics(ApplyConfigText("cfg.yaml", text, &c, &sources)), "") << text;
      EXPECT_EQ(ToConfigYaml(c), defaults) << text;
      EXPECT_EQ(sources.count(std::string(spec.name)), 0u) << text << " is not the default's";
    }
  }
}

// What accelerate up to 0.15 wrote for one machine: every unset key as null.
TEST(ConfigLoaderTest, AcceleratesNullsForOneMachineValidate) {
  Config c;
  EXPECT_EQ(Problems("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_CPU\n"
                     "gpu_ids: null\nmachine_rank: 0\nmain_process_ip: null\n"
                     "main_process_port: null\nnum_machines: 1\nnum_processes: 2\n"
                     "command_file: null\ncommands: null\ntpu_name: null\nuse_cpu: true\n",
                     &c),
            "");
  EXPECT_EQ(c.main_process_port, 0);
  EXPECT_EQ(c.gpu_ids, "all");
  EXPECT_EQ(c.num_processes, 2);
}

TEST(ConfigLoaderTest, JsonAsAccelerateConfigDefaultWritesIt) {
  Config c;
  SourceMap sources;
  const char* json = R"({
  "compute_environment": "LOCAL_MACHINE",
  "debug": false,
  "distributed_type": "MULTI_CPU",
  "downcast_bf16": false,
  "main_process_port": null,
  "mixed_precision": "bf16",
  "num_processes": 2,
  "use_cpu": true
})";
  for (const char* path : {"default_config.yaml", "cfg.json"}) {
    c = Config{};
    EXPECT_EQ(FormatDiagnostics(ApplyConfigText(path, json, &c, &sources)), "") << path;
    EXPECT_EQ(c.distributed_type, DistributedType::kMultiCpu);
    EXPECT_EQ(c.mixed_precision, MixedPrecision::kBf16);
    EXPECT_EQ(c.num_processes, 2);
    EXPECT_TRUE(c.use_cpu);
    EXPECT_EQ(sources.at("num_processes").line, 8);
  }
  EXPECT_EQ(FormatDiagnostics(ApplyConfigText("bad.json", "{\"num_processes\": 2\n", &c, &sources)),
            "bad.json:1:20: malformed JSON: end of map flow not found\n"
            "{\"num_processes\": 2\n"
            "                   ^\n");
}

TEST(ConfigLoaderTest, AnEmptyFileIsSaidToBeEmpty) {
  for (const char* text : {"", "\n# nothing here\n", "{}"}) {
    Config c;
    SourceMap sources;
    bool empty = false;
    EXPECT_EQ(FormatDiagnostics(ApplyConfigText("cfg.yaml", text, &c, &sources, &empty)), "");
    EXPECT_TRUE(empty) << text;
  }
  Config c;
  SourceMap sources;
  bool empty = true;
  ApplyConfigText("cfg.yaml", "main_process_ip: null\n", &c, &sources, &empty);
  EXPECT_FALSE(empty);  // a key, unset: not an empty file
}

TEST(ConfigLoaderTest, DynamoConfigSetsTheDynamoKeys) {
  Config c;
  EXPECT_EQ(Problems("dynamo_config:\n  dynamo_backend: INDUCTOR\n  dynamo_mode: reduce-overhead\n"
                     "  dynamo_use_fullgraph: true\n  dynamo_use_dynamic: false\n",
                     &c),
            "");
  EXPECT_EQ(c.dynamo_backend, "INDUCTOR");
  EXPECT_EQ(c.dynamo_mode, "reduce-overhead");
  EXPECT_TRUE(c.dynamo_use_fullgraph);
  EXPECT_EQ(Problems("dynamo_config:\n  dynamo_backnd: EAGER\n"),
            "cfg.yaml:2:3: dynamo_config: unknown dynamo_config key 'dynamo_backnd'; did you mean "
            "'dynamo_backend'?\n"
            "  dynamo_backnd: EAGER\n"
            "  ^\n");
}

TEST(ConfigLoaderTest, UnreadableFile) {
  Config c;
  SourceMap sources;
  std::vector<Diagnostic> problems = ApplyConfigFile("/nonexistent/cfg.yaml", &c, &sources);
  EXPECT_EQ(FormatDiagnostics(problems),
            "/nonexistent/cfg.yaml: read config file: No such file or directory\n");
}

TEST(ConfigLoaderTest, ShippedConfigsAreValid) {
  const char* source_dir = std::getenv("ACCEL_SOURCE_DIR");
  if (source_dir == nullptr) ACCEL_SKIP_OR_FAIL("ACCEL_SOURCE_DIR is not set (run through ctest)");
  int files = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(source_dir) + "/configs")) {
    if (entry.path().extension() != ".yaml") continue;
    ++files;
    Config c;
    SourceMap sources;
    std::vector<Diagnostic> problems = ApplyConfigFile(entry.path().string(), &c, &sources);
    std::vector<Diagnostic> invalid = ValidateConfig(c, sources);
    problems.insert(problems.end(), invalid.begin(), invalid.end());
    EXPECT_EQ(FormatDiagnostics(problems), "") << entry.path();
  }
  EXPECT_GT(files, 0);
}

}  // namespace
}  // namespace accel::launcher
