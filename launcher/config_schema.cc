#include "launcher/config_schema.h"

#include <algorithm>
#include <cctype>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "launcher/diagnostics.h"

namespace accel::launcher {
namespace {

using Kind = YamlValue::Kind;

absl::Status Invalid(std::string message) { return absl::InvalidArgumentError(message); }

std::string Describe(const YamlValue& v) {
  switch (v.kind) {
    case Kind::kNull:
      return "nothing";
    case Kind::kScalar:
      return absl::StrCat("'", v.scalar, "'");
    case Kind::kSequence:
      return "a list";
    case Kind::kMap:
      return "a mapping";
  }
  return "nothing";
}

absl::Status SetBool(const YamlValue& v, bool* out) {
  if (v.kind == Kind::kScalar && ParseBool(v.scalar, out)) return absl::OkStatus();
  return Invalid(absl::StrCat("expected true or false, got ", Describe(v)));
}

absl::Status SetInt(const YamlValue& v, int* out) {
  int n = 0;
  if (v.kind == Kind::kScalar && absl::SimpleAtoi(absl::StripAsciiWhitespace(v.scalar), &n)) {
    *out = n;
    return absl::OkStatus();
  }
  return Invalid(absl::StrCat("expected an integer, got ", Describe(v)));
}

absl::Status SetSeconds(const YamlValue& v, double* out) {
  double seconds = 0;
  if (v.kind == Kind::kScalar && absl::SimpleAtod(absl::StripAsciiWhitespace(v.scalar), &seconds) &&
      seconds >= 0 && seconds < 1e9) {
    *out = seconds;
    return absl::OkStatus();
  }
  return Invalid(absl::StrCat("expected a number of seconds >= 0, got ", Describe(v)));
}

absl::Status SetString(const YamlValue& v, std::string* out) {
  if (v.kind == Kind::kNull) {
    out->clear();
    return absl::OkStatus();
  }
  if (v.kind == Kind::kScalar) {
    *out = v.scalar;
    return absl::OkStatus();
  }
  return Invalid(absl::StrCat("expected a single value, got ", Describe(v)));
}

// Reads "0,1,3", a single integer or a YAML list of integers.
absl::Status ParseIntList(const YamlValue& v, std::vector<int>* out) {
  std::vector<std::string> words;
  if (v.kind == Kind::kScalar) {
    words = absl::StrSplit(v.scalar, ',', absl::SkipWhitespace());
  } else if (v.kind == Kind::kSequence) {
    for (const YamlValue& item : v.items) {
      if (item.kind != Kind::kScalar) return Invalid("expected a list of integers");
      words.push_back(item.scalar);
    }
  } else if (v.kind != Kind::kNull) {
    return Invalid(absl::StrCat("expected a list of integers like 0,1, got ", Describe(v)));
  }
  out->clear();
  for (const std::string& word : words) {
    int n = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(word), &n) || n < 0) {
      return Invalid(absl::StrCat("expected a list of integers >= 0 like 0,1, got '", word, "'"));
    }
    out->push_back(n);
  }
  return absl::OkStatus();
}

absl::Status SetGpuIds(const YamlValue& v, Config* c) {
  if (v.kind == Kind::kNull ||
      (v.kind == Kind::kScalar &&
       absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(v.scalar), "all"))) {
    c->gpu_ids = "all";
    return absl::OkStatus();
  }
  std::vector<int> ids;
  absl::Status status = ParseIntList(v, &ids);
  if (!status.ok() || ids.empty()) {
    return Invalid(absl::StrCat("expected 'all' or GPU indices like 0,1, got ", Describe(v)));
  }
  c->gpu_ids = absl::StrJoin(ids, ",");
  return absl::OkStatus();
}

absl::Status SetDistributedType(const YamlValue& v, Config* c) {
  const std::string text = v.kind == Kind::kScalar ? v.scalar : "";
  if (ParseDistributedType(text, &c->distributed_type)) return absl::OkStatus();
  static const std::vector<absl::string_view> kUnsupported = {
      "DEEPSPEED", "FSDP",      "TPU",       "XLA",        "MEGATRON_LM", "MULTI_NPU",
      "MULTI_XPU", "MULTI_MLU", "MULTI_HPU", "MULTI_MUSA", "MULTI_SDAA"};
  for (absl::string_view name : kUnsupported) {
    if (absl::EqualsIgnoreCase(text, name)) {
      return Invalid(absl::StrCat("distributed_type ", name,
                                  " is not supported by accel-launch (supported: NO, MULTI_GPU, "
                                  "MULTI_CPU)"));
    }
  }
  return Invalid(
      WithSuggestion(absl::StrCat("expected NO, MULTI_GPU or MULTI_CPU, got ", Describe(v)), text,
                     {"NO", "MULTI_GPU", "MULTI_CPU"}));
}

