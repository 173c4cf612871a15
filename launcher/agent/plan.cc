#include "launcher/agent/plan.h"

#include <unistd.h>

#include <cstdlib>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/backend.h"
#include "common/env_contract.h"
#include "common/overlap.h"

namespace accel::launcher {
namespace {

// Parses gpu_ids: "all" (every visible GPU) or a comma list such as "0,1,3".
absl::StatusOr<std::vector<int>> ParseGpuIds(const std::string& gpu_ids, int gpu_count) {
  std::vector<int> ids;
  std::string trimmed(absl::StripAsciiWhitespace(gpu_ids));
  if (trimmed.empty() || trimmed == "all") {
    for (int i = 0; i < gpu_count; ++i) {
      ids.push_back(i);
    }
    return ids;
  }
  std::set<int> seen;
  for (absl::string_view part : absl::StrSplit(trimmed, ',', absl::SkipWhitespace())) {
    int id = -1;
    if (!absl::SimpleAtoi(part, &id) || id < 0) {
      return absl::InvalidArgumentError(absl::StrCat("plan devices: gpu_ids \"", gpu_ids, "\": \"",
                                                     part, "\" is not a GPU index"));
    }
    if (id >= gpu_count) {
      return absl::InvalidArgumentError(absl::StrCat("plan devices: gpu_ids \"", gpu_ids,
                                                     "\" names GPU ", id, " but this machine has ",
                                                     gpu_count, " visible GPU(s)"));
    }
    if (seen.insert(id).second) {
      ids.push_back(id);
    }
  }
  return ids;
}

bool IsContractName(absl::string_view name) {
  static const char* const kNames[] = {env::kRank,
                                       env::kLocalRank,
                                       env::kWorldSize,
                                       env::kLocalWorldSize,
                                       env::kGroupRank,
                                       env::kGroupWorldSize,
                                       env::kRoleRank,
                                       env::kRoleName,
                                       env::kMasterAddr,
                                       env::kMasterPort,
                                       env::kRestartCount,
                                       env::kMaxRestarts,
                                       env::kRunId,
                                       env::kMixedPrecision,
                                       env::kUseCpu,
                                       env::kDebugMode,
                                       env::kGradientAccumulationSteps,
                                       env::kStoreEndpoint,
                                       env::kRdzvToken,
                                       env::kErrorFile,
                                       env::kBackend,
                                       env::kProgressFile};
  for (const char* known : kNames) {
    if (name == known) {
      return true;
    }
  }
  return false;
}

}  // namespace

absl::StatusOr<LaunchPlan> MakePlan(const Config& config, int gpu_count,
                                    const std::string& why_no_gpu) {
  LaunchPlan plan;
  plan.run_id = config.run_id;
  plan.num_machines = config.num_machines;
  plan.machine_rank = config.machine_rank;
  plan.nproc_per_machine = config.processes_per_machine();
  plan.precision = config.mixed_precision;
  plan.gradient_accumulation_steps = config.gradient_accumulation_steps;
  plan.max_restarts = config.max_restarts;
  plan.debug = config.debug;

  const bool cpu_requested =
      config.use_cpu || config.distributed_type == DistributedType::kMultiCpu;
  std::vector<int> gpus;
  if (!cpu_requested) {
    if (gpu_count == 0) {
      plan.notices.push_back(absl::StrCat("notice: no GPU found (",
                                          why_no_gpu.empty() ? "none visible" : why_no_gpu,
                                          "); running on CPU"));
    } else {
      auto ids = ParseGpuIds(config.gpu_ids, gpu_count);
      if (!ids.ok()) {
        return ids.status();
      }
      gpus = *std::move(ids);
    }
  }
  plan.use_cpu = gpus.empty();

  plan.backend = std::string(AutoBackend(!plan.use_cpu, /*world_from_mpi=*/false));
  if (plan.use_cpu) {
    if (plan.precision == MixedPrecision::kFp16) {
      plan.notices.push_back("notice: fp16 needs a GPU; running in fp32 on CPU");
      plan.precision = MixedPrecision::kNo;
    }
    for (int i = 0; i < plan.nproc_per_machine; ++i) {
      plan.devices.push_back("cpu");
    }
  } else {
    const int available = static_cast<int>(gpus.size());
    if (plan.nproc_per_machine > available) {
      if (plan.num_machines > 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "plan devices: ", plan.nproc_per_machine, " processes per machine need ",
            plan.nproc_per_machine, " GPUs but machine ", plan.machine_rank, " has ", available,
            "; a multi-machine job never changes its world size (lower num_processes or set "
            "use_cpu)"));
      }
      plan.notices.push_back(absl::StrCat("notice: ", plan.nproc_per_machine,
                                          " processes asked but only ", available,
                                          " GPU(s) present; running ", available, " process(es)"));
      plan.nproc_per_machine = available;
    }
    gpus.resize(plan.nproc_per_machine);
    if (!(config.gpu_ids.empty() || config.gpu_ids == "all")) {
      plan.cuda_visible_devices = absl::StrJoin(gpus, ",");
    }
    for (int i = 0; i < plan.nproc_per_machine; ++i) {
      plan.devices.push_back(absl::StrCat("cuda:", i, " (GPU ", gpus[i], ")"));
    }
  }
  plan.world_size = plan.num_machines * plan.nproc_per_machine;
  plan.single_process = plan.world_size == 1;
  return plan;
}

