# Sourced by netns tests: two machines as `ip netns` namespaces joined by a veth pair.
# two_machines NAME SUBNET_BYTE sets ns0 ns1 addr0 addr1 (10.SUBNET_BYTE.<pid-derived>.1 and .2)
# veth0 veth1 (each machine's end of the link), and work (a temporary directory), and installs an EXIT trap that kills everything in the
# namespaces, removes them and the directory, after running the caller's `before_cleanup` if it
# defines one. Skips (tests/testing/skip.sh) when namespaces cannot be made.
source "$(dirname "${BASH_SOURCE[0]}")/skip.sh"
two_machines() {
  local name=$1 subnet=$2 id=$(( $$ % 200 + 20 ))
  ns0=accel_${name}_$$_0 ns1=accel_${name}_$$_1
  addr0=10.$subnet.$id.1 addr1=10.$subnet.$id.2
  work=$(mktemp -d)
  trap _two_machines_cleanup EXIT
  ip netns add "$ns0" || skip "ip netns add failed (no CAP_SYS_ADMIN?)"
  ip netns add "$ns1"
  local veth=v${name:0:2}$$
  veth0=${veth}a veth1=${veth}b
  ip link add "${veth}a" type veth peer name "${veth}b"
  ip link set "${veth}a" netns "$ns0"
  ip link set "${veth}b" netns "$ns1"
  ip -n "$ns0" addr add "$addr0/24" dev "${veth}a"
  ip -n "$ns1" addr add "$addr1/24" dev "${veth}b"
  for ns in "$ns0" "$ns1"; do ip -n "$ns" link set lo up; done
  ip -n "$ns0" link set "${veth}a" up
  ip -n "$ns1" link set "${veth}b" up
}

_two_machines_cleanup() {
  declare -F before_cleanup >/dev/null && before_cleanup
  ip netns pids "$ns0" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
  ip netns pids "$ns1" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
  ip netns del "$ns0" 2>/dev/null || true
  ip netns del "$ns1" 2>/dev/null || true
  rm -rf "$work"
}
