#include "launcher/config/accelerate_args.h"

// The plugin options of `accelerate launch` and their defaults, from v1.14's parser and, where
// they differ, older releases' (accelerate_args.h).
namespace accel::launcher {
namespace {

// A default as argparse holds it: truthy unless False, 0 or empty.
AccelerateArg Default(const char* text) {
  AccelerateArg arg;
  arg.str = text;
  arg.truthy = arg.str != "False" && arg.str != "0" && !arg.str.empty();
  return arg;
}

// Defaults of older releases where they differ from v1.14's: (option, last release with it,
// default; nullptr = None), from each release's own parser.
struct OlderDefaultRow {
  absl::string_view name;
  int until;
  const char* default_str;
};
const OlderDefaultRow kOlderDefaults[] = {
    {"fsdp_min_num_params", 112, "100000000.0"},
    {"fp8_format", 108, "E4M3"},
    {"fp8_enable_fsdp_float8_all_gather", 112, nullptr},  // no such option before 1.13
    {"fp8_pad_inner_dim", 112, nullptr},
    {"fsdp_sharding_strategy", 25, "1"},
    {"fsdp_sync_module_states", 21, "false"},
    {"fsdp_use_orig_params", 24, "false"},
};

const char* const* OlderDefault(absl::string_view name, int release) {
  const OlderDefaultRow* best = nullptr;
  for (const OlderDefaultRow& row : kOlderDefaults) {
    if (row.name == name && release <= row.until && (best == nullptr || row.until < best->until)) {
      best = &row;
    }
  }
  return best == nullptr ? nullptr : &best->default_str;
}

}  // namespace

const std::vector<AccelerateOption>& AccelerateOptions() {
  static const std::vector<AccelerateOption>* const options = new std::vector<AccelerateOption>{
      {"use_parallelism_config", "parallelism_config", PyType::kSwitch, "False"},
      {"deepspeed_config_file", "deepspeed_config", PyType::kStr, nullptr},
      {"zero_stage", "deepspeed_config", PyType::kInt, nullptr},
      {"offload_optimizer_device", "deepspeed_config", PyType::kStr, nullptr},
      {"offload_param_device", "deepspeed_config", PyType::kStr, nullptr},
      {"offload_optimizer_nvme_path", "deepspeed_config", PyType::kStr, nullptr},
      {"offload_param_nvme_path", "deepspeed_config", PyType::kStr, nullptr},
      {"gradient_clipping", "deepspeed_config", PyType::kFloat, nullptr},
      {"zero3_init_flag", "deepspeed_config", PyType::kStr, nullptr},
      {"zero3_save_16bit_model", "deepspeed_config", PyType::kStr, nullptr},
      {"deepspeed_hostfile", "deepspeed_config", PyType::kStr, nullptr},
      {"deepspeed_exclusion_filter", "deepspeed_config", PyType::kStr, nullptr},
      {"deepspeed_inclusion_filter", "deepspeed_config", PyType::kStr, nullptr},
      {"deepspeed_multinode_launcher", "deepspeed_config", PyType::kStr, nullptr},
      {"deepspeed_moe_layer_cls_names", "deepspeed_config", PyType::kStr, nullptr},
      {"fsdp_version", "fsdp_config", PyType::kStr, "1"},
      {"fsdp_offload_params", "fsdp_config", PyType::kStr, "false"},
      {"fsdp_min_num_params", "fsdp_config", PyType::kInt, "100000000"},
      {"fsdp_sharding_strategy", "fsdp_config", PyType::kStr, "FULL_SHARD"},
      {"fsdp_reshard_after_forward", "fsdp_config", PyType::kStr, "true"},
      {"fsdp_auto_wrap_policy", "fsdp_config", PyType::kStr, nullptr},
      {"fsdp_transformer_layer_cls_to_wrap", "fsdp_config", PyType::kStr, nullptr},
      {"fsdp_backward_prefetch", "fsdp_config", PyType::kStr, nullptr},
      {"fsdp_state_dict_type", "fsdp_config", PyType::kStr, nullptr},
      {"fsdp_forward_prefetch", "fsdp_config", PyType::kStr, "false"},
      {"fsdp_use_orig_params", "fsdp_config", PyType::kStr, "true"},
      {"fsdp_cpu_ram_efficient_loading", "fsdp_config", PyType::kStr, "true"},
      {"fsdp_sync_module_states", "fsdp_config", PyType::kStr, "true"},
      {"fsdp_activation_checkpointing", "fsdp_config", PyType::kStr, "false"},
      {"fsdp_backward_prefetch_policy", "fsdp_config", PyType::kStr, nullptr},  // up to 0.25
      {"megatron_lm_tp_degree", "megatron_lm_config", PyType::kInt, "1"},
      {"megatron_lm_use_custom_fsdp", "megatron_lm_config", PyType::kBool, "False"},
      {"megatron_lm_no_load_optim", "megatron_lm_config", PyType::kBool, "False"},
      {"megatron_lm_eod_mask_loss", "megatron_lm_config", PyType::kBool, "False"},
      {"megatron_lm_overlap_cpu_optimizer_d2h_h2d", "megatron_lm_config", PyType::kBool, "False"},
      {"megatron_lm_no_save_optim", "megatron_lm_config", PyType::kBool, "False"},
      {"megatron_lm_optimizer_cpu_offload", "megatron_lm_config", PyType::kBool, "False"},
      {"megatron_lm_use_precision_aware_optimizer", "megatron_lm_config", PyType::kBool, "False"},
      {"megatron_lm_decoder_last_pipeline_num_layers", "megatron_lm_config", PyType::kInt, nullptr},
      {"megatron_lm_pp_degree", "megatron_lm_config", PyType::kInt, "1"},
      {"megatron_lm_num_micro_batches", "megatron_lm_config", PyType::kInt, nullptr},
      {"megatron_lm_sequence_parallelism", "megatron_lm_config", PyType::kStr, nullptr},
      {"megatron_lm_recompute_activations", "megatron_lm_config", PyType::kStr, nullptr},
      {"megatron_lm_use_distributed_optimizer", "megatron_lm_config", PyType::kStr, nullptr},
      {"megatron_lm_gradient_clipping", "megatron_lm_config", PyType::kFloat, "1.0"},
      {"megatron_lm_recompute_granularity", "megatron_lm_config", PyType::kStr, nullptr},
      {"megatron_lm_recompute_method", "megatron_lm_config", PyType::kStr, nullptr},
      {"megatron_lm_recompute_num_layers", "megatron_lm_config", PyType::kInt, nullptr},
      {"megatron_lm_attention_backend", "megatron_lm_config", PyType::kStr, nullptr},
      {"megatron_lm_expert_model_parallel_size", "megatron_lm_config", PyType::kInt, nullptr},
      {"megatron_lm_context_parallel_size", "megatron_lm_config", PyType::kInt, nullptr},
      {"megatron_lm_attention_dropout", "megatron_lm_config", PyType::kFloat, nullptr},
      {"megatron_lm_hidden_dropout", "megatron_lm_config", PyType::kFloat, nullptr},
      {"megatron_lm_attention_softmax_in_fp32", "megatron_lm_config", PyType::kStr, nullptr},
      {"megatron_lm_expert_tensor_parallel_size", "megatron_lm_config", PyType::kInt, nullptr},
      {"megatron_lm_calculate_per_token_loss", "megatron_lm_config", PyType::kStr, nullptr},
      {"megatron_lm_use_rotary_position_embeddings", "megatron_lm_config", PyType::kStr, nullptr},
      {"fp8_backend", "fp8_config", PyType::kStr, nullptr},
      {"fp8_use_autocast_during_eval", "fp8_config", PyType::kSwitch, "False"},
      {"fp8_margin", "fp8_config", PyType::kInt, "0"},
      {"fp8_interval", "fp8_config", PyType::kInt, "1"},
      {"fp8_format", "fp8_config", PyType::kStr, "HYBRID"},
      {"fp8_amax_history_len", "fp8_config", PyType::kInt, "1024"},
      {"fp8_amax_compute_algo", "fp8_config", PyType::kStr, "most_recent"},
      {"fp8_override_linear_precision", "fp8_config", PyType::kTuple, "(False, False, False)"},
      {"fp8_opt_level", "fp8_config", PyType::kStr, "O2"},
      {"fp8_enable_fsdp_float8_all_gather", "fp8_config", PyType::kStrToBool, "1"},
      {"fp8_pad_inner_dim", "fp8_config", PyType::kStrToBool, "1"},
      {"parallelism_config_dp_replicate_size", "parallelism_config", PyType::kInt, "1"},
      {"parallelism_config_dp_shard_size", "parallelism_config", PyType::kInt, "1"},
      {"parallelism_config_tp_size", "parallelism_config", PyType::kInt, "1"},
      {"parallelism_config_cp_size", "parallelism_config", PyType::kInt, "1"},
      {"parallelism_config_cp_backend", "parallelism_config", PyType::kStr, "torch"},
      {"parallelism_config_cp_comm_strategy", "parallelism_config", PyType::kStr, "allgather"},
      {"parallelism_config_sp_size", "parallelism_config", PyType::kInt, "1"},
      {"parallelism_config_sp_backend", "parallelism_config", PyType::kStr, "deepspeed"},
      {"parallelism_config_sp_seq_length", "parallelism_config", PyType::kStr, nullptr},
      {"parallelism_config_sp_seq_length_is_variable", "parallelism_config", PyType::kBool, "True"},
      {"parallelism_config_sp_attn_implementation", "parallelism_config", PyType::kStr, "sdpa"},
  };
  return *options;
}

const AccelerateOption* FindAccelerateOption(absl::string_view name) {
  for (const AccelerateOption& option : AccelerateOptions()) {
    if (option.name == name) return &option;
  }
  return nullptr;
}

AccelerateArg ArgOrDefault(const std::map<std::string, AccelerateArg>& args, int release,
                           absl::string_view name) {
  auto it = args.find(std::string(name));
  if (it != args.end()) return it->second;
  const AccelerateOption* option = FindAccelerateOption(name);
  const char* const* older = OlderDefault(name, release);
  if (older != nullptr) {
    if (*older == nullptr) return ArgOrDefault({}, release, "");
    return Default(*older);
  }
  if (option == nullptr || option->default_str == nullptr) {
    AccelerateArg none;
    none.str = "None";
    none.none = true;
    return none;
  }
  return Default(option->default_str);
}

}  // namespace accel::launcher
