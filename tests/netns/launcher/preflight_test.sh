#!/usr/bin/env bash
# The network preflight across machines: each machine an `ip netns` namespace with one veth into
# a bridge (in a hub namespace); one machine's outgoing traffic is slowed with a token-bucket
# qdisc (tc ... tbf). `accel-launch preflight` on every machine (real Gloo TCP between the
# namespaces) must print the pairwise matrix on machine 0 and flag exactly the slowed links:
#   - 2 machines, machine 1 slowed: the link 1 -> 0;
#   - 3 machines, machine 2 slowed: the links 2 -> 0 and 2 -> 1, and machine 2 named;
#   - and a launch with --preflight --strict on the slowed 2-machine job starts nothing, exit 1.
# Needs root (tests/testing/skip.sh: skipped with the reason, a failure under CI). Creates and removes its namespaces.
# Usage: preflight_test.sh <accel-launch> <fake_worker>
set -euo pipefail
launcher=$1
fake=$2
source "$(dirname "$0")/../../testing/skip.sh"
[[ $(id -u) -eq 0 ]] || skip "needs root for ip netns (uid $(id -u))"
command -v ip >/dev/null || skip "iproute2 missing"
command -v tc >/dev/null || skip "tc (iproute2) missing"

id=$(( $$ % 200 + 20 ))
hub=accel_pf_$$_hub
ns=(accel_pf_$$_0 accel_pf_$$_1 accel_pf_$$_2)
addr=(10.218.$id.1 10.218.$id.2 10.218.$id.3)
port=$(( 29900 + $$ % 90 ))
veth=vpf$$
work=$(mktemp -d)
cleanup() {
  for n in "${ns[@]}" "$hub"; do
    ip netns pids "$n" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    ip netns del "$n" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
ip netns add "$hub" || skip "ip netns add failed (no CAP_SYS_ADMIN?)"
ip -n "$hub" link add br0 type bridge
ip -n "$hub" link set br0 up
for m in 0 1 2; do
  ip netns add "${ns[$m]}"
  ip link add "${veth}${m}" type veth peer name "${veth}${m}h"
  ip link set "${veth}${m}" netns "${ns[$m]}"
  ip link set "${veth}${m}h" netns "$hub"
  ip -n "$hub" link set "${veth}${m}h" master br0
  ip -n "$hub" link set "${veth}${m}h" up
  ip -n "${ns[$m]}" addr add "${addr[$m]}/24" dev "${veth}${m}"
  ip -n "${ns[$m]}" link set "${veth}${m}" up
  ip -n "${ns[$m]}" link set lo up
done
# Machine $1's outgoing traffic at 40 Mbit/s (the others run at memory speed).
slow_down() {
  tc -n "${ns[$1]}" qdisc add dev "${veth}$1" root tbf rate 40mbit burst 32kb latency 200ms ||
    skip "tc tbf is not available here (the kernel's sch_tbf)"
}
slow_down_remove() { tc -n "${ns[$1]}" qdisc del dev "${veth}$1" root; }
(umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/token")  # a strong token
chmod 600 "$work/token"

fail() {
  echo "FAIL: $*"
  for f in "$work"/*.log; do echo "--- $f"; cat "$f"; done
  exit 1
}
# Runs `accel-launch COMMAND <the job's options> ARGS...` on machines 0..N-1 at once; machine m's
# output in $work/<tag>_m.log, its exit code in $work/<tag>_m.rc.
on_machines() {  # N tag COMMAND ARGS...
  local n=$1 tag=$2 command=$3; shift 3
  local pids=()
  for (( m = 0; m < n; m++ )); do
    ( rc=0; timeout -s KILL 120 ip netns exec "${ns[$m]}" "$launcher" "$command" --use_cpu \
        --num_machines "$n" --num_processes "$n" --machine_rank "$m" \
        --main_process_ip "${addr[0]}" --main_process_port "$port" --rdzv_timeout 60 \
        --rdzv_token_file "$work/token" --run_id "pf-$tag-$$" "$@" >"$work/${tag}_$m.log" 2>&1 || rc=$?
      echo "$rc" >"$work/${tag}_$m.rc" ) &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  port=$(( port + 1 ))
}
expect_rc() {  # tag machines expected
  for (( m = 0; m < $2; m++ )); do
    [[ $(cat "$work/$1_$m.rc") == "$3" ]] || fail "$1: machine $m exited $(cat "$work/$1_$m.rc"), expected $3"
  done
}
slow_links() { grep -o "SLOW LINK machine [0-9] ([^)]*) -> machine [0-9]" "$1" | sed 's/ ([^)]*)//' | sort; }

# 2 machines, machine 1 slowed.
slow_down 1
on_machines 2 two preflight
expect_rc two 2 0
cat "$work/two_0.log"
grep -q "bandwidth, MB/s" "$work/two_0.log" || fail "machine 0 printed no matrix"
[[ $(slow_links "$work/two_0.log") == "SLOW LINK machine 1 -> machine 0" ]] ||
  fail "2 machines: expected exactly the link 1 -> 0 flagged, got: $(slow_links "$work/two_0.log")"
grep -q "slow: 1->0" "$work/two_1.log" || fail "machine 1 did not name the slow link"

# The same under --preflight --strict: nothing starts, every machine exits 1.
on_machines 2 strict launch --preflight --strict "$fake" --lines=1
expect_rc strict 2 1
grep -q "SLOW LINK machine 1" "$work/strict_0.log" || fail "strict: the slow link was not named"
if grep -q "rank 0 line" "$work/strict_0.log"; then fail "strict: the program was started"; fi
slow_down_remove 1
echo "--preflight --strict with a slow link: nothing started, exit 1"

# 3 machines, machine 2 slowed.
slow_down 2
on_machines 3 three preflight
expect_rc three 3 0
cat "$work/three_0.log"
expected=$'SLOW LINK machine 2 -> machine 0\nSLOW LINK machine 2 -> machine 1'
[[ $(slow_links "$work/three_0.log") == "$expected" ]] ||
  fail "3 machines: expected the links 2 -> 0 and 2 -> 1 flagged, got: $(slow_links "$work/three_0.log")"
grep -q "SLOW MACHINE 2" "$work/three_0.log" || fail "3 machines: machine 2 was not named"
[[ $(grep -c "^  m[0-9]" "$work/three_0.log") -ge 6 ]] || fail "3 machines: matrix rows missing"
echo "PASS"
