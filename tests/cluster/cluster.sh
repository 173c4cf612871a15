#!/usr/bin/env bash
# The test cluster: two "machines" n0 and n1 (network namespaces on one bridge, each with its own
# hostname and /etc/hosts), a real Slurm 22.05 on them (munged and slurmctld in the root namespace,
# one slurmd per machine) and an Open MPI rsh agent that starts orted on them (ompi_rsh_agent.sh).
#
#   cluster.sh up   DIR   tear down whatever DIR describes, then bring everything up
#   cluster.sh down DIR   kill the cluster's clients (srun, sbatch, mpirun: their environment
#                         names DIR), stop every daemon by its pid, kill what is left in the
#                         namespaces, remove the namespaces, the bridge, /etc/netns entries and DIR
#
# Both are idempotent; `down` of nothing succeeds. `up` writes DIR/cluster.env (sourced by the tests):
# SLURM_CONF, the machines' addresses (N0_ADDR, N1_ADDR), the namespace names and the agent.
# Names derive from DIR (a short hash), so two checkouts can run side by side.
# Needs root, iproute2, nsenter/unshare (util-linux), munge, slurmctld, slurmd, slurm-client.
# Exit 77 = cannot run here (the reason is printed), so CTest reports the tests as skipped; under
# CI (CI=true) or ACCEL_STRICT_TESTS=1 that is a failure instead (tests/testing/skip.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../testing/skip.sh"
cmd=${1:?usage: cluster.sh up|down DIR}
dir=${2:?usage: cluster.sh up|down DIR}
case $dir in /*) ;; *) echo "cluster.sh: DIR must be absolute" >&2; exit 2 ;; esac

hash=$(printf '%s' "$dir" | md5sum | cut -c1-4)
octet=$((16#$hash % 200 + 20))
subnet=10.215.$octet
bridge=acb$hash
ns0=accel-$hash-n0 ns1=accel-$hash-n1
n0_addr=$subnet.10 n1_addr=$subnet.11 ctld_addr=$subnet.1
ctld_port=$((20000 + 16#$hash % 4000 * 2))

log() { echo "cluster.sh: $*"; }

# Sends TERM to the daemons whose pid files are given (those alive), waits up to 5 s for all of
# them, then KILLs what is left.
stop_daemons() {
  local pids=() file pid
  for file in "$@"; do
    [[ -s $file ]] || continue
    pid=$(<"$file")
    # Only our daemons: a stale pid file may name a reused pid.
    [[ $(cat "/proc/$pid/comm" 2>/dev/null) =~ ^(slurmd|slurmctld|munged)$ ]] || continue
    kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
  done
  for _ in $(seq 50); do
    local alive=()
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive+=("$pid"); done
    ((${#alive[@]} == 0)) && return 0
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
}

# Prints the pids of client processes of this cluster (srun, sbatch, mpirun and what they started
# outside the machines: their environment names DIR), except this script, its ancestors (a shell
# that sourced cluster.env) and its descendants.
clients() {
  local ancestors=" " pid=$$ candidate up
  while ((pid > 1)); do
    ancestors+="$pid "
    pid=$(awk '{print $4}' "/proc/$pid/stat" 2>/dev/null || echo 1)
  done
  for candidate in $(grep -lzxE "SLURM_CONF=$dir/slurm.conf|ACCEL_CLUSTER_DIR=$dir" \
                       /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3); do
    [[ $ancestors == *" $candidate "* ]] && continue
    up=$candidate
    while ((up > 1 && up != $$)); do up=$(awk '{print $4}' "/proc/$up/stat" 2>/dev/null || echo 1); done
    ((up == $$)) || echo "$candidate"
  done
}

down() {
  local stray
  stray=$(clients)
  [[ -z $stray ]] || kill -KILL $stray 2>/dev/null || true
  stop_daemons "$dir/pids/slurmd-n0" "$dir/pids/slurmd-n1" "$dir/pids/slurmctld"
  stop_daemons "$dir/pids/munged"
  for ns in "$ns0" "$ns1"; do
    if [[ -e /run/netns/$ns ]]; then
      # Job steps, workers, orted: anything still running in the machine.
      ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
      for _ in $(seq 50); do [[ -z $(ip netns pids "$ns" 2>/dev/null) ]] && break; sleep 0.1; done
      ip netns del "$ns" 2>/dev/null || true
    fi
    rm -rf "/etc/netns/$ns"
  done
  ip link del "$bridge" 2>/dev/null || true
  rmdir /etc/netns 2>/dev/null || true
  rm -rf "$dir"
}

require() {
  [[ $(id -u) -eq 0 ]] || skip "the test cluster needs root (uid $(id -u))"
  local missing=()
  for tool in ip nsenter unshare munged slurmctld slurmd srun sbatch mpirun; do
    command -v "$tool" >/dev/null || missing+=("$tool")
  done
  ((${#missing[@]} == 0)) || skip "missing ${missing[*]} (run scripts/install-deps)"
}

network() {
  if ip -4 addr show | grep -q "inet $subnet\."; then
    echo "cluster.sh: $subnet.0/24 is already in use on this host" >&2; exit 1
  fi
  ip link add "$bridge" type bridge
  ip addr add "$ctld_addr/24" dev "$bridge"
  ip link set "$bridge" up
  local m=0
  for ns in "$ns0" "$ns1"; do
    local addr_var=n${m}_addr
    ip netns add "$ns"
    ip link add "ac${hash}m$m" type veth peer name "ac${hash}p$m"
    ip link set "ac${hash}p$m" master "$bridge" up
    ip link set "ac${hash}m$m" netns "$ns"
    ip -n "$ns" addr add "${!addr_var}/24" dev "ac${hash}m$m"
    ip -n "$ns" link set lo up
    ip -n "$ns" link set "ac${hash}m$m" up
    # `ip netns exec` (the MPI agent) bind-mounts these over /etc/hosts and /etc/hostname.
    mkdir -p "/etc/netns/$ns"
    cp "$dir/hosts" "/etc/netns/$ns/hosts"
    m=$((m + 1))
  done
}

munge_up() {
  install -d -o munge -g munge -m 0700 "$dir/munge"
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chown munge:munge "$dir/munge/munge.key"
  chmod 0400 "$dir/munge/munge.key"
  runuser -u munge -- munged --force --socket="$dir/munge/munge.socket" \
    --key-file="$dir/munge/munge.key" --pid-file="$dir/munge/munged.pid" \
    --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed"
  cp "$dir/munge/munged.pid" "$dir/pids/munged"
  # The socket's directory must be reachable by every client (root here).
  chmod 0755 "$dir/munge"
}

slurm_conf() {
  sed -e "s|@DIR@|$dir|g" -e "s|@CTLD_HOST@|$(hostname -s)|g" -e "s|@CTLD_ADDR@|$ctld_addr|g" \
    -e "s|@CTLD_PORT@|$ctld_port|g" -e "s|@N0_ADDR@|$n0_addr|g" -e "s|@N1_ADDR@|$n1_addr|g" \
    -e "s|@CLUSTER@|accel$hash|g" "$here/slurm.conf.in" >"$dir/slurm.conf"
  : >"$dir/cgroup.conf"
  mkdir -p "$dir/ctld" "$dir/spool/n0" "$dir/spool/n1" "$dir/tmp/n0" "$dir/tmp/n1" "$dir/jobs"
  chmod 1777 "$dir/jobs"
}

# Starts slurmd for machine NAME inside its namespace: nsenter keeps /sys (and so the cgroup
# tree slurmd needs); its own UTS and mount namespaces give it the hostname and /etc/hosts.
slurmd_up() {
  local name=$1 ns=$2
  nsenter --net="/run/netns/$ns" unshare --uts --mount --propagation private -- \
    sh -c "hostname $name && mount --bind '$dir/hosts' /etc/hosts && \
           exec slurmd -D -f '$dir/slurm.conf' -N $name" >"$dir/slurmd-$name.out" 2>&1 &
  echo $! >"$dir/pids/slurmd-$name"
}

wait_idle() {
  for _ in $(seq 100); do
    if [[ $(SLURM_CONF=$dir/slurm.conf sinfo -h -o '%T' -n n0,n1 2>/dev/null | sort -u) == idle ]]; then
      return 0
    fi
    sleep 0.1
  done
  echo "cluster.sh: the nodes did not become idle in 10 s" >&2
  SLURM_CONF=$dir/slurm.conf sinfo -N >&2 || true
  tail -n 20 "$dir"/*.log "$dir"/slurmd-*.out >&2 || true
  return 1
}

up() {
  require
  down
  mkdir -p "$dir/pids"
  chmod 0755 "$dir"
  printf '127.0.0.1 localhost\n%s n0\n%s n1\n%s %s\n' "$n0_addr" "$n1_addr" "$ctld_addr" \
    "$(hostname -s)" >"$dir/hosts"
  network
  munge_up
  slurm_conf
  slurmctld -f "$dir/slurm.conf" -i
  for _ in $(seq 50); do [[ -s $dir/slurmctld.pid ]] && break; sleep 0.1; done
  cp "$dir/slurmctld.pid" "$dir/pids/slurmctld"
  slurmd_up n0 "$ns0"
  slurmd_up n1 "$ns1"
  wait_idle
  cat >"$dir/cluster.env" <<EOF
export SLURM_CONF=$dir/slurm.conf
export ACCEL_CLUSTER_DIR=$dir
export N0_ADDR=$n0_addr N1_ADDR=$n1_addr
export NS_N0=$ns0 NS_N1=$ns1
export CLUSTER_RSH_AGENT=$here/ompi_rsh_agent.sh
export CLUSTER_OMPI_TMPDIR=$dir/ompi CLUSTER_SUBNET=$subnet.0/24
EOF
  mkdir -p "$dir/ompi"
  log "up: slurmctld $ctld_addr:$ctld_port, n0 $n0_addr ($ns0), n1 $n1_addr ($ns1), state in $dir"
}

case $cmd in
  up) trap 'rc=$?; if ((rc != 0 && rc != 77)); then down; fi' EXIT; up ;;
  down) down; log "down: $dir removed" ;;
  *) echo "usage: cluster.sh up|down DIR" >&2; exit 2 ;;
esac
