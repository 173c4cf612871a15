#!/usr/bin/env bash
# Two machines as two `ip netns` namespaces joined by a veth pair, one accel-launch per
# namespace. One CPU process each: train.bin's DDP (real Gloo over 10.x addresses that exist only
# inside the namespaces) must give the same parameters as one process with twice the batch, also
# after saving and resuming checkpoints in one shared directory and in a directory per machine.
# Two processes each: the hierarchical all-reduce (shared memory inside a machine, Gloo between
# the machines' leaders) must give the same parameters as one process with four times the batch,
# with the default transport (TLS from the token) and with the user's own certificates (tls_*).
# Needs root (tests/testing/skip.sh: skipped with the reason, a failure under CI). Creates and removes its namespaces.
# Usage: train_test.sh <accel-launch> <train.bin>
set -euo pipefail
launcher=$1
train=$2
source "$(dirname "$0")/../../testing/skip.sh"
[[ $(id -u) -eq 0 ]] || skip "needs root for ip netns (uid $(id -u))"
command -v ip >/dev/null || skip "iproute2 missing"

source "$(dirname "$0")/../../testing/two_machines.sh"
two_machines train 214

sizes=(--input-dim 32 --hidden 64 --layers 3 --classes 4 --samples 512 --lr 0.01 --optimizer sgd)
common=(--use_cpu --num_machines 2 --main_process_ip "$addr0"
        --main_process_port 29555 --rdzv_timeout 60 --run_id netns-train)
(umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/token")  # a strong token
chmod 600 "$work/token"

# run_pair NAME "ARGS FOR MACHINE 0" "ARGS FOR MACHINE 1": both machines' train.bin, batch 4 per
# process, $procs processes in all (default 2: one per machine), the launchers' own options
# $launch0 / $launch1 (default none); logs in $work/NAME.m0.log and $work/NAME.m1.log; fails the
# test unless both exit 0.
run_pair() {
  local name=$1 m rc0=0 rc1=0
  local -a extra0 extra1 opts0 opts1
  read -r -a extra0 <<<"$2"
  read -r -a extra1 <<<"$3"
  read -r -a opts0 <<<"${launch0:-}"
  read -r -a opts1 <<<"${launch1:-}"
  timeout -s KILL 120 ip netns exec "$ns0" "$launcher" "${common[@]}" --machine_rank 0 "${opts0[@]}" \
    --num_processes "${procs:-2}" --rdzv_token_file "$work/token" "$train" "${sizes[@]}" --batch-size 4 "${extra0[@]}" \
    >"$work/$name.m0.log" 2>&1 &
  local pid0=$!
  timeout -s KILL 120 ip netns exec "$ns1" "$launcher" "${common[@]}" --machine_rank 1 "${opts1[@]}" \
    --num_processes "${procs:-2}" --rdzv_token_file "$work/token" "$train" "${sizes[@]}" --batch-size 4 "${extra1[@]}" \
    >"$work/$name.m1.log" 2>&1 &
  local pid1=$!
  wait "$pid0" || rc0=$?
  wait "$pid1" || rc1=$?
  echo "$name: machine 0 exit $rc0, machine 1 exit $rc1"
  if [[ $rc0 -ne 0 || $rc1 -ne 0 ]]; then
    for m in 0 1; do echo "--- $name machine $m"; cat "$work/$name.m$m.log"; done
    exit 1
  fi
}
checksum() { grep -o '"param_checksum": [-0-9.e+]*' | tail -n 1 | awk '{print $2}'; }
# same_checksum LOG STEPS [BATCH]: machine 0's checksum equals one process with batch BATCH
# (default 8: both machines' batches together).
same_checksum() {
  local two one
  two=$(checksum <"$1" || true)
  one=$(timeout -s KILL 60 "$train" "${sizes[@]}" --batch-size "${3:-8}" --steps "$2" | tail -n 1 |
    checksum)
  echo "checksum two machines: $two, one process: $one ($1)"
  [[ -n $two ]] || { echo "no checksum in $1"; cat "$1"; exit 1; }
  awk -v a="$two" -v b="$one" 'BEGIN { d = a - b; if (d < 0) d = -d; s = b < 0 ? -b : b;
    if (d > 1e-5 * s) { print "checksums differ by " d; exit 1 } }'
}

run_pair plain "--steps 20" "--steps 20"
grep -q '"world": 2' "$work/plain.m0.log" || { echo "machine 0 did not train a world of 2"; exit 1; }
grep -q '"backend": "gloo"' "$work/plain.m0.log" || { echo "plain: not Gloo"; exit 1; }
same_checksum "$work/plain.m0.log" 20

