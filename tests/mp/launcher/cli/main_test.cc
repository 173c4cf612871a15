// Runs the accel-launch binary as a user would, with a clean environment and a temporary HOME.
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "common/device_info.h"
#include "common/exit_codes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/files.h"

namespace accel::launcher {
namespace {

using accel::testing::TempDir;
using ::testing::HasSubstr;
using testing::ReadFile;

struct Result {
  int code = -1;  // ExitCodeFromWaitStatus of std::system's status
  std::string out;
  std::string err;
};

class CliBinaryTest : public ::testing::Test {
 protected:
  // Runs `accel-launch <args>` under `env -i` with HOME set to a temporary directory.
  Result Run(const std::string& args, const std::string& stdin_text = "") {
    const std::string in = dir_.Write("stdin.txt", stdin_text);
    const std::string command = "env -i PATH=/usr/bin:/bin HOME=" + dir_.path() + " timeout 60 " +
                                ACCEL_LAUNCH_BIN + " " + args + " <" + in + " >" + dir_.path() +
                                "/out.txt 2>" + dir_.path() + "/err.txt";
    Result result;
    const int status = std::system(command.c_str());
    result.code = ExitCodeFromWaitStatus(status);
    result.out = ReadFile(dir_.path() + "/out.txt");
    result.err = ReadFile(dir_.path() + "/err.txt");
    return result;
  }

  TempDir dir_;
};

TEST_F(CliBinaryTest, EnvReportsVersionsAndDevicesAndExitsZero) {
  Result r = Run("env");
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("accel-launch version: "));
  EXPECT_THAT(r.out, HasSubstr("\nCUDA runtime: "));
  EXPECT_THAT(r.out, HasSubstr("\nNCCL: "));
  EXPECT_THAT(r.out, HasSubstr("\ngRPC: 1."));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("\nGPUs: (no GPU \\(.+\\)|[0-9]+)\n"));
  EXPECT_THAT(r.out, HasSubstr("Config file: none (defaults for this machine)\n"));
  Result json = Run("env --json");
  ASSERT_EQ(json.code, kExitOk) << json.err;
  EXPECT_EQ(json.out.rfind("{\"accel_launch_version\": ", 0), 0u) << json.out;
}

TEST_F(CliBinaryTest, LauncherDoesNotLinkLibTorch) {
  const std::string command =
      std::string("ldd ") + ACCEL_LAUNCH_BIN + " > " + dir_.path() + "/ldd.txt";
  ASSERT_EQ(std::system(command.c_str()), 0);
  const std::string libraries = ReadFile(dir_.path() + "/ldd.txt");
  EXPECT_THAT(libraries, HasSubstr("libc.so"));
  EXPECT_THAT(libraries, ::testing::Not(HasSubstr("libtorch")));
  EXPECT_THAT(libraries, ::testing::Not(HasSubstr("libc10")));
}

TEST_F(CliBinaryTest, ValidateGoodAndBadFiles) {
  const std::string good = dir_.Write("good.yaml", "num_processes: 2\nuse_cpu: true\n");
  Result ok = Run("config validate --config_file " + good);
  ASSERT_EQ(ok.code, kExitOk) << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("ok: " + good + "\n"));
  EXPECT_THAT(ok.out, HasSubstr("  num_processes: 2  # " + good + ":1\n"));

  const std::string bad = dir_.Write("bad.yaml", "num_processes: 2\nnum_machines:2\nfoo: 1\n");
  Result problems = Run("config validate --config_file " + bad);
  EXPECT_EQ(problems.code, kExitUsage);
  EXPECT_THAT(problems.err,
              HasSubstr(bad + ":2:14: malformed YAML: missing space after ':' (write "
                              "'num_machines: 2')\nnum_machines:2\n             ^\n"));
  EXPECT_THAT(problems.err, HasSubstr(bad + ":3:1: unknown key 'foo'\n"));
}

