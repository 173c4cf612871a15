// Runs the accel-launch binary as a user would, with a clean environment and a temporary HOME.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/device_info.h"
#include "common/exit_codes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/files.h"
#include "tests/testing/skip.h"

namespace accel::launcher {
namespace {

using accel::testing::TempDir;
using ::testing::HasSubstr;
using ::testing::Not;
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

TEST_F(CliBinaryTest, AnUnusableLogDirIsAConfigErrorForLaunchDryRunAndValidate) {
  const std::string file = dir_.Write("plain.txt", "x");
  const std::string marker = dir_.path() + "/ran";
  const std::string options = "--use_cpu --num_processes 1 --log_dir " + file + "/logs ";
  for (const std::string& command :
       {"config validate " + options, "launch --dry_run " + options + "/usr/bin/touch " + marker,
        "launch " + options + "/usr/bin/touch " + marker}) {
    Result r = Run(command);
    EXPECT_EQ(r.code, kExitUsage) << command << "\n" << r.err;
    EXPECT_THAT(r.err, HasSubstr("log_dir " + file + "/logs: " + file + " is not a directory"))
        << command;
  }
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

// What a bounded run of the binary cost.
struct Measured {
  int code = -1;
  double seconds = 0;
  long max_rss_kib = 0;  // the process's peak resident set
  std::string err;
};

// Runs `accel-launch <args>` directly (no shell in between, so wait4 measures the launcher
// itself) with a minimal environment; SIGKILLs it after 30 s.
Measured RunMeasured(const std::vector<std::string>& args, const std::string& dir) {
  const std::string err_path = dir + "/measured_err.txt";
  std::vector<std::string> argv = {ACCEL_LAUNCH_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> argv_c;
  for (std::string& a : argv) argv_c.push_back(a.data());
  argv_c.push_back(nullptr);
  std::string home = "HOME=" + dir;
  std::string path = "PATH=/usr/bin:/bin";
  char* envp[] = {home.data(), path.data(), nullptr};
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 2);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::execve(argv_c[0], argv_c.data(), envp);
    ::_exit(127);
  }
  Measured m;
  int status = 0;
  struct rusage usage {};
  while (::wait4(pid, &status, WNOHANG, &usage) == 0) {
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(30)) ::kill(pid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  m.code = ExitCodeFromWaitStatus(status);
  m.max_rss_kib = usage.ru_maxrss;
  m.err = ReadFile(err_path);
  return m;
}

// The inputs: each exits 2 with a clear error in under a second and 100 MB.
TEST_F(CliBinaryTest, HostileInputExitsTwoFastAndSmall) {
  std::string bomb = "a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n";
  for (char level = 'b'; level <= 'i'; ++level) {
    bomb += std::string(1, level) + ": &" + level + " [";
    for (int i = 0; i < 9; ++i)
      bomb += std::string(i ? "," : "") + "*" + static_cast<char>(level - 1);
    bomb += "]\n";
  }
  ASSERT_LE(bomb.size(), 354u);
  const std::string bomb_file = dir_.Write("bomb.yaml", bomb);
  // Written line by line: the test process stays small, and a forked child's peak RSS starts
  // from the test's own (wait4 counts the child's life before its exec too).
  const std::string big_file = dir_.path() + "/big.yaml";
  {
    std::ofstream big(big_file);
    for (int i = 0; i < 50 * 1024 * 1024 / 17; ++i) big << "num_processes: 1\n";
  }
  const std::string marker = dir_.path() + "/ran";
  const struct {
    std::vector<std::string> args;
    std::string says;
  } cases[] = {
      {{"--config_file", bomb_file, "/usr/bin/touch", marker}, "once aliases (*name) are expanded"},
      {{"--config_file", big_file, "/usr/bin/touch", marker}, "larger than 1048576 bytes"},
      {{"--num_processes", "1000000000", "/usr/bin/touch", marker}, "more than the limit"},
      {{"--num_processes", "1000000000", "--dry_run", "/usr/bin/touch", marker},
       "more than the limit"},
      {{"config", "validate", "--config_file", bomb_file}, "once aliases (*name) are expanded"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.args[0] + " " + c.args[1]);
    const Measured m = RunMeasured(c.args, dir_.path());
    EXPECT_EQ(m.code, kExitUsage) << m.err;
    EXPECT_THAT(m.err, HasSubstr(c.says));
    EXPECT_LT(m.seconds, 1.0);
    EXPECT_LT(m.max_rss_kib, 100 * 1024);
    std::printf("%s %s: exit %d in %.3f s, %ld KiB resident\n", c.args[0].c_str(),
                c.args[1].c_str(), m.code, m.seconds, m.max_rss_kib);
  }
  EXPECT_NE(access(marker.c_str(), F_OK), 0) << "the program ran";
}

TEST_F(CliBinaryTest, ABinaryConfigFileIsNotEchoedRaw) {
  std::string binary = "num_processes: 2\n\x1b[2J\x1b]0;pwned\x07";
  for (int i = 0; i < 256; ++i) binary.push_back(static_cast<char>(i));
  binary += ": 1\n";
  const std::string path = dir_.Write("binary.yaml", binary);
  Result r = Run("config validate --config_file " + path);
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_FALSE(r.err.empty());
  for (char ch : r.err) {
    const auto c = static_cast<unsigned char>(ch);
    ASSERT_TRUE(c == '\n' || c == '\t' || (c >= 0x20 && c != 0x7f)) << "raw byte " << int{c};
  }
  EXPECT_THAT(r.err, HasSubstr("\\x1b"));
}

TEST_F(CliBinaryTest, AMultiMachineJobWithoutATokenRefusesToStartSayingHow) {
  for (const std::string dry : {"", " --dry_run"}) {
    Result r =
        Run("--use_cpu --num_machines 2 --num_processes 2 --main_process_ip 10.9.9.9 "
            "--main_process_port 29500" +
            dry + " /usr/bin/true");
    EXPECT_EQ(r.code, kExitUsage) << r.err;
    EXPECT_THAT(r.err, HasSubstr("needs a rendezvous token"));
    EXPECT_THAT(r.err, HasSubstr("Run `accel-launch config`"));
  }
}

// `config validate` agrees with launch: no token for two machines, a token file others may
// read, or a weak token, is exit 2 there too, with the fix to run.
TEST_F(CliBinaryTest, ValidateChecksTheTokenAsLaunchDoes) {
  const std::string two =
      "--use_cpu --num_machines 2 --num_processes 2 --main_process_ip 10.9.9.9 "
      "--main_process_port 29500";
  Result none = Run("config validate " + two);
  EXPECT_EQ(none.code, kExitUsage) << none.err;
  EXPECT_THAT(none.err, HasSubstr("needs a rendezvous token"));
  const std::string token =
      dir_.Write("token", "4a2b99319c7a1ba6d77ea137a9eaa130163d14ac0c556ba42fe63bc54bdcd24b\n");
  const std::string weak = dir_.Write("weak", "t0ken\n");
  ASSERT_EQ(::chmod(token.c_str(), 0644), 0);
  ASSERT_EQ(::chmod(weak.c_str(), 0600), 0);
  for (const std::string command : {"config validate ", "--dry_run "}) {
    SCOPED_TRACE(command);
    const std::string program = command == "--dry_run " ? " /usr/bin/true" : "";
    Result open = Run(command + two + " --rdzv_token_file " + token + program);
    EXPECT_EQ(open.code, kExitUsage) << open.err;
    EXPECT_THAT(open.err, HasSubstr("may be read by group or others (mode 0644)"));
    EXPECT_THAT(open.err, HasSubstr("chmod 600 " + token));
    Result short_token = Run(command + two + " --rdzv_token_file " + weak + program);
    EXPECT_EQ(short_token.code, kExitUsage) << short_token.err;
    EXPECT_THAT(short_token.err, HasSubstr("too weak"));
    EXPECT_THAT(short_token.err, HasSubstr("accel-launch token"));
  }
  ASSERT_EQ(::chmod(token.c_str(), 0600), 0);
  Result safe = Run("config validate " + two + " --rdzv_token_file " + token + " --strict");
  EXPECT_EQ(safe.code, kExitOk) << safe.err;
  EXPECT_THAT(safe.err, ::testing::Not(HasSubstr("warning")));
}

// `config default` for two machines writes the config and a 0600 token file beside it that the
// config names; copying both to another directory (another machine) is all it takes.
TEST_F(CliBinaryTest, ConfigDefaultForTwoMachinesWritesAnOwnerOnlyTokenFile) {
  const std::string path = dir_.path() + "/cluster/two.yaml";
  const std::string command =
      "config default --num_machines 2 --main_process_ip 10.0.0.1 "
      "--use_cpu --num_processes 2 --config_file " +
      path;
  Result d = Run(command);
  ASSERT_EQ(d.code, kExitOk) << d.err;
  const std::string token_file = dir_.path() + "/cluster/rdzv_token";
  EXPECT_THAT(d.out, HasSubstr("rendezvous token saved at " + token_file));
  EXPECT_THAT(ReadFile(path),
              ::testing::Not(HasSubstr("rdzv_token_file")));  // accelerate refuses it
  EXPECT_THAT(ReadFile(path), HasSubstr("main_process_port: 29500\n"));
  struct stat st {};
  ASSERT_EQ(::stat(token_file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(ReadFile(token_file).size(), 65u);
  const std::string copy = dir_.path() + "/machine1";
  ASSERT_EQ(std::system(
                ("mkdir -p " + copy + " && cp -p " + path + " " + token_file + " " + copy).c_str()),
            0);
  Result dry = Run("--config_file " + copy + "/two.yaml --machine_rank 1 --dry_run /usr/bin/true");
  EXPECT_EQ(dry.code, kExitOk) << dry.err;
  EXPECT_THAT(dry.out, HasSubstr("(token: rdzv_token_file " + copy + "/rdzv_token)"));
  Result again = Run(command);  // `config` once more: the copies stay valid
  ASSERT_EQ(again.code, kExitOk) << again.err;
  EXPECT_EQ(ReadFile(token_file), ReadFile(copy + "/rdzv_token")) << "the token changed";
}

// What accel-launch writes, accelerate reads: PyYAML's safe_load gives the types accelerate's
// ClusterConfig expects, and no key it would refuse (tests/testing/check_accelerate_yaml.py).
TEST_F(CliBinaryTest, WrittenConfigsLoadInPyYamlWithAcceleratesTypes) {
  if (std::system("/usr/bin/python3 -c 'import yaml' 2>/dev/null") != 0) {
    ACCEL_SKIP_OR_FAIL("python3-yaml is not installed");
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

// Issue 35: a Python program's workers cannot recover in place; forcing it is refused up front
// (kept, each would fail at the first change and evict its machine: a cascade).
TEST_F(CliBinaryTest, InPlaceIsRefusedForAPythonProgram) {
  const std::string script = dir_.Write("train.py", "print('hi')\n");
  Result r = Run(
      "launch --dry_run --cpu --num_machines 2 --num_processes 2 --machine_rank 0 "
      "--main_process_ip 127.0.0.1 --main_process_port 29555 --min_machines 1 --elastic_in_place " +
      script);
  EXPECT_EQ(r.code, kExitUsage) << r.err;
  EXPECT_THAT(r.err, HasSubstr("runs Python: drop --elastic_in_place")) << r.err;
  Result restarted = Run(
      "launch --dry_run --cpu --num_machines 2 --num_processes 2 "
      "--machine_rank 0 --main_process_ip 127.0.0.1 --main_process_port 29555 --min_machines 1 " +
      script);
  EXPECT_THAT(restarted.err, Not(HasSubstr("drop --elastic_in_place"))) << restarted.err;
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
