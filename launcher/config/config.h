// Config: one launch's settings, accelerate's default_config.yaml schema plus our additions
// (accelerate's keys and ours). A plain struct: every default is set here (durations and ports from
// common/defaults.h). Loading, precedence and validation live in loader.h; this header depends
// on nothing but the standard library and common/'s standard-library-only headers.
#ifndef ACCEL_LAUNCHER_CONFIG_CONFIG_H_
#define ACCEL_LAUNCHER_CONFIG_CONFIG_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/defaults.h"
#include "common/seconds.h"

namespace accel::launcher {

enum class DistributedType { kNo, kMultiGpu, kMultiCpu };
enum class MixedPrecision { kNo, kFp16, kBf16 };

// One value of accelerate launch's argparse namespace, as Python's str() writes it
// (launcher/config/accelerate_args.h).
struct AccelerateArg {
  std::string str;
  bool truthy = false;  // Python's bool() of the value
  bool none = false;    // None
};

struct Config {
  // --- accelerate's keys, as `accelerate config` writes them ---
  std::string compute_environment = "LOCAL_MACHINE";
  DistributedType distributed_type = DistributedType::kNo;
  MixedPrecision mixed_precision = MixedPrecision::kNo;
  bool downcast_bf16 = false;
  int num_machines = 1;
  int num_processes = 1;  // TOTAL across all machines; per machine = num_processes / num_machines.
  int machine_rank = 0;
  std::string main_process_ip;  // required when num_machines > 1
  int main_process_port = 0;    // 0 = pick a free port (single machine only)
  std::string rdzv_backend = "static";
  bool same_network = true;
  std::string gpu_ids = "all";  // "all" or "0,1,3" → CUDA_VISIBLE_DEVICES
  bool use_cpu = false;
  bool debug = false;
  std::string main_training_function = "main";
  bool enable_cpu_affinity = false;
  bool tpu_use_cluster = false;
  bool tpu_use_sudo = false;
  // torch.compile settings for Python scripts (dynamo_config, or accelerate launch's --dynamo_*
  // options): passed to workers as ACCELERATE_DYNAMO_*; libaccel ignores them.
  std::string dynamo_backend = "NO";  // NO, INDUCTOR, EAGER, ... (upper case)
  std::string dynamo_mode = "default";
  bool dynamo_use_fullgraph = false;
  bool dynamo_use_dynamic = false;
  bool dynamo_use_regional_compilation = false;
  // accelerate's plugins, for Python programs only (libaccel runs DDP): distributed_type FSDP,
  // DEEPSPEED or MEGATRON_LM ("" = none), mixed_precision fp8, and accelerate launch's arguments
  // from the config's sections and the plugin options (launcher/config/accelerate_args.h); the
  // workers get the variables accelerate's launch code gives (launcher/agent/accelerate_env.h).
  std::string accelerate_plugin;
  bool fp8 = false;  // mixed_precision fp8 (mixed_precision itself stays no)
  std::map<std::string, AccelerateArg> accelerate_args;
  std::vector<std::string> deepspeed_config_keys;  // file order: ACCELERATE_CONFIG_DS_FIELDS
  // accelerate_args set from a file's fp8_config section (not by an option): releases before
  // 1.4 never read that section, so their workers get the parser's defaults instead.
  std::set<std::string> fp8_config_file_args;
  bool use_parallelism_config = false;      // a non-empty parallelism_config
  bool mixed_precision_from_file = false;   // DeepSpeed's fields list names it then
  std::string accelerate_version = "1.14";  // whose launch environment Python scripts get

  // accelerate_version as a number, major * 100 + minor (1.14 → 114, 0.20 → 20).
  int accelerate_release() const;

