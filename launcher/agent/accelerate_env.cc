#include "launcher/agent/accelerate_env.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/env_contract.h"
#include "launcher/config/accelerate_args.h"

namespace accel::launcher {
namespace {

using Vars = std::map<std::string, std::string>;

// Reads the plan's accelerate arguments as accelerate's launch code reads its namespace.
class Args {
 public:
  explicit Args(const LaunchPlan& plan)
      : args_(plan.accelerate_args), release_(plan.accelerate_release) {}
  AccelerateArg Get(absl::string_view name) const { return ArgOrDefault(args_, release_, name); }
  std::string Str(absl::string_view name) const { return Get(name).str; }
  std::string Lower(absl::string_view name) const { return absl::AsciiStrToLower(Str(name)); }
  bool Given(absl::string_view name) const { return !Get(name).none; }
  // Whether the release is `release` (major * 100 + minor) or later.
  bool Since(int release) const { return release_ >= release; }

 private:
  const std::map<std::string, AccelerateArg>& args_;
  int release_;
};

// env[NAME] = str(args.name) when args.name is not None.
void IfGiven(const Args& args, Vars* v, const std::string& env, absl::string_view name,
             bool lower = false) {
  if (args.Given(name)) (*v)[env] = lower ? args.Lower(name) : args.Str(name);
}

void AddFsdp(const Args& a, Vars* v) {
  Vars& e = *v;
  e["ACCELERATE_USE_FSDP"] = "true";
  if (a.Since(106)) e["FSDP_VERSION"] = a.Str("fsdp_version");
  e["FSDP_SHARDING_STRATEGY"] = a.Str("fsdp_sharding_strategy");
  if (a.Since(106)) e["FSDP_RESHARD_AFTER_FORWARD"] = a.Lower("fsdp_reshard_after_forward");
  e["FSDP_OFFLOAD_PARAMS"] = a.Lower("fsdp_offload_params");
  e["FSDP_MIN_NUM_PARAMS"] = a.Str("fsdp_min_num_params");
  IfGiven(a, v, "FSDP_AUTO_WRAP_POLICY", "fsdp_auto_wrap_policy");
  IfGiven(a, v, "FSDP_TRANSFORMER_CLS_TO_WRAP", "fsdp_transformer_layer_cls_to_wrap");
  // The prefetch policy's old name: the only one before 0.26, winning over the new up to 0.34.
  const bool old_name = !a.Since(100) && a.Given("fsdp_backward_prefetch_policy");
  if (!a.Since(26) || old_name) {
    IfGiven(a, v, "FSDP_BACKWARD_PREFETCH", "fsdp_backward_prefetch_policy");
  } else {
    IfGiven(a, v, "FSDP_BACKWARD_PREFETCH", "fsdp_backward_prefetch");
  }
  IfGiven(a, v, "FSDP_STATE_DICT_TYPE", "fsdp_state_dict_type");
  if (a.Since(21)) {
    e["FSDP_FORWARD_PREFETCH"] = a.Lower("fsdp_forward_prefetch");
    e["FSDP_USE_ORIG_PARAMS"] = a.Lower("fsdp_use_orig_params");
  }
  if (a.Since(24)) e["FSDP_CPU_RAM_EFFICIENT_LOADING"] = a.Lower("fsdp_cpu_ram_efficient_loading");
  if (a.Since(21)) e["FSDP_SYNC_MODULE_STATES"] = a.Lower("fsdp_sync_module_states");
  if (a.Since(31)) e["FSDP_ACTIVATION_CHECKPOINTING"] = a.Lower("fsdp_activation_checkpointing");
  if (a.Since(110)) IfGiven(a, v, "FSDP_IGNORED_MODULES", "fsdp_ignored_modules");
}

void AddMegatron(const Args& a, Vars* v) {
  (*v)["ACCELERATE_USE_MEGATRON_LM"] = "true";
  if (!a.Since(113)) {  // the four switches before 1.13, after the three always set
    for (const char* name : {"tp_degree", "pp_degree", "gradient_clipping"}) {
      (*v)[absl::StrCat("MEGATRON_LM_", absl::AsciiStrToUpper(name))] =
          a.Str(absl::StrCat("megatron_lm_", name));
    }
    for (const char* name : {"num_micro_batches", "sequence_parallelism", "recompute_activations",
                             "use_distributed_optimizer"}) {
      IfGiven(a, v, absl::StrCat("MEGATRON_LM_", absl::AsciiStrToUpper(name)),
              absl::StrCat("megatron_lm_", name));
    }
    return;
  }
  // Set always (argparse defaults), then only when given, in accelerate's order.
  for (const char* name : {"tp_degree", "use_custom_fsdp"}) {
    (*v)[absl::StrCat("MEGATRON_LM_", absl::AsciiStrToUpper(name))] =
        a.Str(absl::StrCat("megatron_lm_", name));
  }
  for (const char* name : {"no_load_optim",
                           "eod_mask_loss",
                           "no_save_optim",
                           "optimizer_cpu_offload",
                           "use_precision_aware_optimizer",
                           "overlap_cpu_optimizer_d2h_h2d",
                           "decoder_last_pipeline_num_layers",
                           "num_micro_batches",
                           "sequence_parallelism",
                           "recompute_activations",
                           "use_distributed_optimizer",
                           "recompute_granularity",
                           "recompute_method",
                           "recompute_num_layers",
                           "attention_backend",
                           "expert_model_parallel_size",
                           "context_parallel_size",
                           "attention_dropout",
                           "hidden_dropout",
                           "attention_softmax_in_fp32",
                           "expert_tensor_parallel_size",
                           "calculate_per_token_loss",
                           "use_rotary_position_embeddings"}) {
    IfGiven(a, v, absl::StrCat("MEGATRON_LM_", absl::AsciiStrToUpper(name)),
            absl::StrCat("megatron_lm_", name));
  }
  for (const char* name : {"pp_degree", "gradient_clipping"}) {
    (*v)[absl::StrCat("MEGATRON_LM_", absl::AsciiStrToUpper(name))] =
        a.Str(absl::StrCat("megatron_lm_", name));
  }
}

// setup_fp8_env: every fp8_* argument that is not None, the linear-precision triple split (from
// 1.4; before, one variable with the tuple's text).
void AddFp8(const LaunchPlan& plan, const Args& a, Vars* v) {
  std::map<std::string, bool> names;
  for (const AccelerateOption& option : AccelerateOptions()) {
    if (option.section == "fp8_config") names[std::string(option.name)] = true;
  }
  for (const auto& [name, arg] : plan.accelerate_args) {
    if (name.rfind("fp8_", 0) == 0) names[name] = true;
  }
  for (const auto& [name, unused] : names) {
    const AccelerateArg arg = a.Get(name);
    if (arg.none) continue;
    if (name == "fp8_override_linear_precision" && a.Since(104)) {
      // A tuple of three booleans; str() of each element.
      std::vector<std::string> parts = absl::StrSplit(absl::StripAsciiWhitespace(arg.str),
                                                      absl::ByAnyChar("(),[] "), absl::SkipEmpty());
      const char* suffixes[] = {"FPROP", "DGRAD", "WGRAD"};
      for (size_t i = 0; i < 3 && i < parts.size(); ++i) {
        (*v)[absl::StrCat("ACCELERATE_FP8_OVERRIDE_", suffixes[i])] = parts[i];
      }
      continue;
    }
    (*v)[absl::StrCat("ACCELERATE_", absl::AsciiStrToUpper(name))] = arg.str;
  }
}

void AddParallelism(const Args& a, Vars* v) {
  (*v)["ACCELERATE_USE_PARALLELISM_CONFIG"] = "true";
  auto set = [&](const char* name) {
    (*v)[absl::StrCat("PARALLELISM_CONFIG_", absl::AsciiStrToUpper(name))] =
        a.Str(absl::StrCat("parallelism_config_", name));
  };
  auto more_than_one = [&](const char* name) {
    int value = 0;
    return absl::SimpleAtoi(a.Str(absl::StrCat("parallelism_config_", name)), &value) && value > 1;
  };
  for (const char* name : {"dp_replicate_size", "dp_shard_size", "tp_size", "cp_size"}) set(name);
  const bool sequence_parallel = a.Since(112);  // 1.10 and 1.11 know no backends, no sp_*
  if (sequence_parallel) {
    for (const char* name : {"cp_backend", "sp_size", "sp_backend"}) set(name);
  }
  if (more_than_one("cp_size")) set("cp_comm_strategy");
  if (sequence_parallel && more_than_one("sp_size")) {
    for (const char* name :
         {"sp_seq_length", "sp_seq_length_is_variable", "sp_attn_implementation"}) {
      set(name);
    }
  }
}

void AddDeepspeed(const LaunchPlan& plan, const Args& a, const std::string& python_path, Vars* v) {
  Vars& e = *v;
  for (const char* name : {env::kDynamoBackend, env::kDynamoMode, env::kDynamoUseFullgraph,
                           env::kDynamoUseDynamic, env::kDynamoUseRegionalCompilation}) {
    e.erase(name);  // DeepSpeed's launch sets none
  }
  std::vector<std::string> paths = absl::StrSplit(python_path, ':', absl::SkipEmpty());
  paths.push_back(plan.working_dir);
  e["PYTHONPATH"] = absl::StrJoin(paths, ":");
  // args.gradient_accumulation_steps: the launcher's option (gradient_accumulation_steps, set by
  // the user) wins over deepspeed_config's.
  AccelerateArg accumulation = a.Get("gradient_accumulation_steps");
  if (plan.set_gradient_accumulation) {
    accumulation.str = absl::StrCat(plan.gradient_accumulation_steps);
    accumulation.none = false;
  }
  e.erase(env::kGradientAccumulationSteps);
  if (!a.Since(16)) {  // 0.15's names, every one set (None as "None" / "none")
    e["ACCELERATE_USE_DEEPSPEED"] = "true";
    e["DEEPSPEED_ZERO_STAGE"] = a.Str("zero_stage");
    e["GRADIENT_ACCUMULATION_STEPS"] = accumulation.str;
    e["GRADIENT_CLIPPING"] = a.Lower("gradient_clipping");
    e["DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE"] = a.Lower("offload_optimizer_device");
    e["DEEPSPEED_OFFLOAD_PARAM_DEVICE"] = a.Lower("offload_param_device");
    e["DEEPSPEED_ZERO3_INIT"] = a.Lower("zero3_init_flag");
    e["DEEPSPEED_ZERO3_SAVE_16BIT_MODEL"] = a.Lower("zero3_save_16bit_model");
    IfGiven(a, v, "DEEPSPEED_CONFIG_FILE", "deepspeed_config_file");
    return;
  }
  e["ACCELERATE_CONFIG_DS_FIELDS"] = absl::AsciiStrToLower(plan.deepspeed_fields);
  e["ACCELERATE_USE_DEEPSPEED"] = "true";
  IfGiven(a, v, "ACCELERATE_DEEPSPEED_ZERO_STAGE", "zero_stage");
  if (!accumulation.none) e[env::kGradientAccumulationSteps] = accumulation.str;
  IfGiven(a, v, "ACCELERATE_GRADIENT_CLIPPING", "gradient_clipping", true);
  IfGiven(a, v, "ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE", "offload_optimizer_device", true);
  IfGiven(a, v, "ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE", "offload_param_device", true);
  IfGiven(a, v, "ACCELERATE_DEEPSPEED_ZERO3_INIT", "zero3_init_flag", true);
  IfGiven(a, v, "ACCELERATE_DEEPSPEED_ZERO3_SAVE_16BIT_MODEL", "zero3_save_16bit_model", true);
  IfGiven(a, v, "ACCELERATE_DEEPSPEED_CONFIG_FILE", "deepspeed_config_file");
  if (a.Since(30)) {
    IfGiven(a, v, "ACCELERATE_DEEPSPEED_MOE_LAYER_CLS_NAMES", "deepspeed_moe_layer_cls_names");
  }
}

}  // namespace

void AddAcceleratePluginVars(const LaunchPlan& plan, const std::string& python_path,
                             std::map<std::string, std::string>* vars) {
  const Args args(plan);
  Vars& v = *vars;
  // What older releases' launchers set of the variables every launch has.
  if (!args.Since(17)) {
    for (const char* name : {env::kDynamoMode, env::kDynamoUseFullgraph, env::kDynamoUseDynamic}) {
      v.erase(name);
    }
  }
  if (!args.Since(107)) v.erase(env::kDynamoUseRegionalCompilation);
  if (!args.Since(22)) v.erase(env::kDebugMode);
  if (!args.Since(29)) v.erase(env::kCpuAffinity);
  const bool simple_launcher = v.count(env::kUseCpu) != 0 && plan.accelerate_plugin.empty();
  if (!args.Since(19) && simple_launcher) {
    v["ACCELERATE_USE_MPS_DEVICE"] = "False";  // the simple launcher's, up to 0.18
  }
  if (args.Since(108) && !args.Since(113) && simple_launcher) {
    // 1.8 to 1.12 test the string "False" for truth: the OpenMP pinning comes with every simple
    // launch, CCL's worker count ("0" without oneCCL) with every one of two or more processes.
    v[env::kKmpAffinity] = "granularity=fine,compact,1,0";
    v[env::kKmpBlocktime] = "1";
    if (plan.world_size > 1) v["CCL_WORKER_COUNT"] = "0";
  }
  if (plan.fp8) {
    v[env::kMixedPrecision] = "fp8";
    if (args.Since(34)) AddFp8(plan, args, vars);
  }
  if (plan.accelerate_plugin.empty()) return;
  // accelerate's multi-GPU and DeepSpeed launchers set none of these, GPUs or not.
  for (const char* name : {env::kUseCpu, env::kKmpAffinity, env::kKmpBlocktime}) v.erase(name);
  if (plan.accelerate_plugin == "FSDP") AddFsdp(args, vars);
  if (plan.accelerate_plugin == "MEGATRON_LM") AddMegatron(args, vars);
  if (plan.accelerate_plugin == "DEEPSPEED") AddDeepspeed(plan, args, python_path, vars);
  if (plan.use_parallelism_config && args.Since(110)) AddParallelism(args, vars);
}

}  // namespace accel::launcher
