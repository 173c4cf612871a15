#!/usr/bin/env bash
# scancel of a running 2-node training job: every process of the job (launchers, workers, on both
# nodes) ends within 10 s of the scancel, and the launchers say the job was cancelled by a signal
# from Slurm, not that a worker failed. While it runs, a stranger on the network (rdzv_agent in the
# root namespace, without the job's token) is refused by the job's rendezvous.
# Usage: slurm_cancel_test.sh CLUSTER_DIR ACCEL_LAUNCH TRAIN_BIN RDZV_AGENT
cluster_dir=$1 launcher=$2 train=$3 rdzv_agent=$4
source "$(dirname "$0")/lib.sh"

name=accel-cancel-$$
"${tagged[@]}" timeout -s KILL 150 srun -N2 --ntasks-per-node=1 --time=3 --label \
  --job-name="$name" "$launcher" --num_processes 4 --rdzv_timeout 60 "$train" "${sizes[@]}" \
  --steps 100000 --batch-size 2 >"$work/out" 2>&1 &
srun_pid=$!
wait_for_workers 4 60 train.bin || { cat "$work/out"; exit 1; }
for _ in $(seq 300); do grep -q 'step [0-9]' "$work/out" && break; sleep 0.1; done
job=$(squeue -h -n "$name" -o %i)
[[ -n $job ]] || { echo "FAIL: job $name not in squeue"; cat "$work/out"; exit 1; }
# The token came from Slurm's PMI-2: nobody else has it, so the rendezvous refuses a stranger.
port=$((10000 + job % 10000))
stranger=$(timeout -s KILL 30 "$rdzv_agent" --endpoint="$N0_ADDR:$port" --run_id=intruder \
  --machine_rank=1 --num_machines=2 --num_processes=4 --local_processes=2 --timeout_ms=5000 2>&1 \
  || true)
echo "a stranger joining $N0_ADDR:$port: $stranger"
[[ $stranger == *"JOIN_ERROR code=UNAUTHENTICATED"* ]] || { echo "FAIL: the stranger was not refused"; \
  scancel "$job"; exit 1; }
scancel "$job"
took=$(wait_tagged_gone 10) || { echo "FAIL: processes left ${took}s after scancel"; \
  expect_no_tagged_pids || true; cat "$work/out"; exit 1; }
rc=0
wait "$srun_pid" || rc=$?
echo "job $job: every process ended ${took}s after scancel (srun exit $rc); the launchers said:"
grep -E 'launch: |root cause|CANCELLED' "$work/out" || true
# scancel signals both launchers at once: each names Slurm's SIGTERM, its own, or (when the other
# machine's report came first, about 1 run in 8) the other's as the job's root cause.
for m in 0 1; do
  grep -qF "$m: [accel-launch] launch: stopped by SIGTERM from Slurm" "$work/out" ||
    grep -qE "^$m:   root cause machine [01]: launcher stopped by SIGTERM from Slurm" "$work/out" ||
    { echo "FAIL: machine $m does not name Slurm's SIGTERM:"; cat "$work/out"; exit 1; }
done
if grep -q 'worker failed' "$work/out"; then echo "FAIL: a launcher says a worker failed:"; cat "$work/out"; exit 1; fi
echo PASS