TEST_F(CliBinaryTest, InvalidConfigLaunchesNothing) {
  const std::string bad = dir_.Write("bad.yaml", "num_processes: 3\nnum_machines: 2\n");
  const std::string marker = dir_.path() + "/ran";
  Result r = Run("--config_file " + bad + " /usr/bin/touch " + marker);
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("nothing was launched"));
  EXPECT_NE(access(marker.c_str(), F_OK), 0) << "the program ran";
}

TEST_F(CliBinaryTest, PipedQuestionnaireWritesAFileThatValidates) {
  const std::string path = dir_.path() + "/q.yaml";
  // this machine, multi-CPU, 1 machine, 2 processes, no mixed precision, 2 steps, no DeepSpeed
  Result r = Run("config --config_file " + path, "0\n1\n1\n2\n\n2\nno\n");
  ASSERT_EQ(r.code, kExitOk) << r.err << r.out;
  EXPECT_THAT(r.out, HasSubstr("accel-launch: configuration saved at " + path + "\n"));
  EXPECT_THAT(ReadFile(path), HasSubstr("distributed_type: MULTI_CPU\n"));
  Result v = Run("config validate --config_file " + path);
  EXPECT_EQ(v.code, kExitOk) << v.err;
  EXPECT_THAT(v.out, HasSubstr("  gradient_accumulation_steps: 2  # " + path));
}

TEST_F(CliBinaryTest, ConfigDefaultThenDryRun) {
  Result d = Run("config default");
  ASSERT_EQ(d.code, kExitOk) << d.err;
  const std::string path = dir_.path() + "/.cache/huggingface/accelerate/default_config.yaml";
  EXPECT_THAT(d.out, HasSubstr("configuration saved at " + path));
  const std::string marker = dir_.path() + "/ran";
  Result dry = Run("launch --dry_run /usr/bin/touch " + marker);
  EXPECT_EQ(dry.code, kExitOk) << dry.err;
  EXPECT_NE(access(marker.c_str(), F_OK), 0) << "--dry_run started the program";
}

// What accel-launch writes, accelerate reads: PyYAML's safe_load gives the types accelerate's
// ClusterConfig expects, and no key it would refuse (tests/testing/check_accelerate_yaml.py).
TEST_F(CliBinaryTest, WrittenConfigsLoadInPyYamlWithAcceleratesTypes) {
  if (std::system("/usr/bin/python3 -c 'import yaml' 2>/dev/null") != 0) {
    GTEST_SKIP() << "python3-yaml is not installed";
  }
  const std::string check = std::string("/usr/bin/python3 ") + ACCEL_SOURCE_DIR +
                            "/tests/testing/check_accelerate_yaml.py ";
  Result d = Run("config default --config_file " + dir_.path() + "/default.yaml");
  ASSERT_EQ(d.code, kExitOk) << d.err;
  EXPECT_EQ(std::system((check + dir_.path() + "/default.yaml").c_str()), 0)
      << ReadFile(dir_.path() + "/default.yaml");
  // No distributed training / multi-CPU / multi-GPU, each with the questionnaire's defaults.
  const std::vector<std::pair<std::string, std::string>> answers = {
      {"no_distributed", "0\n0\n\n\n\nno\n"},
      {"multi_cpu", "0\n1\n1\n2\n\n\nno\n"},
      {"multi_gpu", "0\n2\n1\n2\n0,1\n1\n\nno\n"},
      {"two_machines", "0\n2\n2\n1\n10.0.0.1\n29500\n\n\n4\n\n2\n\nno\n"}};
  for (const auto& [name, text] : answers) {
    const std::string path = dir_.path() + "/" + name + ".yaml";
    Result q = Run("config --config_file " + path, text);
    ASSERT_EQ(q.code, kExitOk) << name << q.err << q.out;
    EXPECT_EQ(std::system((check + path).c_str()), 0) << name << "\n" << ReadFile(path);
  }
  EXPECT_THAT(ReadFile(dir_.path() + "/no_distributed.yaml"), HasSubstr("distributed_type: 'NO'"));
  EXPECT_THAT(ReadFile(dir_.path() + "/multi_gpu.yaml"), HasSubstr("gpu_ids: 0,1\n"));
  // Our own additions are written only when they differ from the default, and are the only keys
  // accelerate would not know.
  const std::string accum = dir_.path() + "/accum.yaml";
  ASSERT_EQ(Run("config --config_file " + accum, "0\n1\n1\n2\n\n4\nno\n").code, kExitOk);
  EXPECT_NE(std::system((check + accum + " >/dev/null").c_str()), 0);
  EXPECT_EQ(std::system((check + accum + " gradient_accumulation_steps").c_str()), 0);
}

