#include "launcher/agent/plan.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "common/backend.h"
#include "common/defaults.h"
#include "common/device_info.h"
#include "common/env_contract.h"
#include "common/env_reader.h"
#include "common/overlap.h"
#include "common/seconds.h"

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

}  // namespace

int CollectiveTimeoutMs(double hang_timeout_s) {
  const double margin_s = ToSeconds(defaults::kHangCollectiveMargin);
  const double wanted_ms =
      std::max(ToSeconds(defaults::kCollectiveTimeout), hang_timeout_s + margin_s) * 1000.0;
  return static_cast<int>(std::min<double>(wanted_ms, env::kMaxInt));
}

// accelerate's plugins as the workers' variables carry them (accelerate_env.h): none for a
// use_cpu config, which accelerate's simple launcher runs without them.
void AddAcceleratePlugins(const Config& config, LaunchPlan* plan) {
  plan->fp8 = config.fp8;
  plan->accelerate_release = config.accelerate_release();
  if (config.use_cpu) return;
  plan->accelerate_plugin = config.accelerate_plugin;
  plan->use_parallelism_config = config.use_parallelism_config;
  plan->accelerate_args = config.accelerate_args;
  if (plan->accelerate_release < 104) {  // fp8_config is read from 1.4 on
    for (const std::string& name : config.fp8_config_file_args) plan->accelerate_args.erase(name);
  }
  std::vector<std::string> fields = config.deepspeed_config_keys;
  if (config.mixed_precision_from_file) fields.push_back("mixed_precision");
  plan->deepspeed_fields = absl::StrJoin(fields, ",");
  std::error_code error;
  plan->working_dir = std::filesystem::current_path(error).string();
}

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
  plan.elastic = config.elastic() && config.num_machines > 1;
  plan.min_machines = config.fewest_machines();
  plan.rdzv_last_call_s = config.rdzv_last_call_s;
  plan.in_place = plan.elastic && config.elastic_in_place;
  plan.debug = config.debug;
  plan.num_cpu_threads_per_process = config.num_cpu_threads_per_process;
  plan.dynamo_backend = config.dynamo_backend;
  plan.dynamo_mode = config.dynamo_mode;
  plan.dynamo_use_fullgraph = config.dynamo_use_fullgraph;
  plan.dynamo_use_dynamic = config.dynamo_use_dynamic;
  plan.dynamo_use_regional_compilation = config.dynamo_use_regional_compilation;
  plan.cpu_affinity = config.enable_cpu_affinity;
  AddAcceleratePlugins(config, &plan);

  const bool cpu_requested =
      config.use_cpu || config.distributed_type == DistributedType::kMultiCpu;
  std::vector<int> gpus;
  if (!cpu_requested) {
    if (gpu_count == 0) {
      plan.notices.push_back(absl::StrCat(
          "notice: no GPU found (", why_no_gpu.empty() ? "none visible" : why_no_gpu,
          "); running on CPU",
          config.num_processes > 1 ? " (MULTI_CPU over gloo instead of MULTI_GPU)" : ""));
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
    // A plugin's precision is the script's Accelerator's to apply (accelerate launch keeps it).
    if (plan.precision == MixedPrecision::kFp16 && plan.accelerate_plugin.empty()) {
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
  plan.rdzv_timeout_s = config.rdzv_timeout_s;
  plan.single_process = plan.world_size == 1;
  if (!plan.single_process && config.hang_timeout_s > 0) {
    plan.hang_timeout_s = config.hang_timeout_s;
    plan.startup_timeout_s = config.startup_timeout_s;
    plan.collective_timeout_ms = CollectiveTimeoutMs(config.hang_timeout_s);
  }
  plan.torchrun_env = !plan.single_process;
  plan.distributed_type = plan.single_process ? DistributedType::kNo
                          : plan.use_cpu      ? DistributedType::kMultiCpu
                                              : DistributedType::kMultiGpu;
  return plan;
}

EffectiveValues EffectiveValuesOf(const Config& config, const LaunchPlan& plan,
                                  const std::string& why_no_gpu) {
  EffectiveValues out;
  const bool asked_gpu = !config.use_cpu && config.distributed_type != DistributedType::kMultiCpu;
  const std::string no_gpu =
      absl::StrCat("no GPU found (", why_no_gpu.empty() ? "none visible" : why_no_gpu, ")");
  if (asked_gpu && plan.use_cpu) {
    out["use_cpu"] = {"true", absl::StrCat(no_gpu, ": running on CPU")};
    if (config.distributed_type == DistributedType::kMultiGpu) {
      out["distributed_type"] = {"MULTI_CPU", absl::StrCat(no_gpu, ": MULTI_CPU over gloo")};
    }
  }
  if (config.mixed_precision != plan.precision) {
    out["mixed_precision"] = {
        absl::StrCat("'", ToString(plan.precision), "'"),
        absl::StrCat(ToString(config.mixed_precision), " needs a GPU; running in fp32 on CPU")};
  }
  if (plan.world_size != config.num_processes) {
    out["num_processes"] = {absl::StrCat(plan.world_size),
                            absl::StrCat("only ", plan.nproc_per_machine, " GPU(s) present")};
  }
  return out;
}

EffectiveValues EffectiveConfig(const Config& config) {
  std::string why_no_gpu;
  const bool want_gpu = !config.use_cpu && config.distributed_type != DistributedType::kMultiCpu;
  const int gpus = want_gpu ? CountGpus(&why_no_gpu) : 0;
  absl::StatusOr<LaunchPlan> plan = MakePlan(config, gpus, why_no_gpu);
  if (!plan.ok()) return {};
  return EffectiveValuesOf(config, *plan, why_no_gpu);
}

std::string FormatTimeouts(const LaunchPlan& plan) {
  using absl::FromChrono;
  const auto s = [](absl::Duration d) { return absl::StrCat(absl::ToDoubleSeconds(d), " s"); };
  const absl::Duration beat = FromChrono(defaults::kHeartbeatInterval);
  std::string out;
  absl::StrAppend(&out, "  rendezvous timeouts: join ", plan.rdzv_timeout_s,
                  " s (rdzv_timeout; then the server names who is missing)");
  if (plan.elastic) {
    absl::StrAppend(&out, ", last call ", plan.rdzv_last_call_s,
                    " s (rdzv_last_call), survivors of a restart ",
                    s(FromChrono(defaults::kRdzvSurvivorWait)));
  }
  absl::StrAppend(&out, "\n                       connect attempt ",
                  s(FromChrono(defaults::kConnectAttemptTimeout)),
                  " (retried until the join "
                  "timeout), a worker's first store call ",
                  s(FromChrono(defaults::kStoreConnectTimeout)), ", one store or report call ",
                  s(FromChrono(defaults::kRpcDeadline)), "\n");
  absl::StrAppend(&out, "  lost machine:        no heartbeat for ",
                  s(beat * defaults::kMissedHeartbeatsProbe), " (one every ", s(beat),
                  "): its host is probed; lost after ", s(beat * defaults::kMissedHeartbeatsLost),
                  " with no probe answered for ", s(FromChrono(defaults::kProbeUnansweredLost)),
                  ", or after ", s(FromChrono(defaults::kSilentLost)),
                  " silent; a closed Watch stream at once\n");
  const double collective_s = plan.collective_timeout_ms > 0
                                  ? plan.collective_timeout_ms / 1000.0
                                  : ToSeconds(defaults::kCollectiveTimeout);
  absl::StrAppend(&out, "  collective timeout:  ", collective_s,
                  " s (libaccel's collectives; process group forming ",
                  s(FromChrono(defaults::kConnectTimeout)), ")\n");
  return out;
}

std::string FormatPlan(const LaunchPlan& plan, const std::vector<std::string>& argv) {
  const int first = plan.machine_rank * plan.nproc_per_machine;
  const int last = first + plan.nproc_per_machine - 1;
  std::string out;
  absl::StrAppend(&out, "plan: run ",
                  plan.run_id.empty() ? "(named by machine 0 at the rendezvous)" : plan.run_id,
                  "\n");
  if (plan.elastic) {
    absl::StrAppend(&out, "  machines:            ", plan.min_machines, " to ", plan.num_machines,
                    ", elastic (this is machine ", plan.machine_rank,
                    "; ranks and world size are set at each generation)\n");
  } else {
    absl::StrAppend(&out, "  machines:            ", plan.num_machines, " (this is machine ",
                    plan.machine_rank, ")\n");
  }
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
  absl::StrAppend(&out, "  distributed type:    ", ToString(plan.distributed_type), "\n");
  absl::StrAppend(&out, "  precision:           ", ToString(plan.precision), "\n");
  // Exported only when set (worker_env.h); otherwise a script's own value applies.
  absl::StrAppend(&out, "  accumulation steps:  ",
                  plan.set_gradient_accumulation
                      ? absl::StrCat(plan.gradient_accumulation_steps)
                      : absl::StrCat("the program's own (not set on the launcher)"),
                  "\n");
  if (plan.torchrun_env) {
    std::string port = "a free port";
    if (plan.num_machines > 1) absl::StrAppend(&port, " on machine 0");
    if (plan.fixed_master_port > 0)
      port = absl::StrCat(plan.fixed_master_port, " (main_process_port)");
    absl::StrAppend(&out, "  MASTER_PORT:         ", port, "\n");
  }
  absl::StrAppend(&out, "  rendezvous:          ",
                  plan.single_process ? "none (single process)" : plan.rendezvous_endpoint,
                  plan.rendezvous_token_source.empty()
                      ? ""
                      : absl::StrCat(" (token: ", plan.rendezvous_token_source, ")"),
                  "\n");
  if (!plan.rendezvous_transport.empty()) {
    absl::StrAppend(&out, "  transport:           ", plan.rendezvous_transport, "\n");
  }
  if (!plan.single_process) absl::StrAppend(&out, FormatTimeouts(plan));
  absl::StrAppend(&out, "  max restarts:        ", plan.max_restarts, "\n");
  absl::StrAppend(&out, "  hang timeout:        ",
                  plan.hang_timeout_s > 0 ? absl::StrCat(plan.hang_timeout_s, " s") : "off", "\n");
  if (plan.hang_timeout_s > 0) {
    absl::StrAppend(&out, "  startup timeout:     ", plan.startup_timeout_s,
                    " s (no hang verdict for a rank before its first step)\n");
  }
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
