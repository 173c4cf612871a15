// accel-launch in place of torchrun and accelerate launch, with real processes on 127.0.0.1:
// torchrun-style and accelerate-style command lines running a Python torch.distributed script and
// train.bin with 2 CPU processes (the accelerate-style script run is the multi-CPU Accelerator
// test); what HF accelerate's Accelerator() would see in the workers
// (tests/testing/accelerate_env.py), every variable asserted, absent ones included; every golden
// accelerate config launching; main_process_port as MASTER_PORT, and in use.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "common/exit_codes.h"
#include "common/net.h"
#include "common/unique_fd.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/agent/cpu_affinity.h"
#include "launcher/agent/plan.h"
#include "launcher/agent/worker_env.h"
#include "tests/testing/files.h"
#include "tests/testing/launch_util.h"
#include "tests/testing/listener.h"
#include "tests/testing/skip.h"

namespace accel::testing {
namespace {

using ::testing::HasSubstr;

const std::string kLauncher = ACCEL_LAUNCH_PATH;
const std::string kSource = ACCEL_SOURCE_DIR;
const std::string kPython = "/usr/bin/python3";
const std::string kTorchGloo = kSource + "/tests/testing/torch_gloo.py";
const std::string kAccelerateEnv = kSource + "/tests/testing/accelerate_env.py";

// The variables accelerate reads that these CPU launches never set (accelerate launch does not
// either); accelerate_env.py fails unless every one it knows is named by the test.
std::map<std::string, const char*> NeverSet() {
  std::map<std::string, const char*> unset;
  for (const char* name : {"ACCELERATE_TORCH_DEVICE",
                           "ACCELERATE_DEBUG_MODE",
                           "ACCELERATE_USE_SAGEMAKER",
                           "ACCELERATE_SAGEMAKER_DISTRIBUTED_TYPE",
                           "ACCELERATE_USE_DEEPSPEED",
                           "ACCELERATE_USE_FSDP",
                           "FSDP_OFFLOAD_PARAMS",
                           "FSDP_STATE_DICT_TYPE",
                           "ACCELERATE_USE_MEGATRON_LM",
                           "ACCELERATE_USE_PARALLELISM_CONFIG",
                           "ACCELERATE_DOWNCAST_BF16",
                           "ACCELERATE_GRADIENT_ACCUMULATION_STEPS",
                           "ACCELERATE_BYPASS_DEVICE_MAP",
                           "ACCELERATE_FP8_BACKEND",
                           "ACCELERATE_CPU_AFFINITY",
                           "FORK_LAUNCHED",
                           "NCCL_P2P_DISABLE",
                           "NCCL_IB_DISABLE",
                           "PMI_RANK",
                           "PMI_SIZE",
                           "OMPI_COMM_WORLD_RANK",
                           "OMPI_COMM_WORLD_SIZE",
                           "OMPI_COMM_WORLD_LOCAL_RANK",
                           "OMPI_COMM_WORLD_LOCAL_SIZE",
                           "MV2_COMM_WORLD_RANK",
                           "MV2_COMM_WORLD_SIZE",
                           "MV2_COMM_WORLD_LOCAL_RANK",
                           "MV2_COMM_WORLD_LOCAL_SIZE",
                           "MPI_LOCALRANKID",
                           "MPI_LOCALNRANKS"}) {
    unset[name] = nullptr;
  }
  return unset;
}

// Returns `values` as the JSON object accelerate_env.py expects (nullptr = must be absent).
std::string ToJson(const std::map<std::string, const char*>& values) {
  std::string json = "{";
  for (const auto& [name, value] : values) {
    if (json.size() > 1) json += ", ";
    json += "\"" + name + "\": " + (value == nullptr ? "null" : "\"" + std::string(value) + "\"");
  }
  return json + "}";
}

// What accelerate launch sets for a CPU job; the torchrun variables as `ranks` says.
std::map<std::string, const char*> CpuJob(bool several, const char* world, const char* port) {
  std::map<std::string, const char*> want = NeverSet();
  want["ACCELERATE_USE_CPU"] = "True";
  want["ACCELERATE_MIXED_PRECISION"] = "no";
  want["ACCELERATE_DYNAMO_BACKEND"] = "NO";
  want["ACCELERATE_DYNAMO_MODE"] = "default";
  want["ACCELERATE_DYNAMO_USE_FULLGRAPH"] = "False";
  want["ACCELERATE_DYNAMO_USE_DYNAMIC"] = "False";
  want["ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION"] = "False";
  want["OMP_NUM_THREADS"] = "*";
  for (const char* name : {"LOCAL_RANK", "RANK"}) want[name] = several ? "*" : nullptr;
  want["WORLD_SIZE"] = several ? world : nullptr;
  want["LOCAL_WORLD_SIZE"] = several ? world : nullptr;
  want["MASTER_ADDR"] = several ? "127.0.0.1" : nullptr;
  want["MASTER_PORT"] = several ? port : nullptr;
  return want;
}

class CompatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A clean user: no config file, no ACCEL_* settings, torch's Python picked by ACCEL_PYTHON.
    ::setenv("HOME", home_.path().c_str(), 1);
    ::setenv("HF_HOME", (home_.path() + "/hf").c_str(), 1);
    for (const char* name : {"ACCEL_CONFIG_FILE", "OMP_NUM_THREADS", "ACCEL_NUM_PROCESSES"}) {
      ::unsetenv(name);
    }
    ::setenv("ACCEL_PYTHON", kPython.c_str(), 1);
  }
  static int FreePort() {
    absl::StatusOr<int> port = PickFreePort("127.0.0.1");
    EXPECT_TRUE(port.ok()) << port.status();
    return port.ok() ? *port : 0;
  }
  // A multi-machine job needs a rendezvous token (the machines of these tests share it this way).
  static constexpr char kToken[] =
      "ACCEL_RDZV_TOKEN=7d3e91c0a2b64f58e1c7093ab5d26f4e8c01b9a3d7e25f60c4a8b1e93d70f25c";

