#!/usr/bin/env bash
# The shipped configs/slurm/train.sbatch, submitted with sbatch to both nodes: the job completes
# and its output file holds the JSON summary line of a world of 4 with the one-process checksum.
# Usage: slurm_sbatch_test.sh CLUSTER_DIR ACCEL_LAUNCH TRAIN_BIN SOURCE_DIR
cluster_dir=$1 launcher=$2 train=$3 source_dir=$4
source "$(dirname "$0")/lib.sh"

rc=0
"${tagged[@]}" ACCEL_LAUNCH=$launcher ACCEL_PROCS_PER_NODE=2 ACCEL_RDZV_TIMEOUT=60 \
  timeout -s KILL 150 sbatch --wait --nodes=2 --time=3 --output="$work/job-%j.out" \
  "$source_dir/configs/slurm/train.sbatch" "$train" "${sizes[@]}" --batch-size 2 \
  >"$work/sbatch.out" 2>&1 || rc=$?
out=$(ls "$work"/job-*.out 2>/dev/null | head -n 1)
[[ -n $out ]] || { echo "FAIL: no job output (sbatch exit $rc)"; cat "$work/sbatch.out"; exit 1; }
two=$(checksum <"$out" || true)
one=$(single_process_checksum 8)
echo "sbatch exit $rc; checksum: $two, one process: $one"
if ((rc != 0)); then cat "$work/sbatch.out" "$out"; exit 1; fi
expect_in "$out" '{"world": 4,'
same_checksum "$two" "$one"
expect_in "$out" "(token: Slurm PMI-2"
expect_no_tagged_pids
echo PASS
