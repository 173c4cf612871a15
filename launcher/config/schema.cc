#include "launcher/config/schema.h"

#include <algorithm>
#include <cctype>
#include <regex>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "launcher/config/accelerate_args.h"
#include "launcher/config/values.h"

namespace accel::launcher {
namespace {

using Kind = YamlValue::Kind;
using values::SetBool;
using values::SetComputeEnvironment;
using values::SetDistributedType;
using values::SetDynamo;
using values::SetDynamoBackend;
using values::SetDynamoMode;
using values::SetFraction;
using values::SetGpuIds;
using values::SetInt;
using values::SetIpex;
using values::SetLegacyFp16;
using values::SetMixedPrecision;
using values::SetOff;
using values::SetOtherSection;
using values::SetPositive;
using values::SetRanksFilter;
using values::SetRdzvBackend;
using values::SetSeconds;
using values::SetString;

absl::Status Ignore(const YamlValue&, Config*) { return absl::OkStatus(); }

// accelerate's multi-CPU launch through mpirun: accel-launch does not start mpirun itself.
absl::Status SetMpirun(const YamlValue& v) {
  for (const auto& [key, value] : v.entries) {
    if (key.scalar == "mpirun_hostfile" && !value.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "mpirun_hostfile ", value.scalar,
          ": accel-launch does not start mpirun itself; remove mpirun_config and run `mpirun "
          "--hostfile ",
          value.scalar,
          " -n <machines> --npernode 1 accel-launch ... PROGRAM` instead (one accel-launch per "
          "machine; Open MPI is detected)"));
    }
  }
  return absl::OkStatus();  // mpirun_ccl alone: only for that launch, nothing to do here
}

std::string Bool(bool b) { return b ? "true" : "false"; }
std::string Seconds(double s) { return absl::StrCat(s); }
std::string Empty(const Config&) { return ""; }

// A plugin section as a YAML flow mapping of the namespace entries it set (names with `prefix`).
std::string Section(const Config& c, absl::string_view prefix) {
  std::vector<std::string> items;
  for (const auto& [name, arg] : c.accelerate_args) {
    if (absl::StartsWith(name, prefix) ||
        (prefix == "deepspeed_config" &&
         std::find(c.deepspeed_config_keys.begin(), c.deepspeed_config_keys.end(), name) !=
             c.deepspeed_config_keys.end())) {
      items.push_back(absl::StrCat(name, ": ", YamlQuote(arg.str)));
    }
  }
  return absl::StrCat("{", absl::StrJoin(items, ", "), "}");
}

// dynamo_config as a YAML flow mapping, "{}" when every setting has its default.
std::string DynamoSection(const Config& c) {
  const Config d;
  if (c.dynamo_backend == d.dynamo_backend && c.dynamo_mode == d.dynamo_mode &&
      c.dynamo_use_fullgraph == d.dynamo_use_fullgraph &&
      c.dynamo_use_dynamic == d.dynamo_use_dynamic &&
      c.dynamo_use_regional_compilation == d.dynamo_use_regional_compilation) {
    return "{}";
  }
  return absl::StrCat(
      "{dynamo_backend: ", YamlQuote(c.dynamo_backend), ", dynamo_mode: ", c.dynamo_mode,
      ", dynamo_use_dynamic: ", Bool(c.dynamo_use_dynamic),
      ", dynamo_use_fullgraph: ", Bool(c.dynamo_use_fullgraph),
      ", dynamo_use_regional_compilation: ", Bool(c.dynamo_use_regional_compilation), "}");
}

// clang-format off
// One table row: the setter and getter are captureless lambdas over `v` (the value) and `c`.
#define ACCEL_KEY(key, kind, acc, write, help, set_expr, get_expr)                        \
  KeySpec{#key, KeyKind::kind, acc, WriteMode::write, help,                               \
          [](const YamlValue& v, [[maybe_unused]] Config* c) -> absl::Status {            \
            return set_expr;                                                              \
          },                                                                              \
          []([[maybe_unused]] const Config& c) -> std::string { return get_expr; }}
#define ACCEL_BOOL(key, field, acc, write, help) \
  ACCEL_KEY(key, kBool, acc, write, help, SetBool(v, &c->field), Bool(c.field))
