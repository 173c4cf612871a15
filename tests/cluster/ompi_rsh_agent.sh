#!/usr/bin/env bash
# Open MPI's rsh agent for the test cluster (mpirun --mca plm_rsh_agent ompi_rsh_agent.sh):
# called as `agent [rsh options] HOST COMMAND...`, it runs COMMAND as a shell line (as ssh would)
# inside HOST's network namespace, under HOST's own hostname, so each orted sees its own machine
# (two orteds with one hostname share a session directory and crash in hwloc now and then).
# Needs ACCEL_CLUSTER_DIR (from cluster.env) to map n0/n1 to namespaces.
set -euo pipefail
while [[ $# -gt 0 && $1 == -* ]]; do shift; done
host=${1:?ompi_rsh_agent.sh: no host}
shift
# shellcheck disable=SC1091
source "${ACCEL_CLUSTER_DIR:?ompi_rsh_agent.sh: ACCEL_CLUSTER_DIR is not set}/cluster.env"
case $host in
  n0) ns=$NS_N0 ;;
  n1) ns=$NS_N1 ;;
  *) echo "ompi_rsh_agent.sh: unknown host '$host' (the test cluster has n0 and n1)" >&2; exit 255 ;;
esac
exec ip netns exec "$ns" unshare --uts -- sh -c "hostname $host && $*"
