// Plan: what this machine runs — ranks, devices, precision and the environment of every worker
// (the device fallback rules and the worker environment contract of common/env_contract.h).
//
// MakePlan applies the device fallback rules once and records a one-line notice for each rule
// that changed what the config asked for. WorkerEnv is pure: it builds one worker's envp from the
// plan, the rendezvous result and the launcher's own environment.
#ifndef ACCEL_LAUNCHER_AGENT_PLAN_H_
#define ACCEL_LAUNCHER_AGENT_PLAN_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "launcher/config/config.h"
#include "launcher/process/worker_files.h"

namespace accel::launcher {

struct LaunchPlan {
  std::string run_id;
  int num_machines = 1;
  int machine_rank = 0;
  int nproc_per_machine = 1;  // after the fewer-GPUs fallback
  int world_size = 1;         // num_machines * nproc_per_machine
  bool use_cpu = false;
  MixedPrecision precision = MixedPrecision::kNo;  // after the fp16-on-CPU fallback
  std::string backend;               // common/backend.h's AutoBackend for the devices: gloo | nccl
  std::string cuda_visible_devices;  // "" = leave the environment's value
  std::vector<std::string> devices;  // one per local rank, e.g. "cuda:0", "cpu"
  int gradient_accumulation_steps = 1;
  int max_restarts = 0;
  bool debug = false;
  // No rendezvous at all: the whole job is one process (the single-T4 case).
  bool single_process = true;
  std::string rendezvous_endpoint;   // host:port the server listens on ("" = not yet known)
  std::vector<std::string> notices;  // one line per fallback rule that applied
};

// What the rendezvous told this machine for one attempt.
struct RendezvousResult {
  int base_rank = 0;  // global rank of local rank 0
  int world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  std::string store_endpoint;  // "" = no store (single process)
  std::string local_addr;      // this machine as the others reach it; "" = loopback job
  std::string token;
  int attempt = 0;  // restart count, TORCHELASTIC_RESTART_COUNT
};

// Returns the plan for `config` on a machine with `gpu_count` visible GPUs (`why_no_gpu` explains
// zero). INVALID_ARGUMENT when the fallback rules forbid running: a multi-machine job with fewer
// GPUs than processes per machine, or gpu_ids naming a GPU that is not there.
absl::StatusOr<LaunchPlan> MakePlan(const Config& config, int gpu_count,
                                    const std::string& why_no_gpu);

// Returns the envp ("NAME=value") of local rank `local_rank`: `base_env` (the launcher's environ)
// without any stale contract variable, plus the full contract of common/env_contract.h.
std::vector<std::string> WorkerEnv(const LaunchPlan& plan, const RendezvousResult& rdzv,
                                   int local_rank, const WorkerFiles& files,
                                   const std::vector<std::string>& base_env);

// Returns the human-readable plan printed before launching (and by --dry_run).
std::string FormatPlan(const LaunchPlan& plan, const std::vector<std::string>& argv);

// Returns whether libaccel's DDP will overlap communication with backward on this machine, and
// why (common/overlap.h's rule): "on: 2 processes x 1 threads < 16 cores", "off: ...", "on (GPU)",
// "on (ACCEL_OVERLAP=on)", or "none (world size 1)". `omp_threads` / `overlap` are the user's
// OMP_NUM_THREADS / ACCEL_OVERLAP (null when unset); `cores` this machine's usable cores.
std::string DescribeDdpOverlap(const LaunchPlan& plan, const char* omp_threads, const char* overlap,
                               int cores);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_AGENT_PLAN_H_