#define ACCEL_INT(key, field, acc, write, help) \
  ACCEL_KEY(key, kInt, acc, write, help, SetInt(v, &c->field), absl::StrCat(c.field))
#define ACCEL_SECONDS(key, field, help)                                                    \
  ACCEL_KEY(key, kSeconds, false, kWhenNotDefault, help, SetSeconds(v, &c->field),        \
            Seconds(c.field))
#define ACCEL_STRING(key, field, acc, write, help) \
  ACCEL_KEY(key, kString, acc, write, help, SetString(v, &c->field), YamlQuote(c.field))
#define ACCEL_IGNORED(key, help) \
  KeySpec{#key, KeyKind::kIgnored, true, WriteMode::kNever, help, Ignore, Empty}
// clang-format on

// Returns every key, alphabetically. One function on purpose: a table, one row per key, that a
// reader scans whole to see what a config file may hold; split, it would read no better.
std::vector<KeySpec> MakeSchema() {
  const Config defaults;  // help texts quote the defaults of common/defaults.h from here
  std::vector<KeySpec> keys = {
      ACCEL_KEY(accelerate_version, kString, false, kWhenNotDefault,
                "the HF accelerate release (0.15 .. 1.14, X.Y) whose launch environment Python "
                "scripts get: the variables and defaults of that release's `accelerate launch` "
                "(default 1.14)",
                SetAccelerateVersion(v, &c->accelerate_version), c.accelerate_version),
      ACCEL_IGNORED(additional_args, "SageMaker only; ignored"),
      ACCEL_IGNORED(base_job_name, "SageMaker only; ignored"),
      ACCEL_IGNORED(command_file, "TPU pods only; ignored"),
      ACCEL_IGNORED(commands, "TPU pods only; ignored"),
      ACCEL_KEY(compute_environment, kEnum, true, kAlways,
                "LOCAL_MACHINE (AMAZON_SAGEMAKER is not supported)", SetComputeEnvironment(v, c),
                c.compute_environment),
      ACCEL_BOOL(debug, debug, true, kAlways,
                 "set ACCELERATE_DEBUG_MODE in workers (default false)"),
      ACCEL_BOOL(dedup_output, dedup_output, false, kWhenNotDefault,
                 "identical console lines from several ranks within dedup_window are printed "
                 "once with the set of ranks ('[ranks 0-7] ...'); log files keep every line "
                 "(default true)"),
      ACCEL_SECONDS(dedup_window, dedup_window_s,
                    absl::StrCat("how long a console line waits for other ranks to print the "
                                 "same, seconds; 0 = no de-duplication (default ",
                                 Seconds(defaults.dedup_window_s), ")")),
      ACCEL_KEY(deepspeed_config, kSection, true, kNever,
                "DeepSpeed's settings (zero_stage, offload_*, deepspeed_config_file, ...) for "
                "Python scripts: passed to the workers as accelerate launch does",
                SetAccelerateSection(v, "deepspeed_config", c), Section(c, "deepspeed_config")),
      ACCEL_KEY(distributed_type, kEnum, true, kAlways,
                "NO, MULTI_GPU or MULTI_CPU (default NO); FSDP, DEEPSPEED, MEGATRON_LM for "
                "Python scripts (a multi-GPU launch with accelerate's plugin variables)",
                SetDistributedType(v, c),
                YamlQuote(c.accelerate_plugin.empty() ? ToString(c.distributed_type)
                                                      : c.accelerate_plugin)),
      ACCEL_KEY(downcast_bf16, kBool, true, kAlways, "TPU only: 'no' or 'yes' (default 'no')",
                SetBool(v, &c->downcast_bf16), std::string(c.downcast_bf16 ? "'yes'" : "'no'")),
      ACCEL_KEY(dynamo_backend, kEnum, true, kNever,
                "torch.compile backend for Python scripts (ACCELERATE_DYNAMO_BACKEND): NO "
                "(default), INDUCTOR, EAGER, AOT_EAGER, CUDAGRAPHS, ...",
                SetDynamoBackend(v, c), YamlQuote(c.dynamo_backend)),
      ACCEL_KEY(dynamo_config, kSection, true, kWhenNotDefault,
                "torch.compile settings for Python scripts: dynamo_backend, dynamo_mode, "
                "dynamo_use_fullgraph, dynamo_use_dynamic, dynamo_use_regional_compilation",
                SetDynamo(v, c), DynamoSection(c)),
      ACCEL_KEY(dynamo_mode, kEnum, true, kNever,
                "torch.compile mode: default, reduce-overhead, max-autotune (default default)",
                SetDynamoMode(v, c), c.dynamo_mode),
      ACCEL_BOOL(dynamo_use_dynamic, dynamo_use_dynamic, true, kNever,
                 "torch.compile dynamic shapes (default false)"),
      ACCEL_BOOL(dynamo_use_fullgraph, dynamo_use_fullgraph, true, kNever,
                 "torch.compile full graph (default false)"),
      ACCEL_BOOL(dynamo_use_regional_compilation, dynamo_use_regional_compilation, true, kNever,
                 "torch.compile regional compilation (default false)"),
      ACCEL_IGNORED(ec2_instance_type, "SageMaker only; ignored"),
      ACCEL_BOOL(elastic_in_place, elastic_in_place, false, kWhenNotDefault,
                 "elastic membership: the program recovers in place (libaccel's "
                 "Accelerator::recover(), as train.bin): when machines leave, the survivors keep "
                 "their workers and tell them the new generation (ACCEL_GENERATION_FILE); a "
                 "machine whose worker failed leaves (default false: restart every worker)"),
      ACCEL_BOOL(enable_cpu_affinity, enable_cpu_affinity, true, kAlways,
                 "pin each local process to its own share of the CPUs, NUMA node by NUMA node; "
                 "ACCELERATE_CPU_AFFINITY=1 in workers (default false)"),
      ACCEL_KEY(fp8_config, kSection, true, kNever,
                "FP8 settings (backend, fp8_format, ...) for Python scripts with mixed_precision "
                "fp8: ACCELERATE_FP8_*",
                SetAccelerateSection(v, "fp8_config", c), Section(c, "fp8_")),
      ACCEL_KEY(fp16, kIgnored, true, kNever,
                "old accelerate spelling: true = mixed_precision fp16", SetLegacyFp16(v, c), ""),
      ACCEL_KEY(fsdp_config, kSection, true, kNever,
                "FSDP settings (fsdp_sharding_strategy, fsdp_offload_params, ...) for Python "
                "scripts: FSDP_* in the workers",
                SetAccelerateSection(v, "fsdp_config", c), Section(c, "fsdp_")),
      ACCEL_KEY(gpu_ids, kList, true, kAlways, "'all' or GPU indices like 0,1 (default all)",
                SetGpuIds(v, c), YamlQuote(c.gpu_ids)),
      ACCEL_INT(gradient_accumulation_steps, gradient_accumulation_steps, false, kWhenNotDefault,
                "micro-steps per optimizer step, >= 1 (default 1)"),
      ACCEL_SECONDS(hang_timeout, hang_timeout_s,
                    absl::StrCat("end a job of 2+ processes where no rank advanced, used CPU or "
                                 "wrote output for this long, naming the rank that stopped; "
                                 "0 = off (default ",
                                 Seconds(defaults.hang_timeout_s), ")")),
      ACCEL_IGNORED(iam_role_name, "SageMaker only; ignored"),
      ACCEL_IGNORED(image_uri, "SageMaker only; ignored"),
      ACCEL_KEY(ipex_config, kSection, true, kNever, "IPEX: not supported, must be empty or off",
                SetIpex(v, c), ""),
      ACCEL_KEY(local_ranks_filter, kList, false, kWhenNotDefault,
                "torchrun's: local ranks whose output reaches the console on each machine, like 0 "
                "(default: all)",
                values::ParseIntList(v, &c->local_ranks_filter),
                absl::StrJoin(c.local_ranks_filter, ",")),
      ACCEL_STRING(local_addr, local_addr, false, kWhenNotDefault,
                   "address other machines reach this one at (default: auto)"),
      ACCEL_STRING(log_dir, log_dir, false, kWhenNotDefault,
                   "write each rank's output to "
                   "<log_dir>/<run_id>/attempt_<k>/rank_<r>/{stdout,stderr}.log (default: none)"),
      ACCEL_KEY(log_mode, kEnum, false, kWhenNotDefault,
                "who may read the log files: private (default: you only, 0700 directories and "
                "0600 files) or group (your group may read them: 0750 and 0640)",
                values::SetLogMode(v, c), c.log_mode),
      ACCEL_INT(machine_rank, machine_rank, true, kAlways,
                "this machine's index, 0 .. num_machines-1 (default 0)"),
      ACCEL_STRING(main_process_ip, main_process_ip, true, kWhenNotDefault,
                   "machine 0's address; required when num_machines > 1"),
      ACCEL_INT(main_process_port, main_process_port, true, kWhenNotDefault,
                "machine 0's rendezvous port, 0..65535; 0 = a free port (one machine only)"),
      ACCEL_STRING(main_training_function, main_training_function, true, kAlways,
                   "accepted for compatibility (default main)"),
      ACCEL_INT(max_restarts, max_restarts, false, kWhenNotDefault,
                "new rendezvous attempts after a worker failure, >= 0 (default 0)"),
      ACCEL_KEY(megatron_lm_config, kSection, true, kNever,
                "Megatron-LM settings (megatron_lm_tp_degree, ...) for Python scripts: "
                "MEGATRON_LM_* in the workers",
                SetAccelerateSection(v, "megatron_lm_config", c), Section(c, "megatron_lm_")),
      ACCEL_INT(min_machines, min_machines, false, kWhenNotDefault,
                "elastic membership: the fewest machines the job goes on with when machines are "
                "lost, 1..num_machines (num_machines is the most); 0 = num_machines (default 0)"),
      ACCEL_KEY(mixed_precision, kEnum, true, kAlways,
                "no, fp16 or bf16 (default no); fp8 for Python scripts", SetMixedPrecision(v, c),
                YamlQuote(c.fp8 ? "fp8" : ToString(c.mixed_precision))),
      ACCEL_SECONDS(monitor_interval, monitor_interval_s,
                    absl::StrCat("how often workers are polled, seconds (default ",
                                 Seconds(defaults.monitor_interval_s), ")")),
      ACCEL_KEY(mpirun_config, kSection, true, kNever,
                "mpirun launch: not supported, must be empty (run mpirun ... accel-launch)",
                SetMpirun(v), ""),
      ACCEL_STRING(network_interface, network_interface, false, kWhenNotDefault,
                   "interface whose IPv4 address becomes local_addr when that is unset"),
      ACCEL_INT(num_cpu_threads_per_process, num_cpu_threads_per_process, false, kWhenNotDefault,
                "OMP_NUM_THREADS in every worker; 0 = automatic (default 0)"),
      ACCEL_INT(num_machines, num_machines, true, kAlways, "number of machines, >= 1 (default 1)"),
      ACCEL_INT(num_processes, num_processes, true, kAlways,
                "TOTAL processes over all machines, >= 1, divisible by num_machines (default 1)"),
      ACCEL_KEY(parallelism_config, kSection, true, kNever,
                "accelerate's ParallelismConfig (parallelism_config_dp_shard_size, ...) for Python "
                "scripts: PARALLELISM_CONFIG_* in the workers",
                SetAccelerateSection(v, "parallelism_config", c), Section(c, "parallelism_config")),
      ACCEL_BOOL(preflight, preflight, false, kWhenNotDefault,
                 "before training, measure bandwidth and latency between every pair of machines "
                 "and an all-reduce of the bucket size; a slow link fails the launch under strict "
                 "(default false)"),
      ACCEL_KEY(preflight_threshold, kSeconds, false, kWhenNotDefault,
                absl::StrCat("preflight flags a link below this fraction of the median link's "
                             "bandwidth (default ",
                             defaults.preflight_threshold, ")"),
                SetFraction(v, &c->preflight_threshold), absl::StrCat(c.preflight_threshold)),
      ACCEL_IGNORED(profile, "SageMaker only; ignored"),
      ACCEL_IGNORED(py_version, "SageMaker only; ignored"),
      ACCEL_STRING(python, python, false, kWhenNotDefault,
                   "interpreter that runs PROGRAM.py and -m MODULE (default python3, from PATH)"),
      ACCEL_BOOL(python_progress, python_progress, false, kWhenNotDefault,
                 "Python workers write the progress record libaccel writes (steps, collectives) "
                 "through a sitecustomize the launcher ships, once they import torch "
                 "(default true)"),
      ACCEL_IGNORED(pytorch_version, "SageMaker only; ignored"),
      ACCEL_KEY(ranks_filter, kList, false, kWhenNotDefault,
                "ranks whose output reaches the console, like 0,1 (default: all)",
                SetRanksFilter(v, c), absl::StrJoin(c.ranks_filter, ",")),
      ACCEL_KEY(rdzv_backend, kEnum, true, kAlways,
                "static (default: a fixed set of machines) or c10d, etcd, etcd-v2 (elastic "
                "membership: a lost machine restarts the others without it)",
                SetRdzvBackend(v, c), c.rdzv_backend),
      ACCEL_BOOL(rdzv_insecure, rdzv_insecure, false, kWhenNotDefault,
                 "let a multi-machine job run without a rendezvous token: anyone who reaches "
                 "the port can join, use the store and abort it (default false: refused)"),
      ACCEL_SECONDS(rdzv_last_call, rdzv_last_call_s,
                    absl::StrCat("elastic membership: how long a generation with min_machines "
                                 "machines waits for more before it starts, seconds (default ",
                                 Seconds(defaults.rdzv_last_call_s), ")")),
      ACCEL_SECONDS(rdzv_timeout, rdzv_timeout_s,
                    absl::StrCat("how long machines wait for each other at rendezvous, seconds "
                                 "(default ",
                                 Seconds(defaults.rdzv_timeout_s), ")")),
      ACCEL_STRING(rdzv_token_file, rdzv_token_file, false, kWhenNotDefault,
                   "file holding the shared rendezvous token, relative to the config file "
                   "(`accel-launch config` writes one; one machine: generated)"),
      ACCEL_IGNORED(region, "SageMaker only; ignored"),
      ACCEL_STRING(run_id, run_id, false, kNever,
                   "job id shared by all machines (default: generated)"),
      ACCEL_BOOL(same_network, same_network, true, kAlways,
                 "accepted for compatibility; rendezvous works either way (default true)"),
      ACCEL_IGNORED(sagemaker_inputs_file, "SageMaker only; ignored"),
      ACCEL_IGNORED(sagemaker_metrics_file, "SageMaker only; ignored"),
      ACCEL_SECONDS(shutdown_grace, shutdown_grace_s,
                    absl::StrCat("SIGTERM → this many seconds → SIGKILL when stopping workers "
                                 "(default ",
                                 Seconds(defaults.shutdown_grace_s), ")")),
      ACCEL_SECONDS(startup_timeout, startup_timeout_s,
                    absl::StrCat("hang detection's start-up grace: a rank that has not completed "
                                 "its first step is not judged hung for this long after it "
                                 "started, unless stopped (default ",
                                 Seconds(defaults.startup_timeout_s), ")")),
      ACCEL_SECONDS(status_interval, status_interval_s,
                    absl::StrCat("how often every machine samples and publishes its ranks for "
                                 "the status line and `accel-launch status`, seconds; 0 = off "
                                 "(default ",
                                 Seconds(defaults.status_interval_s), ")")),
      ACCEL_KEY(straggler_threshold, kSeconds, false, kWhenNotDefault,
                absl::StrCat("a rank whose own work per step is more than this fraction above the "
                             "median rank's is named a straggler (default ",
                             defaults.straggler_threshold, ")"),
                SetPositive(v, &c->straggler_threshold), absl::StrCat(c.straggler_threshold)),
      ACCEL_SECONDS(straggler_window, straggler_window_s,
                    absl::StrCat("the window over which ranks' pace is compared, seconds "
                                 "(default ",
                                 Seconds(defaults.straggler_window_s), ")")),
      ACCEL_BOOL(strict, strict, false, kWhenNotDefault,
                 "version mismatch between machines is an error (default false: warning); a slow "
                 "link found by the preflight fails the launch"),
      ACCEL_BOOL(tee, tee, false, kWhenNotDefault,
                 "with log_dir, also print worker output on the console (default false)"),
      ACCEL_STRING(tls_ca_file, tls_ca_file, false, kWhenNotDefault, "TLS CA for rendezvous"),
      ACCEL_STRING(tls_cert_file, tls_cert_file, false, kWhenNotDefault,
                   "TLS certificate for rendezvous"),
      ACCEL_STRING(tls_key_file, tls_key_file, false, kWhenNotDefault, "TLS key for rendezvous"),
      ACCEL_KEY(tp_config, kSection, true, kNever,
                "tensor parallelism: not supported, must be empty",
                SetOtherSection(v, "tensor parallelism (tp_config)"), ""),
      ACCEL_KEY(tpu_env, kIgnored, true, kAlways, "TPU pods only; ignored", Ignore(v, c),
                std::string("[]")),
      ACCEL_IGNORED(tpu_name, "TPU pods only; ignored"),
      ACCEL_BOOL(tpu_use_cluster, tpu_use_cluster, true, kAlways, "TPU pods only (default false)"),
      ACCEL_BOOL(tpu_use_sudo, tpu_use_sudo, true, kAlways, "TPU pods only (default false)"),
      ACCEL_IGNORED(tpu_vm, "TPU pods only; ignored"),
      ACCEL_IGNORED(tpu_zone, "TPU pods only; ignored"),
      ACCEL_IGNORED(transformers_version, "SageMaker only; ignored"),
      ACCEL_BOOL(use_cpu, use_cpu, true, kAlways,
                 "run on CPU even when GPUs exist (default false)"),
      ACCEL_KEY(use_mps_device, kIgnored, true, kNever, "Apple MPS: accepted when false",
                SetOff(v, "Apple MPS (use_mps_device)"), ""),
  };
  return keys;
}

}  // namespace

