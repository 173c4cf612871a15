#!/usr/bin/env bash
# Two machines × one CPU process each, as two `ip netns` namespaces joined by a veth pair, one
# accel-launch per namespace: train.bin's DDP (real Gloo over 10.x addresses that exist only
# inside the namespaces) must give the same parameters as one process with twice the batch.
# Needs root (exit 77 = skipped, with the reason). Creates and removes its namespaces.
# Usage: train_test.sh <accel-launch> <train.bin>
set -euo pipefail
launcher=$1
train=$2
if [[ $(id -u) -ne 0 ]]; then echo "SKIP: needs root for ip netns"; exit 77; fi
command -v ip >/dev/null || { echo "SKIP: iproute2 missing"; exit 77; }

id=$(( $$ % 200 + 20 ))
ns0=accel_train_$$_0 ns1=accel_train_$$_1
addr0=10.214.$id.1 addr1=10.214.$id.2
work=$(mktemp -d)
cleanup() {
  ip netns pids "$ns0" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
  ip netns pids "$ns1" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
  ip netns del "$ns0" 2>/dev/null || true
  ip netns del "$ns1" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
ip netns add "$ns0" || { echo "SKIP: ip netns add failed (no CAP_SYS_ADMIN?)"; exit 77; }
ip netns add "$ns1"
ip link add "vtr$$a" type veth peer name "vtr$$b"
ip link set "vtr$$a" netns "$ns0"
ip link set "vtr$$b" netns "$ns1"
ip -n "$ns0" addr add "$addr0/24" dev "vtr$$a"
ip -n "$ns1" addr add "$addr1/24" dev "vtr$$b"
for ns in "$ns0" "$ns1"; do ip -n "$ns" link set lo up; done
ip -n "$ns0" link set "vtr$$a" up
ip -n "$ns1" link set "vtr$$b" up

sizes=(--input-dim 32 --hidden 64 --layers 3 --classes 4 --samples 512 --lr 0.01 --steps 20
       --optimizer sgd)
common=(--use_cpu --num_machines 2 --num_processes 2 --main_process_ip "$addr0"
        --main_process_port 29555 --rdzv_timeout 60 --run_id netns-train)
echo "secret-$$" > "$work/token"
for m in 0 1; do
  ns_var=ns$m
  timeout -s KILL 120 ip netns exec "${!ns_var}" "$launcher" "${common[@]}" --machine_rank $m \
    --rdzv_token_file "$work/token" "$train" "${sizes[@]}" --batch-size 4 >"$work/m$m.log" 2>&1 &
  eval "pid$m=\$!"
done
rc0=0 rc1=0
wait "$pid0" || rc0=$?
wait "$pid1" || rc1=$?
single=$(timeout -s KILL 60 "$train" "${sizes[@]}" --batch-size 8 | tail -n 1)

checksum() { grep -o '"param_checksum": [-0-9.e+]*' | tail -n 1 | awk '{print $2}'; }
two=$(checksum <"$work/m0.log" || true)
one=$(checksum <<<"$single")
echo "machine 0 exit $rc0, machine 1 exit $rc1; checksum two machines: $two, one process: $one"
if [[ $rc0 -ne 0 || $rc1 -ne 0 || -z $two ]]; then
  echo "--- machine 0"; cat "$work/m0.log"; echo "--- machine 1"; cat "$work/m1.log"
  exit 1
fi
grep -q '"world": 2' "$work/m0.log" || { echo "machine 0 did not train a world of 2"; exit 1; }
awk -v a="$two" -v b="$one" 'BEGIN { d = a - b; if (d < 0) d = -d; s = b < 0 ? -b : b;
  if (d > 1e-5 * s) { print "checksums differ by " d; exit 1 } }'
[[ -z $(ip netns pids "$ns0") && -z $(ip netns pids "$ns1") ]] || { echo "processes left behind"; exit 1; }
echo "PASS"
