// Plan: what this machine runs — ranks, devices, precision, and the settings every worker's
// environment is built from (worker_env.h).
//
// MakePlan applies the device fallback rules once and records a one-line notice for each rule
// that changed what the config asked for; the notices together say once what will run.
#ifndef ACCEL_LAUNCHER_AGENT_PLAN_H_
#define ACCEL_LAUNCHER_AGENT_PLAN_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "launcher/config/config.h"
#include "launcher/config/writer.h"

namespace accel::launcher {

struct LaunchPlan {
  std::string run_id;
  int num_machines = 1;
  int machine_rank = 0;
  int nproc_per_machine = 1;  // after the fewer-GPUs fallback
  int world_size = 1;         // num_machines * nproc_per_machine
  bool use_cpu = false;
  // What HF accelerate's Accelerator() will see: NO for one process, MULTI_CPU or MULTI_GPU
  // after the no-GPU fallback.
  DistributedType distributed_type = DistributedType::kNo;
  MixedPrecision precision = MixedPrecision::kNo;  // after the fp16-on-CPU fallback
  std::string backend;               // common/backend.h's AutoBackend for the devices: gloo | nccl
  std::string cuda_visible_devices;  // "" = leave the environment's value
  std::vector<std::string> devices;  // one per local rank, e.g. "cuda:0", "cpu"
  int gradient_accumulation_steps = 1;
  // The user set gradient_accumulation_steps (file, ACCEL_ variable or option): only then do the
  // workers get ACCELERATE_GRADIENT_ACCUMULATION_STEPS, which overrides a script's own
  // Accelerator(gradient_accumulation_steps=N).
  bool set_gradient_accumulation = false;
  int max_restarts = 0;
  // Elastic membership (Config::elastic): generations of min_machines..num_machines machines;
  // ranks, world size and GROUP_RANK then come from each generation's rendezvous.
  bool elastic = false;
  int min_machines = 1;
  double rdzv_last_call_s = 0;
  double rdzv_timeout_s = 0;  // how long the machines wait for each other at rendezvous
  // Elastic and Config::elastic_in_place: workers go on across generations that lose machines.
  bool in_place = false;
  // ACCEL_GENERATION_FILE of an in-place job (the agent sets it once the run directory exists).
  std::string generation_file;
  bool debug = false;
  // Hang detection: zero when off (always off for a single process: no peer waits on it).
  double hang_timeout_s = 0;
  // The start-up grace of hang detection (config startup_timeout; used only with a hang timeout).
  double startup_timeout_s = 0;
  // ACCEL_COLLECTIVE_TIMEOUT_MS for the workers, above the hang timeout; 0 = libaccel's default.
  int collective_timeout_ms = 0;
  // torchrun's variables (RANK, WORLD_SIZE, MASTER_ADDR, ...): always with several processes,
  // and for one process only on a torchrun command line (accelerate launch sets none then, so
  // Accelerator() sees distributed_type NO).
  bool torchrun_env = false;
  bool torchrun_style = false;  // a torchrun command line: OMP_NUM_THREADS as torchrun sets it
  std::string role_name = "default";
  int num_cpu_threads_per_process = 0;  // 0 = automatic (worker_env.h)
  int physical_cores = 1;               // this machine's, for accelerate's OMP_NUM_THREADS
  std::string dynamo_backend = "NO";
  std::string dynamo_mode = "default";
  bool dynamo_use_fullgraph = false;
  bool dynamo_use_dynamic = false;
  bool dynamo_use_regional_compilation = false;
  bool cpu_affinity = false;               // enable_cpu_affinity: ACCELERATE_CPU_AFFINITY=1
  std::vector<std::vector<int>> cpu_sets;  // per local rank when cpu_affinity (cpu_affinity.h)
  // MASTER_PORT on one machine: main_process_port, as accelerate uses it; 0 = a free port.
  int fixed_master_port = 0;
  // No rendezvous at all: the whole job is one process (the single-T4 case).
  bool single_process = true;
  std::string rendezvous_endpoint;      // host:port the server listens on ("" = not yet known)
  std::string rendezvous_token_source;  // where its token came from (FindRendezvousToken)
  std::string rendezvous_transport;     // how it is secured (rendezvous/grpc/transport.h)
  std::vector<std::string> notices;     // one line per fallback rule that applied
  // accelerate's plugins for a Python program (accelerate_env.h); empty / false when none. A
  // use_cpu config runs none, as accelerate's simple launcher.
  std::string accelerate_plugin;  // FSDP, DEEPSPEED, MEGATRON_LM
  bool fp8 = false;
  bool use_parallelism_config = false;
  std::map<std::string, AccelerateArg> accelerate_args;
  std::string deepspeed_fields;  // ACCELERATE_CONFIG_DS_FIELDS
  std::string working_dir;       // the workers' (the launcher's) working directory
  int accelerate_release = 114;  // Config::accelerate_release: whose variables they get
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
  std::string tls_ca_file;   // the user's CA for the store (tls_ca_file), "" = none
  std::string run_id;        // the run the server serves ("" = the plan's)
  int attempt = 0;           // the generation: 0 first, +1 per restart or membership change
  int restart_count = 0;     // job-wide restarts so far, TORCHELASTIC_RESTART_COUNT
  int group_rank = 0;        // this machine's dense index in the generation, GROUP_RANK
  int group_world_size = 1;  // machines in the generation, GROUP_WORLD_SIZE
  std::string membership;    // what changed since the previous generation ("" = nothing)
  // The previous generation's training goes on: its machines here keep their workers (in-place
  // jobs), new workers join them (rendezvous JoinResponse.continues).
  bool continues = false;
};

// Returns the plan for `config` on a machine with `gpu_count` visible GPUs (`why_no_gpu` explains
// zero). INVALID_ARGUMENT when the fallback rules forbid running: a multi-machine job with fewer
// GPUs than processes per machine, or gpu_ids naming a GPU that is not there.
absl::StatusOr<LaunchPlan> MakePlan(const Config& config, int gpu_count,
                                    const std::string& why_no_gpu);

// Returns the workers' collective deadline for `hang_timeout_s` (milliseconds): libaccel's default,
// or the hang timeout plus defaults::kHangCollectiveMargin when that is longer, so that a rank
// waiting on a hung peer is still waiting when hang detection names the peer.
int CollectiveTimeoutMs(double hang_timeout_s);

// Returns the human-readable plan printed before launching (and by --dry_run); `argv` is the
// command every worker runs.
// The plan's rendezvous, liveness and collective timeouts, every one that can end a job (a
// hidden one is a user report: torchrun's last call and store read were).
std::string FormatTimeouts(const LaunchPlan& plan);
std::string FormatPlan(const LaunchPlan& plan, const std::vector<std::string>& argv);

// Returns the values `plan` runs with where the fallback rules changed `config`'s (devices,
// distributed_type, num_processes, mixed_precision), each with its reason.
EffectiveValues EffectiveValuesOf(const Config& config, const LaunchPlan& plan,
                                  const std::string& why_no_gpu);

// Returns EffectiveValuesOf for a plan of `config` on this machine's GPUs (CountGpus); nothing
// when the config cannot be planned here (a launch reports that).
EffectiveValues EffectiveConfig(const Config& config);
// Returns whether libaccel's DDP will overlap communication with backward on this machine, and
// why (common/overlap.h's rule): "on: 2 processes x 1 threads < 16 cores", "off: ...", "on (GPU)",
// "on (ACCEL_OVERLAP=on)", or "none (world size 1)". `omp_threads` / `overlap` are the user's
// OMP_NUM_THREADS / ACCEL_OVERLAP (null when unset); `cores` this machine's usable cores.
std::string DescribeDdpOverlap(const LaunchPlan& plan, const char* omp_threads, const char* overlap,
                               int cores);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_AGENT_PLAN_H_