const std::vector<KeySpec>& Schema() {
  static const std::vector<KeySpec>* const keys = new std::vector<KeySpec>(MakeSchema());
  return *keys;
}

const KeySpec* FindKey(absl::string_view name) {
  std::string normalized(name);
  std::replace(normalized.begin(), normalized.end(), '-', '_');
  for (const KeySpec& key : Schema()) {
    if (key.name == normalized) return &key;
  }
  return nullptr;
}

std::vector<absl::string_view> KeyNames() {
  std::vector<absl::string_view> names;
  for (const KeySpec& key : Schema()) names.push_back(key.name);
  return names;
}

std::string EnvVarName(absl::string_view key) {
  return absl::StrCat("ACCEL_", absl::AsciiStrToUpper(key));
}

std::string YamlQuote(absl::string_view value) {
  // Plain scalars that PyYAML (accelerate's loader, YAML 1.1) resolves to something other than a
  // string: booleans, null, ints (0x, 0o, 0b, sexagesimal, underscores), floats, timestamps,
  // merge and value keys.
  static const std::regex kNotAString(
      "y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF|"
      "~|null|Null|NULL|<<|=|"
      "[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|"
      "[-+]?[1-9][0-9_]*(:[0-5]?[0-9])+|"
      "[-+]?([0-9][0-9_]*)?\\.[0-9_]*([eE][-+]?[0-9]+)?|[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+\\.[0-9_]*|"
      "[-+]?\\.(inf|Inf|INF)|\\.(nan|NaN|NAN)|"
      "[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt ].*)?");
  const std::string text(value);
  bool quote = value.empty() || std::regex_match(text, kNotAString);
  // YAML syntax: indicators at the start, ": " and " #" inside, edge spaces, tabs.
  quote = quote || absl::StrContains(value, ": ") || absl::StrContains(value, " #") ||
          absl::StrContains(value, "\t") || value.back() == ':' || value.front() == ' ' ||
          value.back() == ' ' ||
          absl::string_view("!&*-?[]{},|>'\"%@`#:").find(value.front()) != absl::string_view::npos;
  if (!quote) return text;
  std::string out = "'";
  for (char ch : value) {
    out.push_back(ch);
    if (ch == '\'') out.push_back('\'');
  }
  out.push_back('\'');
  return out;
}

}  // namespace accel::launcher