# Two processes on each machine: shared memory inside it, Gloo between the two leaders.
procs=4 run_pair hierarchical "--steps 20" "--steps 20"
grep -q '"world": 4' "$work/hierarchical.m0.log" || { echo "not a world of 4"; exit 1; }
grep -q '"backend": "shm+gloo"' "$work/hierarchical.m0.log" ||
  { echo "the hierarchical path did not carry the job"; cat "$work/hierarchical.m0.log"; exit 1; }
same_checksum "$work/hierarchical.m0.log" 20 16

# The user's own certificates (tls_*): machine 0's server shows a certificate for its address
# signed by the user's CA, and every launcher and libaccel worker (two per machine: each opens the
# store) verifies it with tls_ca_file; clients still prove the token. Same parameters as one
# process.
tls=$work/tls
mkdir -p "$tls"
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
timeout 60 openssl req -x509 "${ec[@]}" -days 1 -subj /CN=accel-test-ca -keyout "$tls/ca.key" \
  -out "$tls/ca.pem" >/dev/null 2>&1
timeout 60 openssl req "${ec[@]}" -subj "/CN=$addr0" -keyout "$tls/server.key" \
  -out "$tls/server.csr" >/dev/null 2>&1
printf 'subjectAltName=IP:%s\n' "$addr0" >"$tls/san.ext"
timeout 60 openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" \
  -CAcreateserial -days 1 -extfile "$tls/san.ext" -out "$tls/server.pem" >/dev/null 2>&1
[[ -s $tls/server.pem ]] || { echo "openssl could not make the test certificates"; exit 1; }
procs=4 launch0="--tls_cert_file $tls/server.pem --tls_key_file $tls/server.key --tls_ca_file $tls/ca.pem" \
  launch1="--tls_ca_file $tls/ca.pem" run_pair user_tls "--steps 20" "--steps 20"
for m in 0 1; do
  grep -q "transport: *TLS with the user's certificates" "$work/user_tls.m$m.log" ||
    { echo "user_tls: machine $m's plan does not say the user's TLS"; cat "$work/user_tls.m$m.log"; exit 1; }
done
grep -q '"world": 4' "$work/user_tls.m0.log" || { echo "user_tls: not a world of 4"; exit 1; }
same_checksum "$work/user_tls.m0.log" 20 16

# Checkpoints in one directory both machines share (the namespaces share the filesystem): one
# writer for the shared files, a rank file each; then resume from it.
shared="--steps 20 --save-every 5 --checkpoint-dir $work/shared"
run_pair shared "$shared" "$shared"
for f in model_0.pt optimizer_0.pt accelerator.pt rng_0.pt rng_1.pt; do
  [[ -f $work/shared/$f ]] || { echo "shared checkpoint lacks $f"; ls -la "$work"; exit 1; }
done
[[ ! -e $work/shared.tmp && ! -e $work/shared.old ]] || { echo "shared: .tmp/.old left"; exit 1; }
resume="--steps 30 --resume --checkpoint-dir $work/shared"
run_pair shared_resume "$resume" "$resume"
grep -q "resumed from $work/shared at step 20" "$work/shared_resume.m0.log" ||
  { echo "did not resume from the shared checkpoint"; cat "$work/shared_resume.m0.log"; exit 1; }
same_checksum "$work/shared_resume.m0.log" 30

# A directory per machine: each holds the shared files and its own ranks' files.
run_pair own "--steps 20 --save-every 5 --checkpoint-dir $work/own0" \
  "--steps 20 --save-every 5 --checkpoint-dir $work/own1"
for m in 0 1; do
  for f in model_0.pt accelerator.pt "rng_$m.pt"; do
    [[ -f $work/own$m/$f ]] || { echo "machine $m's checkpoint lacks $f"; exit 1; }
  done
done
run_pair own_resume "--steps 30 --resume --checkpoint-dir $work/own0" \
  "--steps 30 --resume --checkpoint-dir $work/own1"
grep -q "resumed from $work/own0 at step 20" "$work/own_resume.m0.log" ||
  { echo "did not resume from machine 0's checkpoint"; cat "$work/own_resume.m0.log"; exit 1; }
same_checksum "$work/own_resume.m0.log" 30

[[ -z $(ip netns pids "$ns0") && -z $(ip netns pids "$ns1") ]] || { echo "processes left behind"; exit 1; }
echo "PASS"