absl::Status SetMixedPrecision(const YamlValue& v, Config* c) {
  const std::string text = v.kind == Kind::kScalar ? v.scalar : "";
  if (ParseMixedPrecision(text, &c->mixed_precision)) return absl::OkStatus();
  if (absl::EqualsIgnoreCase(text, "fp8")) {
    return Invalid(
        "mixed_precision fp8 is not supported by accel-launch (supported: no, fp16, bf16)");
  }
  return Invalid(WithSuggestion(absl::StrCat("expected no, fp16 or bf16, got ", Describe(v)), text,
                                {"no", "fp16", "bf16"}));
}

absl::Status SetComputeEnvironment(const YamlValue& v, Config* c) {
  const std::string text = v.kind == Kind::kScalar ? v.scalar : "";
  if (text == "LOCAL_MACHINE") {
    c->compute_environment = text;
    return absl::OkStatus();
  }
  if (text == "AMAZON_SAGEMAKER") {
    return Invalid(
        "compute_environment AMAZON_SAGEMAKER is not supported by accel-launch "
        "(supported: LOCAL_MACHINE)");
  }
  return Invalid(WithSuggestion(absl::StrCat("expected LOCAL_MACHINE, got ", Describe(v)), text,
                                {"LOCAL_MACHINE"}));
}

absl::Status SetRdzvBackend(const YamlValue& v, Config* c) {
  const std::string text = v.kind == Kind::kScalar ? v.scalar : "";
  if (text == "static" || text == "c10d") {
    c->rdzv_backend = text;
    return absl::OkStatus();
  }
  return Invalid(absl::StrCat("rdzv_backend ", Describe(v),
                              " is not supported (accel-launch runs its own rendezvous; use "
                              "static)"));
}

absl::Status SetRanksFilter(const YamlValue& v, Config* c) {
  return ParseIntList(v, &c->ranks_filter);
}

// An accelerate sub-config we cannot honour: fine when absent or empty.
absl::Status Section(const YamlValue& v, absl::string_view what, bool* present) {
  *present = !v.empty();
  if (v.kind != Kind::kNull && v.kind != Kind::kMap && !v.empty()) {
    return Invalid(absl::StrCat("expected a mapping, got ", Describe(v)));
  }
  if (v.empty()) return absl::OkStatus();
  return Invalid(absl::StrCat(what,
                              " is not supported by accel-launch; remove this section or leave it "
                              "empty ({})"));
}

absl::Status SetDeepspeed(const YamlValue& v, Config* c) {
  return Section(v, "DeepSpeed (deepspeed_config)", &c->has_deepspeed_config);
}
absl::Status SetFsdp(const YamlValue& v, Config* c) {
  return Section(v, "FSDP (fsdp_config)", &c->has_fsdp_config);
}
absl::Status SetMegatron(const YamlValue& v, Config* c) {
  return Section(v, "Megatron-LM (megatron_lm_config)", &c->has_megatron_lm_config);
}
absl::Status SetOtherSection(const YamlValue& v, absl::string_view what) {
  bool present = false;
  return Section(v, what, &present);
}

// True when every entry of a mapping is off: false, no, NO, empty or null.
bool AllOff(const YamlValue& v) {
  if (v.empty()) return true;
  if (v.kind != Kind::kMap) return false;
  for (const auto& [key, value] : v.entries) {
    bool flag = true;
    if (!value.empty() &&
        !(value.kind == Kind::kScalar && ParseBool(value.scalar, &flag) && !flag)) {
      return false;
    }
  }
  return true;
}

absl::Status SetDynamo(const YamlValue& v, Config*) {
  if (AllOff(v)) return absl::OkStatus();
  return Invalid(
      "torch.compile (dynamo_config) is not supported by accel-launch; remove this "
      "section or set dynamo_backend: 'NO'");
}

absl::Status SetIpex(const YamlValue& v, Config*) {
  if (AllOff(v)) return absl::OkStatus();
  return Invalid("IPEX (ipex_config) is not supported by accel-launch; remove this section");
}

// A switch we cannot honour: fine when absent or off (false / no / NO).
absl::Status SetOff(const YamlValue& v, absl::string_view what) {
  bool on = false;
  if (v.empty() || (v.kind == Kind::kScalar && ParseBool(v.scalar, &on) && !on)) {
    return absl::OkStatus();
  }
  return Invalid(absl::StrCat(what, " is not supported by accel-launch; remove it or set it off"));
}

absl::Status Ignore(const YamlValue&, Config*) { return absl::OkStatus(); }

std::string Bool(bool b) { return b ? "true" : "false"; }
std::string Seconds(double s) { return absl::StrCat(s); }
std::string Empty(const Config&) { return ""; }

