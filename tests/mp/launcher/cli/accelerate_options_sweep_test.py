#!/usr/bin/python3
"""Every `accelerate launch` option spelling, one at a time, is known to accel-launch.

usage: accelerate_options_sweep_test.py ACCEL_LAUNCH OPTIONS_TSV

OPTIONS_TSV (tests/testing/accelerate_env/launch_options.tsv) lists every option spelling of the
parsers of accelerate 0.15 .. 1.14 (from each release's own launch_command_parser()) and whether
it takes a value. Each is given to `accel-launch --dry_run OPTION [VALUE] ./train.py` alone, with a
plausible value. An option is accepted (exit 0) or refused with a message that says what to do
instead; "unknown option" or a refusal without "instead" fails the test. Prints one line per
option and the totals (v1.14's spellings counted apart).
"""
import os
import subprocess
import sys
import tempfile

VALUES = {
    "mixed_precision": "fp16", "num_processes": "2", "num_machines": "1", "machine_rank": "0",
    "num_cpu_threads_per_process": "2", "dynamo_backend": "inductor", "dynamo_mode": "default",
    "gpu_ids": "all", "main_process_ip": "127.0.0.1", "main_process_port": "29500", "tee": "3",
    "t": "3", "log_dir": "logs", "role": "trainer", "rdzv_backend": "static",
    "rdzv_conf": "join_timeout=30", "max_restarts": "0", "monitor_interval": "1",
    "main_training_function": "main", "deepspeed_config_file": "ds_config.json",
    "zero_stage": "2", "offload_optimizer_device": "cpu", "offload_param_device": "cpu",
    "gradient_clipping": "1.0", "zero3_init_flag": "true", "zero3_save_16bit_model": "true",
    "deepspeed_multinode_launcher": "standard", "deepspeed_hostfile": "hostfile",
    "deepspeed_exclusion_filter": "worker-1", "deepspeed_inclusion_filter": "worker-0",
    "fsdp_version": "1", "fsdp_sharding_strategy": "FULL_SHARD",
    "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP", "fsdp_state_dict_type": "FULL_STATE_DICT",
    "fsdp_backward_prefetch": "BACKWARD_PRE", "fsdp_backward_prefetch_policy": "BACKWARD_PRE",
    "fsdp_transformer_layer_cls_to_wrap": "BertLayer", "fp8_backend": "TE", "fp8_format": "HYBRID",
    "fp8_amax_compute_algo": "max", "fp8_opt_level": "O2",
    "fp8_override_linear_precision": "false,false,true",
    "megatron_lm_recompute_granularity": "full", "megatron_lm_recompute_method": "uniform",
    "megatron_lm_attention_dropout": "0.1", "megatron_lm_hidden_dropout": "0.1",
    "megatron_lm_gradient_clipping": "1.0", "parallelism_config_cp_backend": "torch",
    "parallelism_config_cp_comm_strategy": "allgather", "parallelism_config_sp_backend": "deepspeed",
    "parallelism_config_sp_attn_implementation": "sdpa", "mpirun_hostfile": "hostfile",
    "config_file": "config.yaml",
}


def value_for(option):
    name = option.lstrip("-").replace("-", "_")
    if name in VALUES:
        return VALUES[name]
    if any(word in name for word in ("offload_params", "forward", "orig_params", "loading",
                                     "states", "checkpointing", "sequence_parallelism",
                                     "recompute_activations", "distributed_optimizer",
                                     "fp32", "per_token", "rotary", "all_gather", "pad_inner",
                                     "is_variable", "no_load", "no_save", "eod", "custom_fsdp",
                                     "cpu_offload", "aware", "d2h")):
        return "true"
    return "1"


def main():
    launcher, tsv = sys.argv[1:3]
    rows = []
    for line in open(tsv):
        if line.startswith("#") or not line.strip():
            continue
        option, takes_value, releases = line.rstrip("\n").split("\t")
        rows.append((option, takes_value == "1", releases.split(",")))
    bad, totals = [], {"accepted": 0, "refused": 0}
    newest = {"accepted": 0, "refused": 0, "count": 0}
    with tempfile.TemporaryDirectory() as work:
        train = os.path.join(work, "train.py")
        open(train, "w").write("#!/bin/sh\necho hi\n")
        os.chmod(train, 0o755)  # --no_python execs it
        open(os.path.join(work, "config.yaml"), "w").write("num_processes: 1\n")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": work}
        for option, takes_value, releases in rows:
            args = [option] + ([value_for(option)] if takes_value else [])
            r = subprocess.run([launcher, "--dry_run"] + args + ["./train.py"], cwd=work, env=env,
                               capture_output=True, text=True, timeout=60)
            text = (r.stderr + r.stdout).replace("\n", " ")
            if "unknown option" in text or "The following argument" in text:
                verdict = "UNKNOWN"
            elif r.returncode == 0:
                verdict = "accepted"
            elif "instead" in text:
                verdict = "refused"
            else:
                verdict = "REFUSED WITHOUT WHAT TO DO INSTEAD"
            if verdict in totals:
                totals[verdict] += 1
                if "1.14" in releases:
                    newest[verdict] += 1
            else:
                bad.append(f"{' '.join(args)}: {verdict}: {text.strip()[-300:]}")
            newest["count"] += "1.14" in releases
            why = r.stderr.strip().splitlines()[-2:] if r.returncode else []
            print(f"{verdict:9} {' '.join(args)}" + (f"  -- {' / '.join(why)[:200]}" if why else ""),
                  flush=True)
    for line in bad:
        print("FAIL " + line)
    print(f"{len(rows)} spellings (0.15 .. 1.14): {totals['accepted']} accepted, "
          f"{totals['refused']} refused with what to do instead, {len(bad)} failures; "
          f"v1.14's {newest['count']}: {newest['accepted']} accepted, {newest['refused']} refused")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
