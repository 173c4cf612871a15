#!/usr/bin/env bash
# srun -N2 --ntasks-per-node=1 accel-launch --num_processes 4 train.bin, with no config file and
# no rank, address or token flags: machine_rank, num_machines and main_process_ip come from Slurm,
# the token from Slurm's PMI-2, and 2 machines x 2 workers x batch 2 equal one process with
# batch 8. Usage: slurm_srun_test.sh CLUSTER_DIR ACCEL_LAUNCH TRAIN_BIN
cluster_dir=$1 launcher=$2 train=$3
source "$(dirname "$0")/lib.sh"

rc=0
"${tagged[@]}" timeout -s KILL 150 srun -N2 --ntasks-per-node=1 --time=3 --label \
  "$launcher" --num_processes 4 --rdzv_timeout 60 "$train" "${sizes[@]}" --batch-size 2 \
  >"$work/out" 2>&1 || rc=$?
two=$(checksum <"$work/out" || true)
one=$(single_process_checksum 8)
echo "srun exit $rc; checksum 2 nodes x 2 workers: $two, one process: $one"
if ((rc != 0)); then cat "$work/out"; exit 1; fi
same_checksum "$two" "$one"
expect_in "$work/out" "Slurm detected: machine_rank=0 num_machines=2 main_process_ip=n0"
expect_in "$work/out" "Slurm detected: machine_rank=1 num_machines=2 main_process_ip=n0"
expect_in "$work/out" "(token: Slurm PMI-2"
expect_in "$work/out" '"world": 4'
expect_no_tagged_pids
echo PASS