  // --- our additions (documented in docs/config.md "Our additions") ---
  int gradient_accumulation_steps = 1;
  // accelerate launch's --num_cpu_threads_per_process: OMP_NUM_THREADS in every worker; 0 = the
  // launcher's own OMP_NUM_THREADS, else accelerate's default (see WorkerEnv in agent/plan.h).
  int num_cpu_threads_per_process = 0;
  std::string python = "python3";  // runs PROGRAM.py and -m MODULE (looked up in PATH)
  // Python workers load launcher/python's sitecustomize, which writes the progress record.
  bool python_progress = true;
  std::vector<int> local_ranks_filter;  // torchrun's: local ranks whose output reaches the console
  // Durations are seconds, as in the YAML file.
  double rdzv_timeout_s = ToSeconds(defaults::kRdzvTimeout);  // Join waits for every machine
  int max_restarts = 0;  // new rendezvous attempts after a worker failure
  // Elastic membership (docs/config.md "Elastic membership"): the fewest machines the job goes
  // on with, num_machines being the most (torchrun's --nnodes MIN:MAX); 0 = num_machines.
  int min_machines = 0;
  // How long a generation with min_machines machines waits for more before it starts.
  double rdzv_last_call_s = ToSeconds(defaults::kRdzvLastCall);
  // Elastic membership, programs that call Accelerator::recover() (docs/libaccel.md "In-place
  // recovery"): survivors keep their workers when machines leave; false = restart them.
  bool elastic_in_place = false;
  double monitor_interval_s = ToSeconds(defaults::kMonitorInterval);
  double shutdown_grace_s = ToSeconds(defaults::kShutdownGrace);  // SIGTERM → grace → SIGKILL
  std::string log_dir;                                            // empty: no per-rank log files

  // Who may read log_dir's files: "private" (0700 / 0600) or "group" (0750 / 0640).
  std::string log_mode = "private";

  bool tee = false;  // with log_dir: also print worker output on the console
  // Identical console lines from several ranks within dedup_window_s are printed once with the
  // set of ranks (launcher/process/line_dedup.h); false or 0 = every line of every rank.
  bool dedup_output = true;
  double dedup_window_s = 0.25;   // a line every local rank printed goes out at once
  std::string rdzv_token_file;    // file holding the shared rendezvous token
  bool rdzv_insecure = false;     // a multi-machine job may run without a token (opt-out)
  std::string local_addr;         // address other machines reach this one at ("" = auto)
  std::string network_interface;  // interface whose address is local_addr ("" = auto)
  bool strict = false;            // version mismatch at join is an error, not a warning
  std::string tls_cert_file;      // optional TLS for the rendezvous server/clients
  std::string tls_key_file;
  std::string tls_ca_file;
  // 0 = off; a job of 2+ processes where no rank advances, uses CPU or writes output is ended.
  double hang_timeout_s = ToSeconds(defaults::kHangTimeout);
  // How long a rank that has not completed its first step is exempt from hang detection.
  double startup_timeout_s = ToSeconds(defaults::kStartupTimeout);
  std::vector<int> ranks_filter;  // empty = all ranks on the console
  // The job's status (0 = off): how often every machine samples and publishes its ranks.
  double status_interval_s = ToSeconds(defaults::kStatusInterval);
  double straggler_window_s = ToSeconds(defaults::kStragglerWindow);
  double straggler_threshold = defaults::kStragglerThreshold;  // fraction above the median
  bool preflight = false;  // measure every link between machines before training
  double preflight_threshold = defaults::kPreflightThreshold;  // fraction of the median link
  std::string run_id;                                          // empty = generated

  // Per-machine process count (num_processes / num_machines, validated to divide).
  int processes_per_machine() const { return num_processes / num_machines; }
  // Whether membership is elastic: a range of machines (min_machines < num_machines), or
  // rdzv_backend c10d, etcd or etcd-v2 (torchrun's dynamic rendezvous, even for N:N).
  bool elastic() const {
    return rdzv_backend != "static" || (min_machines > 0 && min_machines < num_machines);
  }
  // The fewest machines the job goes on with: min_machines, or num_machines when it is 0.
  int fewest_machines() const { return min_machines > 0 ? min_machines : num_machines; }
};

// Spelling of the enums as in the YAML file.
const char* ToString(DistributedType type);
const char* ToString(MixedPrecision precision);

// Parses the YAML spelling (case-insensitive; "no"/"false" for kNo). False when unknown.
bool ParseDistributedType(std::string_view text, DistributedType* out);
bool ParseMixedPrecision(std::string_view text, MixedPrecision* out);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_CONFIG_CONFIG_H_