  RunResult Launch(std::vector<std::string> args, absl::Duration timeout = absl::Seconds(180)) {
    args.insert(args.begin(), kLauncher);
    return RunCommand(args, {}, timeout);
  }

  TempDir home_;
};

TEST_F(CompatTest, ATorchrunCommandLineRunsATorchDistributedScript) {
  if (!TorchPythonMissing().empty()) ACCEL_SKIP_OR_FAIL(TorchPythonMissing());
  const std::string port = std::to_string(FreePort());
  // torchrun's own words, unchanged (accel-launch finds torch's python through ACCEL_PYTHON).
  RunResult r = Launch({"--nnodes=1", "--nproc-per-node=2", "--master_port", port, kTorchGloo});
  ASSERT_EQ(r.exit_code, kExitOk) << r.out << r.err;
  for (const char* rank : {"0", "1"}) {
    EXPECT_THAT(r.out,
                HasSubstr(std::string("[rank ") + rank + "] torch_gloo rank " + rank + "/2 local " +
                          rank + " all_reduce 3 expected 3 master_port " + port));
  }
}

TEST_F(CompatTest, TrainBinRunsUnderBothCommandLines) {
  const std::vector<std::string> train = {
      TRAIN_BIN_PATH, "--samples", "512", "--hidden", "16", "--steps", "4", "--batch-size", "16"};
  std::vector<std::string> torchrun = {"--standalone", "--nproc_per_node", "2"};
  std::vector<std::string> accelerate = {"--multi_gpu", "--num_processes", "2", "--cpu"};
  for (std::vector<std::string> args : {torchrun, accelerate}) {
    args.insert(args.end(), train.begin(), train.end());
    RunResult r = Launch(args);
    ASSERT_EQ(r.exit_code, kExitOk) << args[0] << "\n" << r.out << r.err;
    EXPECT_THAT(r.out, HasSubstr("[rank 0] {\"world\": 2, \"grad_accum\": 1, \"steps\": 4"));
  }
}

TEST_F(CompatTest, OneProcessAcceleratorSeesWhatAccelerateLaunchGivesIt) {
  if (!TorchPythonMissing().empty()) ACCEL_SKIP_OR_FAIL(TorchPythonMissing());
  // The script's own Accelerator(gradient_accumulation_steps=4) is not overridden.
  RunResult r = Launch({"--cpu", kAccelerateEnv, ToJson(CpuJob(false, nullptr, nullptr)),
                        "--gradient-accumulation-steps", "4"});
  ASSERT_EQ(r.exit_code, kExitOk) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("ACCELERATOR {\"device\": \"cpu\", \"distributed_type\": \"NO\", "
                               "\"dynamo_backend\": \"NO\", \"gradient_accumulation_steps\": 4, "
                               "\"local_process_index\": 0, \"mixed_precision\": \"no\", "
                               "\"num_processes\": 1, \"process_index\": 0}"));
}

