#!/usr/bin/python3
"""The workers' environment under accel-launch equals the one accelerate's own launch code gives.

usage: accelerate_env_golden_test.py ACCEL_LAUNCH GOLDEN_DIR

GOLDEN_DIR holds, per accelerate release, what that release's own launch_command computes for each
config and option line of tests/testing/accelerate_env/cases.py (generate_env.py). For every
release and case this launches `env` under accel-launch with the same config file and options
(--accelerate_version naming the release, --no_python: `env` gets accelerate's environment as
under `accelerate launch --no_python`) and compares rank 0's environment variable by variable:
every variable accelerate sets must have its value, and accel-launch must set no variable of
accelerate's namespaces (ACCELERATE_*, FSDP_*, MEGATRON_LM_*, PARALLELISM_CONFIG_*, DEEPSPEED_*,
KMP_*, PYTHONPATH, CUDA_VISIBLE_DEVICES, ...) that accelerate does not. Not compared, on purpose
(README "Coming from accelerate"): MASTER_ADDR/MASTER_PORT (accel-launch's rendezvous picks them)
and OMP_NUM_THREADS (torchrun sets it in accelerate's workers after this environment). A case that
runs accelerate's own mpirun launch is refused by accel-launch with what to write instead; the
test checks that refusal. On a machine without GPUs a multi-GPU config without a plugin takes
accel-launch's documented fallback (README: MULTI_CPU over gloo, as under `--cpu`): the test then
expects the fallback's own variables on top (ACCELERATE_USE_CPU=True, and the simple launcher's:
ACCELERATE_USE_MPS_DEVICE=False up to 0.18, KMP_AFFINITY, KMP_BLOCKTIME and CCL_WORKER_COUNT from
1.8 to 1.12); a plugin config (FSDP, DeepSpeed, Megatron-LM) gets
accelerate's GPU environment either way. It also checks the refusals: a libaccel program (not
Python, no --no_python) given FSDP / DeepSpeed / Megatron-LM / fp8 gets one error naming what
libaccel supports; DeepSpeed's pdsh launcher on two machines and the TPU options are refused with
what to write instead. Exits 1 listing every difference.
"""
import json
import os
import subprocess
import sys
import tempfile

NOT_COMPARED = {"MASTER_ADDR", "MASTER_PORT", "OMP_NUM_THREADS"}
ACCELERATE_PREFIXES = ("ACCELERATE_", "FSDP_", "MEGATRON_LM_", "PARALLELISM_CONFIG_", "DEEPSPEED_",
                       "GRADIENT_", "KMP_", "CCL_", "XLA_")
ACCELERATE_NAMES = {"PYTHONPATH", "CUDA_VISIBLE_DEVICES", "NCCL_P2P_DISABLE", "NCCL_IB_DISABLE"}


def accelerate_owned(name):
    return name.startswith(ACCELERATE_PREFIXES) or name in ACCELERATE_NAMES


def run_case(launcher, version, case):
    with tempfile.TemporaryDirectory() as work:
        work = os.path.realpath(work)
        with open(os.path.join(work, "config.yaml"), "w") as f:
            f.write(case["config"])
        cmd = [launcher, "--config_file", "config.yaml", "--accelerate_version", version,
               "--log_dir", "logs", "--run_id", "golden", "--hang_timeout", "0"] + \
            case["options"] + ["--no_python", "env"]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": work}
        r = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=120)
        if "cmd" in case and case["cmd"][0] in ("mpirun", "mpiexec"):
            if r.returncode == 2 and "instead" in r.stderr and "mpirun" in r.stderr:
                return []
            return [f"accelerate's mpirun launch: expected a refusal naming what to run instead, "
                    f"got exit {r.returncode}: {r.stderr.strip()[-300:]}"]
        if r.returncode != 0:
            return [f"accel-launch exit {r.returncode}: {r.stderr.strip()[-400:]}"]
        ours = {}
        with open(os.path.join(work, "logs", "golden", "attempt_0", "rank_0", "stdout.log")) as f:
            for line in f:
                name, _, value = line.rstrip("\n").partition("=")
                ours[name] = value
        want = {k: v.replace("$CWD", work) for k, v in case["env"].items()}
        if "no GPU found" in r.stderr and "MULTI_CPU over gloo" in r.stderr and not any(
                k.startswith(("ACCELERATE_USE_FSDP", "ACCELERATE_USE_DEEPSPEED",
                              "ACCELERATE_USE_MEGATRON_LM")) for k in want):
            want["ACCELERATE_USE_CPU"] = "True"
            release = tuple(int(x) for x in version.split("."))
            if release < (0, 19):
                want["ACCELERATE_USE_MPS_DEVICE"] = "False"
            if (1, 8) <= release < (1, 13):  # the simple launcher's OpenMP and CCL variables
                want["KMP_AFFINITY"] = "granularity=fine,compact,1,0"
                want["KMP_BLOCKTIME"] = "1"
                if int(ours.get("WORLD_SIZE", "1")) > 1:
                    want["CCL_WORKER_COUNT"] = "0"
        wrong = []
        for name, value in sorted(want.items()):
            if name in NOT_COMPARED:
                continue
            if ours.get(name) != value:
                wrong.append(f"{name}: accelerate {value!r}, accel-launch {ours.get(name)!r}")
        for name in sorted(ours):
            if accelerate_owned(name) and name not in want:
                wrong.append(f"{name}: accelerate sets none, accel-launch {ours[name]!r}")
        return wrong