TEST_F(CliBinaryTest, EnvJsonHasTypedValues) {
  const std::string file = dir_.Write("c.yaml", "num_processes: 2\nuse_cpu: true\n");
  Result json = Run("env --json --config_file " + file);
  ASSERT_EQ(json.code, kExitOk) << json.err;
  const std::string out = dir_.Write("env.json", json.out);
  const std::string check =
      "/usr/bin/python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))[\"config\"]; "
      "assert c[\"num_processes\"] == 2 and c[\"use_cpu\"] is True, c; "
      "assert c[\"mixed_precision\"] == \"no\" and c[\"distributed_type\"] == \"MULTI_CPU\", c; "
      "assert c[\"main_process_ip\"] is None and c[\"ranks_filter\"] == [], c; "
      "assert c[\"monitor_interval\"] == 0.1 and c[\"downcast_bf16\"] is False, c' ";
  EXPECT_EQ(std::system((check + out).c_str()), 0) << json.out;
}

TEST_F(CliBinaryTest, DryRunAndValidateTellTheTruth) {
  // A missing program: the same error and code as a launch.
  Result dry = Run("launch --dry_run --num_processes 2 --cpu " + dir_.path() + "/missing.py");
  EXPECT_EQ(dry.code, kExitUsage);
  EXPECT_THAT(dry.err, HasSubstr("resolve program " + dir_.path() + "/missing.py: No such file"));
  // A log_dir that cannot be created, found by both.
  const std::string file = dir_.Write("file", "x");
  for (const std::string& args : {"launch --dry_run --log_dir " + file + "/logs /bin/true",
                                  "config validate --log_dir " + file + "/logs"}) {
    Result r = Run(args);
    EXPECT_EQ(r.code, kExitUsage) << args;
    EXPECT_THAT(r.err, HasSubstr(file + " is not a directory")) << args;
  }
  // fp16 on a machine without GPU: validate shows what runs, and why.
  std::string why;
  if (CountGpus(&why) == 0) {
    Result v = Run("config validate --mixed_precision fp16 --num_processes 2");
    ASSERT_EQ(v.code, kExitOk) << v.err;
    EXPECT_THAT(v.out, HasSubstr("  mixed_precision: 'no'  # --mixed_precision fp16; configured "
                                 "fp16, but fp16 needs a GPU; running in fp32 on CPU\n"));
    EXPECT_THAT(v.out, HasSubstr("  distributed_type: MULTI_CPU  # "));
    Result plan = Run("launch --dry_run --mixed_precision fp16 --num_processes 2 /bin/true");
    ASSERT_EQ(plan.code, kExitOk) << plan.err;
    EXPECT_THAT(plan.out, HasSubstr("distributed type:    MULTI_CPU"));
    EXPECT_THAT(plan.out, HasSubstr("precision:           no"));
    // Notices say once what runs: no "becomes MULTI_GPU" next to "running on CPU".
    EXPECT_THAT(plan.err, ::testing::Not(HasSubstr("becomes MULTI_GPU")));
    EXPECT_THAT(plan.err, HasSubstr("running on CPU (MULTI_CPU over gloo instead of MULTI_GPU)"));
    // No config file here: its notice lists no default the options replaced.
    EXPECT_THAT(plan.err, HasSubstr("no config file"));
    EXPECT_THAT(plan.err, ::testing::Not(HasSubstr("num_processes=1")));
    EXPECT_THAT(plan.err, ::testing::Not(HasSubstr("distributed_type=NO")));
  }
}

}  // namespace
}  // namespace accel::launcher
