#!/usr/bin/env bash
# The Python progress module's counts for an HF accelerate script (tests/testing/hf_accelerate_train.py,
# accelerate 0.20.3, unchanged) under accel-launch, 2 CPU ranks on 127.0.0.1, for each case of
# gradient accumulation K (the epoch's batches not a multiple of K: accelerate also steps on its
# last batch): each rank's record must hold
#   - steps: the optimizer steps the script made (accelerate's AcceleratedOptimizer counted once,
#     its skipped micro-step calls not at all), fewer than its micro-steps when K > 1;
#   - collectives started = done = DDP's parameter broadcast (1) + per epoch: accelerate's RNG
#     synchronisation of the shuffling sampler (a broadcast), a DDP synchronisation per optimizer
#     step, accelerator.reduce of the epoch's loss (an all_reduce) and 2 all_gathers per evaluation
#     batch (gather_for_metrics of predictions and labels) + wait_for_everyone's barrier (1);
#     (with --stream, accelerate's dispatch from process 0 adds its broadcasts: more, not counted);
#   - samples: every sample the script was handed (training and evaluation), also when the
#     training set is a stream that accelerate reads on process 0 and dispatches in slices;
#   - nothing waiting at the end;
# and the parameters' checksum equals a run with python_progress=false (nothing changed).
# accelerate comes from outside the repository (tests/testing/hf_accelerate.sh); without it the
# test skips with the reason, under CI too.
# Usage: hf_accelerate_counts_test.sh <accel-launch> <hf_accelerate_train.py>
set -euo pipefail
launcher=$1
script=$2
py=/usr/bin/python3
here=$(dirname "$0")
source "$here/../../../testing/skip.sh"
source "$here/../../../testing/hf_accelerate.sh"
accelerate=$(hf_accelerate_dir 0.20.3 2>&1) || skip_not_provided "$accelerate"
[[ -x $py ]] || skip "no $py (python3)"
"$py" -c "import torch.distributed" 2>/dev/null || skip "$py cannot import torch.distributed (python3-torch)"
echo "accelerate 0.20.3 from $accelerate"
export PYTHONPATH=$accelerate${PYTHONPATH:+:$PYTHONPATH}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# run NAME [launcher options...] -- script options...: every rank's JSON line into $work/NAME.json.
run() {
  local name=$1; shift
  local opts=()
  while [[ $1 != -- ]]; do opts+=("$1"); shift; done; shift
  timeout -s KILL 240 "$launcher" --use_cpu --num_processes 2 --run_id "mp-hf-$name-$$" \
    --log_dir "$work/logs" --tee "${opts[@]}" "$py" "$script" "$@" >"$work/$name.out" 2>&1 ||
    fail "$name: exit $?: $(tail -n 30 "$work/$name.out")"
  sed -n 's/^\[rank [0-9]*\] \({.*\)$/\1/p' "$work/$name.out" >"$work/$name.json"
  [[ $(wc -l <"$work/$name.json") == 2 ]] || fail "$name: want a JSON line per rank: $(cat "$work/$name.out")"
}

# 960 training samples in batches of 16: 30 batches per rank and epoch; 200 evaluation samples:
# 7 batches per rank (accelerate pads the last).
sizes=(--epochs 2 --samples 960 --eval-samples 200 --batch 16)
for case in k1 k4 k4stream; do
  k=${case#k}; k=${k%stream}
  stream=(); [[ $case == *stream ]] && stream=(--stream)
  run "${case}_on" -- "${sizes[@]}" --accumulation "$k" "${stream[@]}"
  run "${case}_off" --python_progress=false -- "${sizes[@]}" --accumulation "$k" "${stream[@]}"
  "$py" - "$work" "$case" "$k" "$work/logs/mp-hf-${case}_on-$$" "$work/logs/mp-hf-${case}_off-$$" <<'PY' ||
import json, os, struct, sys
work, case, k, on_dir, off_dir = sys.argv[1:]
k = int(k)
stream = case.endswith("stream")
on = {r["rank"]: r for r in map(json.loads, open(f"{work}/{case}_on.json"))}
off = {r["rank"]: r for r in map(json.loads, open(f"{work}/{case}_off.json"))}
bad = []
for rank in (0, 1):
    mine = on[rank]
    if (mine["world"], mine["distributed_type"]) != (2, "MULTI_CPU"):
        bad.append(f"rank {rank}: accelerate saw {mine['world']} processes, "
                   f"{mine['distributed_type']}, not 2, MULTI_CPU")
    if mine["checksum"] != off[rank]["checksum"]:
        bad.append(f"rank {rank}: checksum {mine['checksum']} with the module, "
                   f"{off[rank]['checksum']} without")
    per_epoch = mine["micro_steps"] // mine["epochs"]
    # (A stream's epoch 2 syncs every micro-step: accelerate 0.20.3's dispatcher never resets its
    # end_of_dataloader. The record must follow what it did; only its first epoch is as asked.)
    if mine["optimizer_steps"] != mine["epochs"] * -(-per_epoch // k) and not (
            stream and -(-per_epoch // k) < mine["optimizer_steps"] < mine["micro_steps"]):
        bad.append(f"rank {rank}: the script made {mine['optimizer_steps']} optimizer steps, "
                   f"not {mine['epochs']} x ceil({per_epoch}/{k}): the case is not what it claims")
    with open(f"{on_dir}/attempt_0/rank_{rank}/progress", "rb") as f:
        steps, started, done, wait_ns, samples, since = struct.unpack("<6Q", f.read(48))
    collectives = (1 + mine["epochs"] * 2 + mine["optimizer_steps"] + 2 * mine["eval_batches"] + 1)
    if stream:  # accelerate's dispatch adds broadcasts of each batch (not counted here)
        collectives = started if started == done and started > collectives else -1
    want = (mine["optimizer_steps"], collectives, collectives, mine["samples"], 0)
    got = (steps, started, done, samples, since)
    print(f"{case} rank {rank}: record steps {steps} collectives {started}/{done} samples "
          f"{samples} waited {wait_ns / 1e6:.1f} ms; the script: {mine['micro_steps']} "
          f"micro-steps, {mine['optimizer_steps']} optimizer steps, {mine['eval_batches']} "
          f"evaluation batches, {mine['samples']} samples; want {want}")
    if got != want:
        bad.append(f"rank {rank}: (steps, started, done, samples, waiting since) {got}, want {want}")
    if os.path.exists(f"{off_dir}/attempt_0/rank_{rank}/progress") and \
            os.path.getsize(f"{off_dir}/attempt_0/rank_{rank}/progress"):
        bad.append(f"rank {rank}: python_progress=false still wrote a record")
for line in bad:
    print("FAIL:", line)
sys.exit(1 if bad else 0)
PY
    fail "$case: the counts differ (above)"
done
echo PASS