# Refusals: (config, options, program, words the one error must contain).
REFUSALS = [
    ("distributed_type: FSDP\nnum_processes: 2\n", [], "./train.bin",
     ["distributed_type FSDP is for Python scripts", "libaccel supports distributed_type NO, "
      "MULTI_GPU or MULTI_CPU"]),
    ("distributed_type: DEEPSPEED\nnum_processes: 2\n", ["--mixed_precision", "fp8"],
     "./train.bin", ["distributed_type DEEPSPEED, mixed_precision fp8 is for Python scripts"]),
    ("distributed_type: MEGATRON_LM\nnum_processes: 2\n", [], "./train.bin",
     ["distributed_type MEGATRON_LM is for Python scripts"]),
    ("distributed_type: DEEPSPEED\nnum_machines: 2\nnum_processes: 4\nmain_process_ip: 10.0.0.1\n"
     "main_process_port: 29500\nrdzv_insecure: true\ndeepspeed_config:\n"
     "  deepspeed_multinode_launcher: pdsh\n  deepspeed_hostfile: hosts\n", [], "train.py",
     ["deepspeed_multinode_launcher pdsh", "set deepspeed_multinode_launcher: standard",
      "instead"]),
    ("num_processes: 2\n", ["--tpu", "--tpu_cluster", "--vm", "v"], "train.py",
     ["--tpu, --tpu_cluster, --vm: TPUs are not supported", "instead"]),
]


def check_refusals(launcher):
    wrong = []
    for config, options, program, words in REFUSALS:
        with tempfile.TemporaryDirectory() as work:
            with open(os.path.join(work, "config.yaml"), "w") as f:
                f.write(config)
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": work}
            r = subprocess.run([launcher, "--config_file", "config.yaml", "--dry_run"] + options +
                               [program], cwd=work, env=env, capture_output=True, text=True,
                               timeout=60)
            problems = [line for line in r.stderr.splitlines() if "nothing was launched" in line]
            missing = [w for w in words if w not in r.stderr]
            if r.returncode != 2 or missing or len(problems) != 1:
                wrong.append(f"refusal {config.splitlines()[0]} {options} {program}: exit "
                             f"{r.returncode}, missing {missing}: {r.stderr.strip()[-400:]}")
    return wrong


def main():
    launcher, golden_dir = sys.argv[1:3]
    failures, compared = check_refusals(launcher), 0
    for file in sorted(f for f in os.listdir(golden_dir) if f.endswith(".json")):
        golden = json.load(open(os.path.join(golden_dir, file)))
        version = ".".join(golden["accelerate"].split(".")[:2])
        for name, case in sorted(golden["cases"].items()):
            if "error" in case:
                continue  # that release refuses the case itself
            wrong = run_case(launcher, version, case)
            compared += 1
            for line in wrong:
                failures.append(f"accelerate {golden['accelerate']} {name}: {line}")
            print(f"{'FAIL' if wrong else 'ok  '} accelerate {golden['accelerate']} {name}",
                  flush=True)
    for line in failures:
        print(line)
    print(f"{compared} cases compared, {len(failures)} differences")
    return 1 if failures or compared < 12 else 0


if __name__ == "__main__":
    sys.exit(main())
