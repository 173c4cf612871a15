#!/usr/bin/env bash
# A 2-node job killed by its Slurm time limit (--time=1) ends like a cancelled one: every process
# gone within 10 s of Slurm's signal, the launchers saying it came from Slurm. Slurm's limit is
# whole minutes and slurmctld checks it every 30 s, so the job runs 60-90 s: `start` submits it,
# the other cluster tests run meanwhile, and `check` (last) waits for the kill and checks it.
# The workers are /bin/sleep, so the waiting costs no CPU (and, using none and writing nothing,
# they would look hung: --hang_timeout 0).
# Usage: slurm_timelimit_test.sh start|check CLUSTER_DIR ACCEL_LAUNCH
phase=$1 cluster_dir=$2 launcher=$3
source "$(dirname "$0")/lib.sh"
job_dir=$cluster_dir/jobs/timelimit
tag_with "$job_dir"

if [[ $phase == start ]]; then
  rm -rf "$job_dir" && mkdir -p "$job_dir"
  "${tagged[@]}" sbatch --parsable --nodes=2 --ntasks-per-node=1 --time=1 \
    --job-name=accel-timelimit --output="$job_dir/out" \
    --wrap "srun --ntasks-per-node=1 $launcher --num_processes 2 --main_process_port 29620 \
    --rdzv_timeout 60 --hang_timeout 0 /bin/sleep 600" \
    >"$job_dir/job"
  echo "submitted job $(cat "$job_dir/job") with a 1-minute limit"
  wait_for_workers 2 60 sleep || { cat "$job_dir/out"; exit 1; }
  echo PASS
  exit 0
fi

job=$(cat "$job_dir/job" 2>/dev/null) || { echo "FAIL: no job from the start phase"; exit 1; }
trap 'rm -rf "$work" "$job_dir"' EXIT
for _ in $(seq 1500); do
  state=$(squeue -h -j "$job" -o %T 2>/dev/null || true)
  [[ $state == RUNNING || $state == PENDING ]] || break
  sleep 0.1
done
[[ $state != RUNNING && $state != PENDING ]] || { echo "FAIL: job $job still $state"; exit 1; }
took=$(wait_tagged_gone 10) || { echo "FAIL: processes left ${took}s after the time limit"; \
  expect_no_tagged_pids || true; cat "$job_dir/out"; exit 1; }
# Slurm shows COMPLETING until its epilog is done: wait (10 s at most) for the final state.
for _ in $(seq 100); do
  final=$(scontrol show job "$job" 2>/dev/null | grep -o 'JobState=[A-Z_]*' || true)
  [[ $final == JobState=COMPLETING ]] || break
  sleep 0.1
done
echo "job $job ($final): every process ended ${took}s after Slurm's time-limit signal; it said:"
grep -E 'launch: |root cause|CANCELLED|TIME LIMIT' "$job_dir/out" || true
expect_in "$job_dir/out" "DUE TO TIME LIMIT"
[[ $final == JobState=TIMEOUT ]] || { echo "FAIL: expected JobState=TIMEOUT"; exit 1; }
expect_in "$job_dir/out" "launch: stopped by SIGTERM from Slurm"
if grep -q 'worker failed' "$job_dir/out"; then echo "FAIL: a launcher says a worker failed:"; cat "$job_dir/out"; exit 1; fi
echo PASS
