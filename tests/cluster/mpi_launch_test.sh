#!/usr/bin/env bash
# Open MPI across the two machines, two ways, each equal to one process with the same global batch:
#   launch  mpirun -np 2 --host n0,n1 accel-launch --num_processes 4 train.bin: one launcher per
#           machine, machine_rank and num_machines from OMPI_COMM_WORLD_*, Gloo between workers
#   comm    mpirun -np 4 --host n0:2,n1:2 train.bin: no launcher, libaccel's MPI communicator
# mpirun reaches the machines through ompi_rsh_agent.sh (no ssh).
# Usage: mpi_launch_test.sh launch|comm CLUSTER_DIR ACCEL_LAUNCH TRAIN_BIN
mode=$1 cluster_dir=$2 launcher=$3 train=$4
source "$(dirname "$0")/lib.sh"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(mpirun --mca plm_rsh_agent "$CLUSTER_RSH_AGENT" --mca orte_tmpdir_base "$CLUSTER_OMPI_TMPDIR"
     --mca oob_tcp_if_include "$CLUSTER_SUBNET" --mca btl tcp,self
     --mca btl_tcp_if_include "$CLUSTER_SUBNET")
case $mode in
  launch)
    # A multi-machine job needs its token: mpirun passes it to both launchers (-x).
    ACCEL_RDZV_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
    export ACCEL_RDZV_TOKEN
    cmd=("${mpi[@]}" -np 2 --host n0,n1 -x ACCEL_RDZV_TOKEN
         "$launcher" --num_processes 4 --main_process_ip "$N0_ADDR" --main_process_port 29610
         --rdzv_timeout 60 "$train" "${sizes[@]}" --batch-size 2) ;;
  comm)
    cmd=("${mpi[@]}" -np 4 --host n0:2,n1:2 "$train" "${sizes[@]}" --batch-size 2) ;;
  *) echo "usage: mpi_launch_test.sh launch|comm ..." >&2; exit 2 ;;
esac
rc=0
"${tagged[@]}" timeout -s KILL 150 "${cmd[@]}" >"$work/out" 2>&1 || rc=$?
four=$(checksum <"$work/out" || true)
one=$(single_process_checksum 8)
echo "mpirun ($mode) exit $rc; checksum world 4: $four, one process: $one"
if ((rc != 0)); then cat "$work/out"; exit 1; fi
expect_in "$work/out" '"world": 4'
same_checksum "$four" "$one"
if [[ $mode == launch ]]; then
  expect_in "$work/out" "Open MPI detected: machine_rank=0 num_machines=2"
  expect_in "$work/out" "Open MPI detected: machine_rank=1 num_machines=2"
fi
took=$(wait_tagged_gone 10) || { expect_no_tagged_pids; exit 1; }
echo PASS
