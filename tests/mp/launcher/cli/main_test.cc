// Runs the accel-launch binary as a user would, with a clean environment and a temporary HOME.
#include <cstdio>
#include <string>

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

}  // namespace
}  // namespace accel::launcher
