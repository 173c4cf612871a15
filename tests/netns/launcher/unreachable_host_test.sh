#!/usr/bin/env bash
# A user report (accelerate #3568): accelerate launch hangs where torchrun works, dialing the IPv6
# address of a host that is not there. Here, on a machine (a namespace with its own /etc/hosts and
# an empty resolv.conf: nothing leaves it) that is machine 1 of 2, main_process_ip is
#   - a name that resolves to the IPv6 address of no host on the link (neighbour discovery fails),
#   - that IPv6 address itself,
#   - an IPv6 address with no route,
#   - a name that does not resolve:
# each ends the launch with exit 3 within seconds, naming the host. And an address whose host is
# up but whose launcher has not started (connection refused) is waited for: the join's own
# timeout (rdzv_timeout 3) ends it, with the timeout's message.
# Needs root (tests/testing/skip.sh: skipped with the reason, a failure under CI).
# Usage: unreachable_host_test.sh <accel-launch>
set -euo pipefail
launcher=$1
source "$(dirname "$0")/../../testing/skip.sh"
[[ $(id -u) -eq 0 ]] || skip "needs root for ip netns (uid $(id -u))"
command -v ip >/dev/null || skip "iproute2 missing"
ns=accel_unreach_$$
work=$(mktemp -d)
cleanup() {
  ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true
  rm -rf "/etc/netns/$ns" "$work"
}
trap cleanup EXIT
ip netns add "$ns" || skip "ip netns add failed (no CAP_SYS_ADMIN?)"
mkdir -p "/etc/netns/$ns"
printf '127.0.0.1 localhost\nfd00:1::99 ghost-host\n' >"/etc/netns/$ns/hosts"
: >"/etc/netns/$ns/resolv.conf"
ip -n "$ns" link set lo up
ip -n "$ns" link add eth0 type veth peer name eth1  # a link with nobody else on it
ip -n "$ns" addr add fd00:1::1/64 dev eth0 nodad
ip -n "$ns" addr add 10.218.1.1/24 dev eth0
ip -n "$ns" link set eth0 up
ip -n "$ns" link set eth1 up
(umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/token")

fail() { echo "FAIL: $*"; exit 1; }
# launch HOST TIMEOUT: machine 1 of 2 dialing HOST; sets code, seconds and err.
launch() {
  local start=$SECONDS
  set +e
  timeout -s KILL 60 ip netns exec "$ns" "$launcher" --use_cpu --num_machines 2 \
    --num_processes 2 --machine_rank 1 --main_process_ip "$1" --main_process_port 29511 \
    --rdzv_timeout "$2" --rdzv_token_file "$work/token" /bin/true >"$work/out" 2>"$work/err"
  code=$?
  set -e
  seconds=$(( SECONDS - start ))
  err=$(cat "$work/err")
}

for host in ghost-host fd00:1::99 2001:db8::1 no-such-host.invalid; do
  launch "$host" 600
  [[ $code == 3 ]] || fail "$host: exit $code, want 3: $err"
  (( seconds <= 10 )) || fail "$host: took $seconds s (rdzv_timeout 600)"
  grep -q "main_process_ip $host \(does not resolve\|cannot be reached\)" <<<"$err" ||
    fail "$host: the error does not name the host: $err"
  echo "ok: $host: exit 3 in $seconds s: $(grep main_process_ip <<<"$err" | head -1)"
done
launch 10.218.1.1 3  # this machine's own address: up, nothing listens
[[ $code == 3 ]] || fail "a host that is up: exit $code, want 3: $err"
grep -q "cannot be reached\|does not resolve" <<<"$err" && fail "a host that is up was refused: $err"
(( seconds >= 3 )) || fail "a host that is up was not waited for ($seconds s): $err"
echo "ok: a host that is up is waited for until rdzv_timeout ($seconds s)"
echo PASS