// Also the accelerate-style command line with 2 CPU processes running a torch.distributed script:
// accelerate_env.py joins gloo from RANK/WORLD_SIZE/MASTER_* and checks the ranks with an
// all_reduce, and MASTER_PORT is the --main_process_port given.
TEST_F(CompatTest, MultiCpuAcceleratorSeesWhatAccelerateLaunchGivesIt) {
  if (!TorchPythonMissing().empty()) ACCEL_SKIP_OR_FAIL(TorchPythonMissing());
  const std::string port = std::to_string(FreePort());
  RunResult r =
      Launch({"--cpu", "--num_processes", "2", "--main_process_port", port, kAccelerateEnv,
              ToJson(CpuJob(true, "2", port.c_str())), "--gradient-accumulation-steps", "4"});
  ASSERT_EQ(r.exit_code, kExitOk) << r.out << r.err;
  for (const char* rank : {"0", "1"}) {
    EXPECT_THAT(r.out, HasSubstr(std::string("[rank ") + rank +
                                 "] ACCELERATOR {\"device\": \"cpu\", \"distributed_type\": "
                                 "\"MULTI_CPU\", \"dynamo_backend\": \"NO\", "
                                 "\"gradient_accumulation_steps\": 4, \"local_process_index\": " +
                                 rank +
                                 ", \"mixed_precision\": \"no\", \"num_processes\": 2, "
                                 "\"process_index\": " +
                                 rank + "}"));
  }
  // Asked for on the launcher's command line, the setting wins over the script's, as it does
  // under accelerate launch (one process: the rule does not depend on the world size).
  std::map<std::string, const char*> asked = CpuJob(false, nullptr, nullptr);
  asked["ACCELERATE_GRADIENT_ACCUMULATION_STEPS"] = "2";
  r = Launch({"--cpu", "--gradient_accumulation_steps", "2", kAccelerateEnv, ToJson(asked),
              "--gradient-accumulation-steps", "4"});
  ASSERT_EQ(r.exit_code, kExitOk) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"gradient_accumulation_steps\": 2"));
}

TEST_F(CompatTest, MultiGpuWorkerEnvironmentIsWhatAccelerateLaunchGives) {
  if (!TorchPythonMissing().empty()) ACCEL_SKIP_OR_FAIL(TorchPythonMissing());
  // No GPU here: the multi-GPU plan's environment alone, checked by the same script.
  launcher::Config config;
  config.num_processes = 2;
  config.mixed_precision = launcher::MixedPrecision::kFp16;
  absl::StatusOr<launcher::LaunchPlan> plan = launcher::MakePlan(config, 2, "");
  ASSERT_TRUE(plan.ok()) << plan.status();
  launcher::RendezvousResult rdzv;
  rdzv.world_size = 2;
  rdzv.master_port = 29555;
  std::vector<std::string> env =
      launcher::WorkerEnv(*plan, rdzv, 1, {"/tmp/e.json", "", ""}, {"PATH=/usr/bin:/bin"});
  std::map<std::string, const char*> want = CpuJob(true, "2", "29555");
  want["ACCELERATE_USE_CPU"] = nullptr;  // accelerate's multi-GPU launcher does not set it
  want["ACCELERATE_MIXED_PRECISION"] = "fp16";
  want["OMP_NUM_THREADS"] = "1";
  want["RANK"] = want["LOCAL_RANK"] = "1";
  RunResult r = RunWithEnvironment({kPython, kAccelerateEnv, ToJson(want), "--env-only"}, env);
  EXPECT_EQ(r.exit_code, kExitOk) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("ENV OK"));
}

TEST_F(CompatTest, EveryGoldenAccelerateConfigLaunches) {
  const std::string dir = kSource + "/tests/testing/accelerate_configs";
  int launched = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string path = entry.path().string();
    if (entry.path().filename().string().rfind("accelerate-", 0) != 0) continue;
    if (path.find("two_machines") != std::string::npos) continue;  // below
    // The file's num_processes, read here: exactly that many ranks run, each once.
    std::smatch found;
    const std::string text = ReadFile(path);
    ASSERT_TRUE(std::regex_search(text, found, std::regex("\"?num_processes\"?: *([0-9]+)")))
        << path;
    const int want = std::stoi(found[1]);
    RunResult r = Launch({"--config_file", path, "/bin/sh", "-c",
                          "echo \"launched ${RANK:-unset} of ${WORLD_SIZE:-unset}\""},
                         absl::Seconds(60));
    EXPECT_EQ(r.exit_code, kExitOk) << path << "\n" << r.out << r.err;
    std::vector<std::string> lines;
    const std::regex line("launched [^\n]*");
    for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), line);
         it != std::sregex_iterator(); ++it) {
      lines.push_back(it->str());
    }
    // One process runs alone on the launcher's terminal with no rank variables, as under
    // accelerate's simple launcher; more get RANK 0..N-1 of WORLD_SIZE N.
    std::vector<std::string> expected = {"launched unset of unset"};
    if (want > 1) expected.clear();
    for (int rank = 0; want > 1 && rank < want; ++rank) {
      expected.push_back("launched " + std::to_string(rank) + " of " + std::to_string(want));
    }
    std::sort(lines.begin(), lines.end());
    EXPECT_EQ(lines, expected) << path << "\n" << r.out << r.err;
    ++launched;
  }
  EXPECT_EQ(launched, 15);  // every golden file but the two-machine one
}

