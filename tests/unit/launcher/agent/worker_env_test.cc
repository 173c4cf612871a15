// Unit tests of WorkerEnv: the exact environment of a worker, variable by variable, for the
// plans accelerate launch and torchrun run differently (one process or several, CPU or GPU,
// accelerate's command line or torchrun's).
#include "launcher/agent/worker_env.h"

#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::launcher {
namespace {

using Env = std::map<std::string, std::string>;

Env ToMap(const std::vector<std::string>& env) {
  Env out;
  for (const std::string& e : env) {
    const auto eq = e.find('=');
    EXPECT_TRUE(out.emplace(e.substr(0, eq), e.substr(eq + 1)).second) << "duplicate " << e;
  }
  return out;
}

LaunchPlan Plan(const Config& config, int gpus) {
  absl::StatusOr<LaunchPlan> plan = MakePlan(config, gpus, "no driver");
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : LaunchPlan{};
}

// What accelerate launch always sets, for a plan with default dynamo settings.
const Env kDynamo = {{"ACCELERATE_DYNAMO_BACKEND", "NO"},
                     {"ACCELERATE_DYNAMO_MODE", "default"},
                     {"ACCELERATE_DYNAMO_USE_DYNAMIC", "False"},
                     {"ACCELERATE_DYNAMO_USE_FULLGRAPH", "False"},
                     {"ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION", "False"}};

Env With(Env base, const Env& more) {
  base.insert(more.begin(), more.end());
  return base;
}

TEST(WorkerEnvTest, MultiMachineCpuWorkerGetsTheExactContract) {
  Config c;
  c.num_machines = 2;
  c.num_processes = 4;
  c.machine_rank = 1;
  c.run_id = "r1";
  c.max_restarts = 3;
  c.gradient_accumulation_steps = 4;
  c.use_cpu = true;
  c.debug = true;
  LaunchPlan plan = Plan(c, 0);
  plan.set_gradient_accumulation = true;
  plan.physical_cores = 8;
  RendezvousResult rdzv;
  rdzv.base_rank = 2;
  rdzv.world_size = 4;
  rdzv.master_addr = "10.0.0.1";
  rdzv.master_port = 29501;
  rdzv.store_endpoint = "10.0.0.1:29500";
  rdzv.local_addr = "10.0.0.2";
  rdzv.token = "secret";
  rdzv.attempt = 2;  // the generation: a machine joined once, not a restart
  rdzv.restart_count = 1;
  rdzv.group_rank = 1;
  rdzv.group_world_size = 2;
  const std::vector<std::string> base = {
      "PATH=/bin",  "RANK=99",         "ACCEL_STORE_ENDPOINT=stale", "ACCEL_STORE_ATTEMPT=7",
      "HOME=/root", "KMP_BLOCKTIME=50"};
  const Env env = ToMap(WorkerEnv(plan, rdzv, 1, WorkerFiles{"/tmp/e.json", "/tmp/p", ""}, base));
  const Env want = With(kDynamo, {
                                     {"PATH", "/bin"},
                                     {"HOME", "/root"},
                                     {"RANK", "3"},
                                     {"LOCAL_RANK", "1"},
                                     {"WORLD_SIZE", "4"},
                                     {"LOCAL_WORLD_SIZE", "2"},
                                     {"GROUP_RANK", "1"},
                                     {"GROUP_WORLD_SIZE", "2"},
                                     {"ROLE_RANK", "3"},
                                     {"ROLE_WORLD_SIZE", "4"},
                                     {"ROLE_NAME", "default"},
                                     {"MASTER_ADDR", "10.0.0.1"},
                                     {"MASTER_PORT", "29501"},
                                     {"TORCHELASTIC_RESTART_COUNT", "1"},
                                     {"TORCHELASTIC_MAX_RESTARTS", "3"},
                                     {"TORCHELASTIC_RUN_ID", "r1"},
                                     {"OMP_NUM_THREADS", "4"},  // 8 physical cores / 2 here
                                     // no accelerate release sets KMP_*: the launcher's own
                                     {"KMP_BLOCKTIME", "50"},
                                     {"ACCELERATE_MIXED_PRECISION", "no"},
                                     {"ACCELERATE_USE_CPU", "True"},
                                     {"ACCELERATE_DEBUG_MODE", "true"},
                                     {"ACCELERATE_GRADIENT_ACCUMULATION_STEPS", "4"},
                                     {"ACCEL_STORE_ENDPOINT", "10.0.0.1:29500"},
                                     // the generation's store namespace, not the restart count
                                     {"ACCEL_STORE_ATTEMPT", "2"},
                                     {"ACCEL_RDZV_TOKEN", "secret"},
                                     {"ACCEL_ERROR_FILE", "/tmp/e.json"},
                                     {"ACCEL_BACKEND", "gloo"},
                                     {"ACCEL_PROGRESS_FILE", "/tmp/p"},
                                     // libaccel's deadline, above the default hang timeout
                                     {"ACCEL_COLLECTIVE_TIMEOUT_MS", "300000"},
                                     {"ACCEL_LOCAL_ADDR", "10.0.0.2"},
                                 });
  EXPECT_EQ(env, want);
}

// ACCEL_GENERATION_FILE reaches only the workers of an in-place job (the agent names the file
// then), never from the launcher's own environment; the plan is in place only when elastic.
TEST(WorkerEnvTest, OnlyInPlaceJobsWorkersGetTheGenerationFile) {
  const std::vector<std::string> base = {"ACCEL_GENERATION_FILE=/stale"};
  for (bool elastic : {false, true}) {
    for (bool in_place : {false, true}) {
      Config c;
      c.num_machines = 3;
      c.num_processes = 6;
      c.use_cpu = true;
      c.min_machines = elastic ? 2 : 0;
      c.elastic_in_place = in_place;
      LaunchPlan plan = Plan(c, 0);
      EXPECT_EQ(plan.in_place, elastic && in_place);
      if (plan.in_place) plan.generation_file = "/run/generation";
      const Env env =
          ToMap(WorkerEnv(plan, RendezvousResult{}, 0, WorkerFiles{"/e", "", ""}, base));
      if (plan.in_place) {
        EXPECT_EQ(env.at("ACCEL_GENERATION_FILE"), "/run/generation");
      } else {
        EXPECT_EQ(env.count("ACCEL_GENERATION_FILE"), 0u);
      }
    }
  }
}

// A Python worker with a progress file gets the progress module first on PYTHONPATH, in the
// form its sitecustomize undoes: the program's own PYTHONPATH (even an empty one) follows.
TEST(WorkerEnvTest, PythonWorkersGetTheProgressModuleFirstOnTheirPythonPath) {
  Config c;
  c.num_processes = 2;
  c.use_cpu = true;
  const LaunchPlan plan = Plan(c, 0);
  const RendezvousResult rdzv;
  const WorkerFiles python{"/e", "/p", "/run/python"};
  EXPECT_EQ(ToMap(WorkerEnv(plan, rdzv, 0, python, {})).at("PYTHONPATH"), "/run/python");
  EXPECT_EQ(ToMap(WorkerEnv(plan, rdzv, 0, python, {"PYTHONPATH=/mine:/other"})).at("PYTHONPATH"),
            "/run/python:/mine:/other");
  EXPECT_EQ(ToMap(WorkerEnv(plan, rdzv, 0, python, {"PYTHONPATH="})).at("PYTHONPATH"),
            "/run/python:");
  // No module (not Python, or python_progress off), or no progress file: untouched.
  for (const WorkerFiles& files : {WorkerFiles{"/e", "/p", ""}, WorkerFiles{"/e", "", "/py"}}) {
    EXPECT_EQ(ToMap(WorkerEnv(plan, rdzv, 0, files, {})).count("PYTHONPATH"), 0u);
    EXPECT_EQ(ToMap(WorkerEnv(plan, rdzv, 0, files, {"PYTHONPATH=/mine"})).at("PYTHONPATH"),
              "/mine");
  }
}

TEST(WorkerEnvTest, OneProcessAsAccelerateLaunchGetsNoTorchrunVariables) {
  Config c;  // one process, distributed_type NO: Accelerator() must see NO
  LaunchPlan gpu = Plan(c, 1);
  const Env env = ToMap(WorkerEnv(gpu, RendezvousResult{}, 0, WorkerFiles{"/e", "", ""}, {}));
  const Env want = With(kDynamo, {{"ACCELERATE_MIXED_PRECISION", "no"},
                                  {"ACCELERATE_USE_CPU", "False"},
                                  {"OMP_NUM_THREADS", "1"},
                                  {"ACCEL_ERROR_FILE", "/e"},
                                  {"ACCEL_BACKEND", "nccl"}});
  EXPECT_EQ(env, want);

  c.use_cpu = true;
  LaunchPlan cpu = Plan(c, 0);
  cpu.physical_cores = 2;
  const Env on_cpu = ToMap(WorkerEnv(cpu, RendezvousResult{}, 0, WorkerFiles{"/e", "", ""}, {}));
  EXPECT_EQ(on_cpu.at("ACCELERATE_USE_CPU"), "True");
  EXPECT_EQ(on_cpu.at("OMP_NUM_THREADS"), "2");  // accelerate: physical cores / local processes
  for (const char* absent : {"RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                             "ACCELERATE_GRADIENT_ACCUMULATION_STEPS", "ACCELERATE_DEBUG_MODE"}) {
    EXPECT_EQ(on_cpu.count(absent), 0u) << absent;
  }
}

TEST(WorkerEnvTest, OneProcessOnATorchrunCommandLineGetsTorchrunsVariables) {
  Config c;
  c.use_cpu = true;
  LaunchPlan plan = Plan(c, 0);
  plan.torchrun_env = plan.torchrun_style = true;
  RendezvousResult rdzv;
  rdzv.master_port = 29555;
  const Env env = ToMap(WorkerEnv(plan, rdzv, 0, WorkerFiles{"/e", "", ""}, {}));
  EXPECT_EQ(env.at("RANK"), "0");
  EXPECT_EQ(env.at("WORLD_SIZE"), "1");
  EXPECT_EQ(env.at("MASTER_ADDR"), "127.0.0.1");
  EXPECT_EQ(env.at("MASTER_PORT"), "29555");
  EXPECT_EQ(env.count("OMP_NUM_THREADS"), 0u);  // torchrun sets it only for several processes
  EXPECT_EQ(env.count("KMP_AFFINITY"), 0u);
}

TEST(WorkerEnvTest, MultiGpuWorkersGetNoUseCpuAsAccelerateLaunchesThem) {
  Config c;
  c.num_processes = 2;
  c.mixed_precision = MixedPrecision::kFp16;
  c.gpu_ids = "1,3";
  LaunchPlan plan = Plan(c, 4);
  const Env env = ToMap(WorkerEnv(plan, RendezvousResult{}, 1, WorkerFiles{"/e", "", ""},
                                  {"CUDA_VISIBLE_DEVICES=0,1"}));
  EXPECT_EQ(env.count("ACCELERATE_USE_CPU"), 0u);
  EXPECT_EQ(env.at("ACCELERATE_MIXED_PRECISION"), "fp16");
  EXPECT_EQ(env.at("CUDA_VISIBLE_DEVICES"), "1,3");
  EXPECT_EQ(env.at("OMP_NUM_THREADS"), "1");
  EXPECT_EQ(env.at("LOCAL_RANK"), "1");
  EXPECT_EQ(env.count("KMP_AFFINITY"), 0u);
}

TEST(WorkerEnvTest, GradientAccumulationIsExportedOnlyWhenAskedAndTheUsersOwnPassesThrough) {
  Config c;
  c.num_processes = 2;
  c.use_cpu = true;
  c.gradient_accumulation_steps = 1;
  LaunchPlan plan = Plan(c, 0);
  Env env = ToMap(WorkerEnv(plan, RendezvousResult{}, 0, WorkerFiles{"/e", "", ""}, {}));
  EXPECT_EQ(env.count("ACCELERATE_GRADIENT_ACCUMULATION_STEPS"), 0u);
  env = ToMap(WorkerEnv(plan, RendezvousResult{}, 0, WorkerFiles{"/e", "", ""},
                        {"ACCELERATE_GRADIENT_ACCUMULATION_STEPS=8"}));
  EXPECT_EQ(env.at("ACCELERATE_GRADIENT_ACCUMULATION_STEPS"), "8");  // as accelerate launch
  plan.set_gradient_accumulation = true;
  env = ToMap(WorkerEnv(plan, RendezvousResult{}, 0, WorkerFiles{"/e", "", ""},
                        {"ACCELERATE_GRADIENT_ACCUMULATION_STEPS=8"}));
  EXPECT_EQ(env.at("ACCELERATE_GRADIENT_ACCUMULATION_STEPS"), "1");
}

TEST(WorkerEnvTest, OmpThreadsFollowTheOptionThenTheEnvironmentThenThePeersDefault) {
  Config c;
  c.num_processes = 2;
  c.use_cpu = true;
  LaunchPlan plan = Plan(c, 0);
  plan.physical_cores = 2;
  auto omp = [&](const std::vector<std::string>& base) {
    return ToMap(WorkerEnv(plan, RendezvousResult{}, 0, WorkerFiles{"/e", "", ""}, base))
        .at("OMP_NUM_THREADS");
  };
  EXPECT_EQ(omp({}), "1");                     // 2 physical cores / 2 processes
  EXPECT_EQ(omp({"OMP_NUM_THREADS=8"}), "8");  // the user's own
  plan.num_cpu_threads_per_process = 3;
  EXPECT_EQ(omp({"OMP_NUM_THREADS=8"}), "3");  // --num_cpu_threads_per_process wins
  plan.num_cpu_threads_per_process = 0;
  plan.torchrun_style = true;
  EXPECT_EQ(omp({}), "1");  // torchrun: 1 with several local processes
}

TEST(WorkerEnvTest, DynamoRoleAndAffinityAreTheUsersSettings) {
  Config c;
  c.num_processes = 2;
  c.use_cpu = true;
  c.dynamo_backend = "INDUCTOR";
  c.dynamo_mode = "max-autotune";
  c.dynamo_use_fullgraph = true;
  c.enable_cpu_affinity = true;
  LaunchPlan plan = Plan(c, 0);
  plan.role_name = "trainer";
  const Env env = ToMap(WorkerEnv(plan, RendezvousResult{}, 0, WorkerFiles{"/e", "", ""}, {}));
  EXPECT_EQ(env.at("ACCELERATE_DYNAMO_BACKEND"), "INDUCTOR");
  EXPECT_EQ(env.at("ACCELERATE_DYNAMO_MODE"), "max-autotune");
  EXPECT_EQ(env.at("ACCELERATE_DYNAMO_USE_FULLGRAPH"), "True");
  EXPECT_EQ(env.at("ACCELERATE_DYNAMO_USE_DYNAMIC"), "False");
  EXPECT_EQ(env.at("ACCELERATE_CPU_AFFINITY"), "1");
  EXPECT_EQ(env.at("ROLE_NAME"), "trainer");
}

}  // namespace
}  // namespace accel::launcher