#define ACCEL_KEY(key, kind, acc, write, help, set_expr, get_expr)                          \
  KeySpec {                                                                                 \
#key, KeyKind::kind, acc, WriteMode::write, help,                                       \
        [](const YamlValue& v, [[maybe_unused]] Config* c)                                  \
             -> absl::Status { return set_expr; }, []([[maybe_unused]] const Config& c)     \
                                                        -> std::string { return get_expr; } \
  }
#define ACCEL_BOOL(key, field, acc, write, help) \
  ACCEL_KEY(key, kBool, acc, write, help, SetBool(v, &c->field), Bool(c.field))
#define ACCEL_INT(key, field, acc, write, help) \
  ACCEL_KEY(key, kInt, acc, write, help, SetInt(v, &c->field), absl::StrCat(c.field))
#define ACCEL_SECONDS(key, field, help) \
  ACCEL_KEY(key, kSeconds, false, kWhenNotDefault, help, SetSeconds(v, &c->field), Seconds(c.field))
#define ACCEL_STRING(key, field, acc, write, help) \
  ACCEL_KEY(key, kString, acc, write, help, SetString(v, &c->field), YamlQuote(c.field))
#define ACCEL_IGNORED(key, help) \
  KeySpec { #key, KeyKind::kIgnored, true, WriteMode::kNever, help, Ignore, Empty }

std::vector<KeySpec> MakeSchema() {
  std::vector<KeySpec> keys = {
      ACCEL_IGNORED(additional_args, "SageMaker only; ignored"),
      ACCEL_IGNORED(base_job_name, "SageMaker only; ignored"),
      ACCEL_IGNORED(command_file, "TPU pods only; ignored"),
      ACCEL_IGNORED(commands, "TPU pods only; ignored"),
      ACCEL_KEY(compute_environment, kEnum, true, kAlways,
                "LOCAL_MACHINE (AMAZON_SAGEMAKER is not supported)", SetComputeEnvironment(v, c),
                c.compute_environment),
      ACCEL_BOOL(debug, debug, true, kAlways,
                 "set ACCELERATE_DEBUG_MODE in workers (default false)"),
      ACCEL_KEY(deepspeed_config, kSection, true, kNever, "DeepSpeed: not supported, must be empty",
                SetDeepspeed(v, c), std::string(c.has_deepspeed_config ? "(set)" : "{}")),
      ACCEL_KEY(distributed_type, kEnum, true, kAlways, "NO, MULTI_GPU or MULTI_CPU (default NO)",
                SetDistributedType(v, c), ToString(c.distributed_type)),
      ACCEL_KEY(downcast_bf16, kBool, true, kAlways, "TPU only: 'no' or 'yes' (default 'no')",
                SetBool(v, &c->downcast_bf16), std::string(c.downcast_bf16 ? "'yes'" : "'no'")),
      ACCEL_KEY(dynamo_backend, kIgnored, true, kNever, "old spelling of dynamo_config; must be NO",
                SetOff(v, "torch.compile (dynamo_backend)"), ""),
      ACCEL_KEY(dynamo_config, kSection, true, kNever,
                "torch.compile: not supported, must be empty or dynamo_backend NO", SetDynamo(v, c),
                ""),
      ACCEL_IGNORED(ec2_instance_type, "SageMaker only; ignored"),
      ACCEL_BOOL(enable_cpu_affinity, enable_cpu_affinity, true, kAlways,
                 "pin each worker to the CPUs near its GPU (default false)"),
      ACCEL_KEY(fp8_config, kSection, true, kNever, "FP8: not supported, must be empty",
                SetOtherSection(v, "FP8 (fp8_config)"), ""),
      ACCEL_KEY(fsdp_config, kSection, true, kNever, "FSDP: not supported, must be empty",
                SetFsdp(v, c), std::string(c.has_fsdp_config ? "(set)" : "{}")),
      ACCEL_KEY(gpu_ids, kList, true, kAlways, "'all' or GPU indices like 0,1 (default all)",
                SetGpuIds(v, c), c.gpu_ids),
      ACCEL_INT(gradient_accumulation_steps, gradient_accumulation_steps, false, kWhenNotDefault,
                "micro-steps per optimizer step, >= 1 (default 1)"),
      ACCEL_SECONDS(hang_timeout, hang_timeout_s,
                    "report libaccel workers that stop advancing for this long; 0 = off"),
      ACCEL_IGNORED(iam_role_name, "SageMaker only; ignored"),
      ACCEL_IGNORED(image_uri, "SageMaker only; ignored"),
      ACCEL_KEY(ipex_config, kSection, true, kNever, "IPEX: not supported, must be empty or off",
                SetIpex(v, c), ""),
      ACCEL_STRING(local_addr, local_addr, false, kWhenNotDefault,
                   "address other machines reach this one at (default: auto)"),
      ACCEL_STRING(log_dir, log_dir, false, kWhenNotDefault,
                   "write each rank's output to <log_dir>/<run>/rank_<N>.log (default: none)"),
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
                "Megatron-LM: not supported, must be empty", SetMegatron(v, c),
                std::string(c.has_megatron_lm_config ? "(set)" : "{}")),
      ACCEL_KEY(mixed_precision, kEnum, true, kAlways, "no, fp16 or bf16 (default no)",
                SetMixedPrecision(v, c), YamlQuote(ToString(c.mixed_precision))),
      ACCEL_SECONDS(monitor_interval, monitor_interval_s,
                    "how often workers are polled, seconds (default 0.1)"),
      ACCEL_KEY(mpirun_config, kSection, true, kNever,
                "mpirun launch: not supported, must be empty (run mpirun ... accel-launch)",
                SetOtherSection(v, "mpirun launch (mpirun_config)"), ""),
      ACCEL_STRING(network_interface, network_interface, false, kWhenNotDefault,
                   "network interface whose address is local_addr (default: auto)"),
      ACCEL_INT(num_machines, num_machines, true, kAlways, "number of machines, >= 1 (default 1)"),
      ACCEL_INT(num_processes, num_processes, true, kAlways,
                "TOTAL processes over all machines, >= 1, divisible by num_machines (default 1)"),
      ACCEL_KEY(parallelism_config, kSection, true, kNever, "not supported, must be empty",
                SetOtherSection(v, "parallelism_config"), ""),
      ACCEL_IGNORED(profile, "SageMaker only; ignored"),
      ACCEL_IGNORED(py_version, "SageMaker only; ignored"),
      ACCEL_IGNORED(pytorch_version, "SageMaker only; ignored"),
      ACCEL_KEY(ranks_filter, kList, false, kWhenNotDefault,
                "ranks whose output reaches the console, like 0,1 (default: all)",
                SetRanksFilter(v, c), absl::StrJoin(c.ranks_filter, ",")),
      ACCEL_KEY(rdzv_backend, kEnum, true, kAlways, "static (default; c10d accepted as the same)",
                SetRdzvBackend(v, c), c.rdzv_backend),
      ACCEL_SECONDS(rdzv_timeout, rdzv_timeout_s,
                    "how long machines wait for each other at rendezvous, seconds (default 900)"),
      ACCEL_STRING(rdzv_token_file, rdzv_token_file, false, kWhenNotDefault,
                   "file holding the shared rendezvous token (default: generated)"),
      ACCEL_IGNORED(region, "SageMaker only; ignored"),
      ACCEL_STRING(run_id, run_id, false, kNever,
                   "job id shared by all machines (default: generated)"),
      ACCEL_BOOL(same_network, same_network, true, kAlways,
                 "all machines on one network (default true)"),
      ACCEL_IGNORED(sagemaker_inputs_file, "SageMaker only; ignored"),
      ACCEL_IGNORED(sagemaker_metrics_file, "SageMaker only; ignored"),
      ACCEL_SECONDS(shutdown_grace, shutdown_grace_s,
                    "SIGTERM → this many seconds → SIGKILL when stopping workers (default 30)"),
      ACCEL_BOOL(strict, strict, false, kWhenNotDefault,
                 "version mismatch between machines is an error (default false: warning)"),
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
  static const std::vector<absl::string_view> kReserved = {"y",     "n",  "yes", "no",   "true",
                                                           "false", "on", "off", "null", "~"};
  bool quote = value.empty();
  for (absl::string_view word : kReserved) quote = quote || absl::EqualsIgnoreCase(value, word);
  double number = 0;
  quote = quote || absl::SimpleAtod(value, &number);
  quote = quote || absl::StrContains(value, ": ") || absl::StrContains(value, " #") ||
          value.front() == ' ' || value.back() == ' ' ||
          absl::string_view("!&*-?[]{},|>'\"%@`#:").find(value.front()) != absl::string_view::npos;
  if (!quote) return std::string(value);
  std::string out = "'";
  for (char ch : value) {
    out.push_back(ch);
    if (ch == '\'') out.push_back('\'');
  }
  out.push_back('\'');
  return out;
}

bool ParseBool(absl::string_view text, bool* out) {
  text = absl::StripAsciiWhitespace(text);
  for (absl::string_view word : {"true", "yes", "on", "1", "y"}) {
    if (absl::EqualsIgnoreCase(text, word)) {
      *out = true;
      return true;
    }
  }
  for (absl::string_view word : {"false", "no", "off", "0", "n"}) {
    if (absl::EqualsIgnoreCase(text, word)) {
      *out = false;
      return true;
    }
  }
  return false;
}

YamlValue ScalarValue(absl::string_view text) {
  YamlValue value;
  value.kind = YamlValue::Kind::kScalar;
  value.scalar = std::string(text);
  return value;
}

}  // namespace accel::launcher