TEST_F(CompatTest, TheTwoMachineGoldenConfigLaunchesBothMachines) {
  const std::string file = kSource +
                           "/tests/testing/accelerate_configs/"
                           "accelerate-1.13_two_machines_rank0.yaml";
  const std::string port = std::to_string(FreePort());
  std::vector<std::string> args = {kLauncher,   "--config_file",       file, "--main_process_ip",
                                   "127.0.0.1", "--main_process_port", port, "--rdzv_timeout",
                                   "60",        "--machine_rank"};
  const std::vector<std::string> program = {"/bin/sh", "-c", "echo launched $RANK of $WORLD_SIZE"};
  RunResult machine1;
  std::thread other([&] {
    std::vector<std::string> one = args;
    one.push_back("1");
    one.insert(one.end(), program.begin(), program.end());
    machine1 = RunCommand(one, {kToken}, absl::Seconds(90));
  });
  std::vector<std::string> zero = args;
  zero.push_back("0");
  zero.insert(zero.end(), program.begin(), program.end());
  RunResult machine0 = RunCommand(zero, {kToken}, absl::Seconds(90));
  other.join();
  EXPECT_EQ(machine0.exit_code, kExitOk) << machine0.err;
  EXPECT_EQ(machine1.exit_code, kExitOk) << machine1.err;
  EXPECT_THAT(machine0.out, HasSubstr("[rank 1] launched 1 of 4"));
  EXPECT_THAT(machine1.out, HasSubstr("[rank 3] launched 3 of 4"));
}

TEST_F(CompatTest, EnableCpuAffinityPinsEachLocalRankToItsOwnCpus) {
  const std::vector<int> allowed = launcher::AllowedCpus();
  if (allowed.size() < 2) GTEST_SKIP() << "one CPU: the two ranks would share it";
  RunResult r = Launch({"--cpu", "--num_processes", "2", "--enable_cpu_affinity", "/bin/sh", "-c",
                        "echo affinity=$ACCELERATE_CPU_AFFINITY "
                        "cpus=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)"},
                       absl::Seconds(60));
  ASSERT_EQ(r.exit_code, kExitOk) << r.err;
  const std::vector<std::vector<int>> shares =
      launcher::CpuShares(launcher::NumaNodes("/sys", allowed), 2);
  std::vector<std::vector<int>> seen(2);
  const std::regex line(R"(\[rank ([01])\] affinity=1 cpus=([0-9,-]+))");
  for (std::sregex_iterator m(r.out.begin(), r.out.end(), line), end; m != end; ++m) {
    absl::StatusOr<std::vector<int>> cpus = launcher::ParseCpuList((*m)[2].str());
    ASSERT_TRUE(cpus.ok()) << cpus.status();
    seen[std::stoi((*m)[1].str())] = *cpus;
  }
  EXPECT_EQ(seen, shares) << r.out;
  // Two ranks, at least two CPUs: no CPU is shared.
  for (int cpu : seen[0]) {
    EXPECT_EQ(std::count(seen[1].begin(), seen[1].end(), cpu), 0) << r.out;
  }
  EXPECT_FALSE(seen[0].empty());
  EXPECT_FALSE(seen[1].empty());
}

TEST_F(CompatTest, MainProcessPortInUseIsARendezvousFailure) {
  const int port = FreePort();
  const UniqueFd listener = ListenOn("127.0.0.1", port);
  ASSERT_TRUE(listener.valid());
  const std::string in_use = "port " + std::to_string(port) + " on 127.0.0.1 is in use";
  for (const char* dry : {"--dry_run", "--verbose"}) {
    RunResult r = Launch({"--cpu", "--num_processes", "2", "--main_process_port",
                          std::to_string(port), dry, "/bin/true"},
                         absl::Seconds(30));
    EXPECT_EQ(r.exit_code, kExitRendezvous) << dry << r.err;
    EXPECT_THAT(r.err, HasSubstr(in_use)) << dry;
  }
  // Machine 0 of two: the port is its rendezvous server's, said plainly, not in gRPC's log lines.
  const std::string p = std::to_string(port);
  RunResult two = RunCommand({kLauncher, "--cpu", "--num_machines", "2", "--machine_rank", "0",
                              "--main_process_ip", "127.0.0.1", "--main_process_port", p,
                              "--num_processes", "2", "--rdzv_timeout", "5", "/bin/true"},
                             {kToken}, absl::Seconds(30));
  EXPECT_EQ(two.exit_code, kExitRendezvous) << two.err;
  EXPECT_THAT(two.err, HasSubstr("start rendezvous server on main_process_port " + p + ": port " +
                                 p + " on 0.0.0.0 is in use"));
}

}  // namespace
}  // namespace accel::testing
