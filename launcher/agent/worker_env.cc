#include "launcher/agent/worker_env.h"

#include <algorithm>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/env_contract.h"
#include "launcher/agent/accelerate_env.h"
#include "launcher/agent/python_progress.h"

namespace accel::launcher {
namespace {

// Variables only this launcher sets: never taken from its own environment.
bool Owned(absl::string_view name) {
  static const char* const kOwned[] = {env::kRank,
                                       env::kLocalRank,
                                       env::kWorldSize,
                                       env::kLocalWorldSize,
                                       env::kGroupRank,
                                       env::kGroupWorldSize,
                                       env::kRoleRank,
                                       env::kRoleWorldSize,
                                       env::kRoleName,
                                       env::kMasterAddr,
                                       env::kMasterPort,
                                       env::kRestartCount,
                                       env::kMaxRestarts,
                                       env::kRunId,
                                       env::kStoreEndpoint,
                                       env::kStoreAttempt,
                                       env::kRdzvToken,
                                       env::kTlsCaFile,
                                       env::kErrorFile,
                                       env::kBackend,
                                       env::kProgressFile,
                                       env::kLocalAddr,
                                       env::kCollectiveTimeoutMs,
                                       env::kGenerationFile};
  return std::any_of(std::begin(kOwned), std::end(kOwned),
                     [name](const char* owned) { return name == owned; });
}

// Python's str(bool), as accelerate writes its switches.
const char* PyBool(bool value) { return value ? "True" : "False"; }

using Vars = std::map<std::string, std::string>;

void AddTorchrunVars(const LaunchPlan& plan, const RendezvousResult& rdzv, int local_rank,
                     Vars* vars) {
  const int rank = rdzv.base_rank + local_rank;
  Vars& v = *vars;
  v[env::kRank] = absl::StrCat(rank);
  v[env::kLocalRank] = absl::StrCat(local_rank);
  v[env::kWorldSize] = absl::StrCat(rdzv.world_size);
  v[env::kLocalWorldSize] = absl::StrCat(plan.nproc_per_machine);
  v[env::kGroupRank] = absl::StrCat(rdzv.group_rank);
  v[env::kGroupWorldSize] = absl::StrCat(rdzv.group_world_size);
  v[env::kRoleRank] = absl::StrCat(rank);
  v[env::kRoleWorldSize] = absl::StrCat(rdzv.world_size);
  v[env::kRoleName] = plan.role_name;
  v[env::kMasterAddr] = rdzv.master_addr;
  v[env::kMasterPort] = absl::StrCat(rdzv.master_port);
  v[env::kRestartCount] = absl::StrCat(rdzv.restart_count);
  v[env::kMaxRestarts] = absl::StrCat(plan.max_restarts);
  v[env::kRunId] = plan.run_id;
}

// What accelerate launch's prepare_simple_launcher_cmd_env / prepare_multi_gpu_env set.
void AddAccelerateVars(const LaunchPlan& plan, Vars* vars) {
  Vars& v = *vars;
  v[env::kMixedPrecision] = ToString(plan.precision);
  if (plan.use_cpu) {
    v[env::kUseCpu] = PyBool(true);
  } else if (plan.distributed_type != DistributedType::kMultiGpu) {
    v[env::kUseCpu] = PyBool(false);  // the simple launcher's; the multi-GPU one sets none
  }
  if (plan.debug) v[env::kDebugMode] = "true";
  if (plan.set_gradient_accumulation) {
    v[env::kGradientAccumulationSteps] = absl::StrCat(plan.gradient_accumulation_steps);
  }
  v[env::kDynamoBackend] = plan.dynamo_backend;
  v[env::kDynamoMode] = plan.dynamo_mode;
  v[env::kDynamoUseFullgraph] = PyBool(plan.dynamo_use_fullgraph);
  v[env::kDynamoUseDynamic] = PyBool(plan.dynamo_use_dynamic);
  v[env::kDynamoUseRegionalCompilation] = PyBool(plan.dynamo_use_regional_compilation);
  if (plan.cpu_affinity) v[env::kCpuAffinity] = "1";
  if (!plan.cuda_visible_devices.empty()) v[env::kCudaVisibleDevices] = plan.cuda_visible_devices;
}

// OMP_NUM_THREADS: asked for, else the launcher's own (kept), else the peer's default.
void AddOmpThreads(const LaunchPlan& plan, bool inherited, Vars* vars) {
  if (plan.num_cpu_threads_per_process > 0) {
    (*vars)[env::kOmpNumThreads] = absl::StrCat(plan.num_cpu_threads_per_process);
    return;
  }
  if (inherited) return;
  if (plan.torchrun_style) {
    if (plan.nproc_per_machine > 1) (*vars)[env::kOmpNumThreads] = "1";
    return;
  }
  const int threads = plan.use_cpu ? plan.physical_cores / std::max(plan.nproc_per_machine, 1) : 1;
  (*vars)[env::kOmpNumThreads] = absl::StrCat(std::max(threads, 1));
}

void AddOurVars(const LaunchPlan& plan, const RendezvousResult& rdzv, const WorkerFiles& files,
                Vars* vars) {
  Vars& v = *vars;
  if (!rdzv.store_endpoint.empty()) {
    v[env::kStoreEndpoint] = rdzv.store_endpoint;
    v[env::kStoreAttempt] = absl::StrCat(rdzv.attempt);
  }
  if (!rdzv.local_addr.empty()) v[env::kLocalAddr] = rdzv.local_addr;
  if (!rdzv.token.empty()) v[env::kRdzvToken] = rdzv.token;
  if (!rdzv.tls_ca_file.empty()) v[env::kTlsCaFile] = rdzv.tls_ca_file;
  v[env::kErrorFile] = files.error_file;
  v[env::kBackend] = plan.backend;
  if (!files.progress_file.empty()) v[env::kProgressFile] = files.progress_file;
  if (plan.in_place && !plan.generation_file.empty()) {
    v[env::kGenerationFile] = plan.generation_file;
  }
  if (plan.collective_timeout_ms > 0) {
    v[env::kCollectiveTimeoutMs] = absl::StrCat(plan.collective_timeout_ms);
  }
}

// PYTHONPATH with the Python progress module first (python_progress.h), for a Python worker
// that has a progress file; the launcher's own PYTHONPATH follows it.
void AddPythonProgress(const WorkerFiles& files, const std::vector<std::string>& base_env,
                       Vars* vars) {
  if (files.python_module_dir.empty() || files.progress_file.empty()) return;
  if (auto set = vars->find("PYTHONPATH"); set != vars->end()) {  // DeepSpeed's (accelerate_env)
    set->second = PythonPathWithModule(files.python_module_dir, set->second.c_str());
    return;
  }
  const char* inherited = nullptr;
  for (const std::string& entry : base_env) {
    if (absl::StartsWith(entry, "PYTHONPATH=")) {
      inherited = entry.c_str() + 11;
      break;
    }
  }
  (*vars)["PYTHONPATH"] = PythonPathWithModule(files.python_module_dir, inherited);
}

}  // namespace

std::vector<std::string> WorkerEnv(const LaunchPlan& plan, const RendezvousResult& rdzv,
                                   int local_rank, const WorkerFiles& files,
                                   const std::vector<std::string>& base_env) {
  bool omp_inherited = false;
  std::string python_path;
  for (const std::string& entry : base_env) {
    const absl::string_view name = absl::string_view(entry).substr(0, entry.find('='));
    if (name == "PYTHONPATH") python_path = entry.substr(name.size() + 1);
    omp_inherited =
        omp_inherited || (name == env::kOmpNumThreads && entry.size() > name.size() + 1);
  }
  Vars vars;
  if (plan.torchrun_env) AddTorchrunVars(plan, rdzv, local_rank, &vars);
  AddAccelerateVars(plan, &vars);
  AddAcceleratePluginVars(plan, python_path, &vars);
  AddOmpThreads(plan, omp_inherited, &vars);
  AddOurVars(plan, rdzv, files, &vars);
  AddPythonProgress(files, base_env, &vars);

  std::vector<std::string> out;
  out.reserve(base_env.size() + vars.size());
  for (const std::string& entry : base_env) {
    const std::string name = entry.substr(0, entry.find('='));
    if (!Owned(name) && vars.count(name) == 0) out.push_back(entry);
  }
  for (const auto& [name, value] : vars) out.push_back(absl::StrCat(name, "=", value));
  return out;
}

}  // namespace accel::launcher