std::vector<std::string> WorkerEnv(const LaunchPlan& plan, const RendezvousResult& rdzv,
                                   int local_rank, const WorkerFiles& files,
                                   const std::vector<std::string>& base_env) {
  std::vector<std::string> out;
  out.reserve(base_env.size() + 32);
  bool omp_set = false;
  for (const std::string& entry : base_env) {
    const auto eq = entry.find('=');
    const absl::string_view name = absl::string_view(entry).substr(0, eq);
    if (IsContractName(name)) {
      continue;
    }
    if (name == env::kCudaVisibleDevices && !plan.cuda_visible_devices.empty()) {
      continue;
    }
    if (name == env::kOmpNumThreads) {
      omp_set = true;
    }
    out.push_back(entry);
  }
  auto set = [&out](const char* name, const auto& value) {
    out.push_back(absl::StrCat(name, "=", value));
  };
  const int rank = rdzv.base_rank + local_rank;
  set(env::kRank, rank);
  set(env::kLocalRank, local_rank);
  set(env::kWorldSize, rdzv.world_size);
  set(env::kLocalWorldSize, plan.nproc_per_machine);
  set(env::kGroupRank, plan.machine_rank);
  set(env::kGroupWorldSize, plan.num_machines);
  set(env::kRoleRank, rank);
  set(env::kRoleName, "default");
  set(env::kMasterAddr, rdzv.master_addr);
  set(env::kMasterPort, rdzv.master_port);
  set(env::kRestartCount, rdzv.attempt);
  set(env::kMaxRestarts, plan.max_restarts);
  set(env::kRunId, plan.run_id);
  if (!omp_set && plan.nproc_per_machine > 1) {
    set(env::kOmpNumThreads, 1);
  }
  set(env::kMixedPrecision, ToString(plan.precision));
  set(env::kUseCpu, plan.use_cpu ? "true" : "false");
  set(env::kDebugMode, plan.debug ? "true" : "false");
  set(env::kGradientAccumulationSteps, plan.gradient_accumulation_steps);
  if (!rdzv.store_endpoint.empty()) {
    set(env::kStoreEndpoint, rdzv.store_endpoint);
  }
  if (!rdzv.local_addr.empty()) {
    set(env::kLocalAddr, rdzv.local_addr);
  }
  if (!rdzv.token.empty()) {
    set(env::kRdzvToken, rdzv.token);
  }
  set(env::kErrorFile, files.error_file);
  set(env::kBackend, plan.backend);
  if (!files.progress_file.empty()) {
    set(env::kProgressFile, files.progress_file);
  }
  if (!plan.cuda_visible_devices.empty()) {
    set(env::kCudaVisibleDevices, plan.cuda_visible_devices);
  }
  return out;
}

std::string FormatPlan(const LaunchPlan& plan, const std::vector<std::string>& argv) {
  const int first = plan.machine_rank * plan.nproc_per_machine;
  const int last = first + plan.nproc_per_machine - 1;
  std::string out;
  absl::StrAppend(&out, "plan: run ", plan.run_id, "\n");
  absl::StrAppend(&out, "  machines:            ", plan.num_machines, " (this is machine ",
                  plan.machine_rank, ")\n");
  absl::StrAppend(&out, "  processes/machine:   ", plan.nproc_per_machine, " (world size ",
                  plan.world_size, ")\n");
  absl::StrAppend(&out, "  ranks here:          ",
                  first == last ? absl::StrCat(first) : absl::StrCat(first, "-", last), "\n");
  absl::StrAppend(
      &out, "  devices:             ", plan.use_cpu ? "cpu" : absl::StrJoin(plan.devices, ", "),
      plan.cuda_visible_devices.empty()
          ? ""
          : absl::StrCat(" (CUDA_VISIBLE_DEVICES=", plan.cuda_visible_devices, ")"),
      " backend ", plan.backend, "\n");
  absl::StrAppend(&out, "  precision:           ", ToString(plan.precision), "\n");
  absl::StrAppend(&out, "  accumulation steps:  ", plan.gradient_accumulation_steps, "\n");
  absl::StrAppend(&out, "  rendezvous:          ",
                  plan.single_process ? "none (single process)" : plan.rendezvous_endpoint, "\n");
  absl::StrAppend(&out, "  max restarts:        ", plan.max_restarts, "\n");
  absl::StrAppend(&out, "  DDP overlap:         ",
                  DescribeDdpOverlap(plan, std::getenv(env::kOmpNumThreads),
                                     std::getenv(env::kOverlap), UsableCores()),
                  "\n");
  absl::StrAppend(&out, "  command:             ", absl::StrJoin(argv, " "), "\n");
  return out;
}

std::string DescribeDdpOverlap(const LaunchPlan& plan, const char* omp_threads, const char* overlap,
                               int cores) {
  if (plan.world_size <= 1) return "none (world size 1)";
  const std::string forced = overlap != nullptr ? absl::AsciiStrToLower(overlap) : "";
  if (forced == "on" || forced == "off")
    return absl::StrCat(forced, " (ACCEL_OVERLAP=", forced, ")");
  if (!plan.use_cpu) return "on (GPU)";
  // The launcher sets OMP_NUM_THREADS=1 for several processes unless the user set it.
  int threads = plan.nproc_per_machine > 1 ? 1 : cores;
  if (omp_threads != nullptr && (!absl::SimpleAtoi(omp_threads, &threads) || threads < 1)) {
    threads = 1;
  }
  return DescribeOverlap(plan.nproc_per_machine, threads, cores);
}

}  // namespace accel::launcher
