"""The configs and option lines whose worker environments are compared with accelerate's.

cases(version) returns (name, config YAML, launch options) for one accelerate release, each config
written as that release's `accelerate config` writes it (FSDP sharding strategy as a number before
0.26, fsdp_backward_prefetch_policy before 0.26, fp8_config from 1.1, parallelism_config from 1.10).
Read by generate_env.py (accelerate's side) and by the C++ test (accel-launch's side, through the
stored goldens).
"""


def _v(text):
    return tuple(int(x) for x in text.split(".")[:2])


def _yaml(distributed, extra, processes=2, mixed="'no'", cpu="false", machines=1):
    return (f"compute_environment: LOCAL_MACHINE\ndistributed_type: {distributed}\n"
            f"downcast_bf16: 'no'\nmachine_rank: 0\nmain_training_function: main\n"
            f"mixed_precision: {mixed}\nnum_machines: {machines}\nnum_processes: {processes}\n"
            f"rdzv_backend: static\nsame_network: true\nuse_cpu: {cpu}\n" + extra)


def _fsdp(v, strategy, offload):
    new = v >= (0, 26)  # 0.24 and 0.25 still parse --fsdp_sharding_strategy as an int
    names = {1: "FULL_SHARD", 4: "HYBRID_SHARD"}
    prefetch = "fsdp_backward_prefetch: BACKWARD_PRE" if v >= (0, 26) else \
        "fsdp_backward_prefetch_policy: BACKWARD_PRE"
    lines = ["fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP", prefetch,
             f"fsdp_offload_params: {'true' if offload else 'false'}",
             f"fsdp_sharding_strategy: {names[strategy] if new else strategy}",
             "fsdp_state_dict_type: SHARDED_STATE_DICT",
             "fsdp_transformer_layer_cls_to_wrap: BertLayer"]
    if v >= (0, 29):
        lines += ["fsdp_cpu_ram_efficient_loading: true", "fsdp_forward_prefetch: false",
                  "fsdp_sync_module_states: true", "fsdp_use_orig_params: true"]
    if v >= (1, 6):
        lines += ["fsdp_activation_checkpointing: false", "fsdp_version: 1"]
    return "fsdp_config:\n" + "".join(f"  {line}\n" for line in sorted(lines))


def _deepspeed(lines):
    return "deepspeed_config:\n" + "".join(f"  {line}\n" for line in sorted(lines))


def cases(version):
    v = _v(version)
    out = []
    for name, strategy, offload in [("fsdp_full_shard", 1, False),
                                    ("fsdp_full_shard_offload", 1, True)]:
        out.append((name, _yaml("FSDP", _fsdp(v, strategy, offload), mixed="bf16"), []))
    if v >= (0, 20):  # HYBRID_SHARD
        out.append(("fsdp_hybrid_shard", _yaml("FSDP", _fsdp(v, 4, False), mixed="bf16"), []))
        out.append(("fsdp_hybrid_shard_offload", _yaml("FSDP", _fsdp(v, 4, True)), []))
    ds_common = ["deepspeed_multinode_launcher: standard", "gradient_accumulation_steps: 4"]
    out.append(("deepspeed_zero1", _yaml("DEEPSPEED", _deepspeed(
        ds_common + ["zero_stage: 1", "offload_optimizer_device: none",
                     "offload_param_device: none", "gradient_clipping: 1.0"]), mixed="fp16"), []))
    out.append(("deepspeed_zero2_offload", _yaml("DEEPSPEED", _deepspeed(
        ds_common + ["zero_stage: 2", "offload_optimizer_device: cpu",
                     "offload_param_device: none", "zero3_init_flag: false"]),
        mixed="bf16"), []))
    out.append(("deepspeed_zero3_offload", _yaml("DEEPSPEED", _deepspeed(
        ds_common + ["zero_stage: 3", "offload_optimizer_device: cpu",
                     "offload_param_device: cpu", "zero3_init_flag: true",
                     "zero3_save_16bit_model: true"]), mixed="bf16"), []))
    out.append(("deepspeed_config_file", _yaml("DEEPSPEED", _deepspeed(
        ["deepspeed_config_file: ds_config.json", "deepspeed_multinode_launcher: standard",
         "zero3_init_flag: true"])), []))
    out.append(("deepspeed_options", _yaml("MULTI_GPU", "", mixed="fp16"),
                ["--use_deepspeed", "--zero_stage", "2", "--offload_optimizer_device", "cpu",
                 "--gradient_accumulation_steps", "2", "--gradient_clipping", "0.5"]))
    out.append(("megatron_lm", _yaml("MEGATRON_LM", "megatron_lm_config:\n"
                "  megatron_lm_gradient_clipping: 1.0\n  megatron_lm_num_micro_batches: 2\n"
                "  megatron_lm_pp_degree: 2\n  megatron_lm_recompute_activations: true\n"
                "  megatron_lm_sequence_parallelism: true\n  megatron_lm_tp_degree: 2\n"
                "  megatron_lm_use_distributed_optimizer: true\n", processes=4, mixed="bf16"),
                []))
    out.append(("fsdp_options", _yaml("MULTI_GPU", ""),
                ["--use_fsdp", "--fsdp_sharding_strategy", "FULL_SHARD" if v >= (0, 26) else "1",
                 "--fsdp_offload_params", "true", "--fsdp_state_dict_type", "FULL_STATE_DICT",
                 "--fsdp_min_num_params", "1000"]))
    if v >= (1, 1):
        out.append(("fp8_te", _yaml("MULTI_GPU", "fp8_config:\n  amax_compute_algorithm: max\n"
                    "  amax_history_length: 1024\n  backend: TE\n  fp8_format: HYBRID\n"
                    "  interval: 1\n  margin: 0\n"
                    "  use_autocast_during_eval: false\n", mixed="fp8"), []))
        out.append(("fp8_options", _yaml("MULTI_GPU", "", mixed="fp8"),
                    ["--fp8_backend", "msamp", "--fp8_opt_level", "O2"]))
    if v >= (0, 18):  # dynamo_config (0.15 writes dynamo_backend at the top level)
        out.append(("dynamo", _yaml("MULTI_GPU", "dynamo_config:\n  dynamo_backend: INDUCTOR\n"
                    "  dynamo_mode: max-autotune\n  dynamo_use_dynamic: true\n"
                    "  dynamo_use_fullgraph: false\n") if v >= (0, 20) else
                    _yaml("MULTI_GPU", "dynamo_backend: INDUCTOR\n"), []))
    else:
        out.append(("dynamo", _yaml("MULTI_GPU", "dynamo_backend: INDUCTOR\n"), []))
    if v >= (1, 10):
        out.append(("parallelism_config", _yaml(
            "FSDP", _fsdp(v, 1, False) + "parallelism_config:\n"
            "  parallelism_config_cp_size: 1\n  parallelism_config_dp_replicate_size: 1\n"
            "  parallelism_config_dp_shard_size: 2\n  parallelism_config_tp_size: 1\n",
            mixed="bf16"), []))
    if v >= (0, 22):  # --mpirun_hostfile
        out.append(("multi_cpu_mpi_hostfile", _yaml(
            "MULTI_CPU", "mpirun_config:\n  mpirun_ccl: '1'\n  mpirun_hostfile: hostfile\n",
            processes=4, cpu="true", machines=2) + "main_process_ip: 10.0.0.1\n"
            "main_process_port: 29500\n", ["--num_cpu_threads_per_process", "2"]))
    out.append(("multi_cpu", _yaml("MULTI_CPU", "", cpu="true"),
                ["--num_cpu_threads_per_process", "2"]))
    return out
