#!/usr/bin/env bash
# The issue-12 scale check in one command: N (4096) simulated machines on one server, the full
# machine list in every answer (the old default) against the default O(1) answer, channels
# connected before the clock starts, RUNS alternating runs each (median); then every path once
# without preconnecting, and BIG (16384) machines once (BIG/2 shared channels: two sockets per
# channel must fit the open-file limit). Prints one line per run and the medians.
# Usage: bench/rendezvous_scale.sh [BUILD_DIR] [RUNS] [N] [BIG]   (default: build 5 4096 16384)
# A quick end-to-end check: bench/rendezvous_scale.sh build 1 256 1024
set -euo pipefail
cd "$(dirname "$0")/.."
bench=${1:-build}/bench/rendezvous_bench
runs=${2:-5}
n=${3:-4096}
big=${4:-16384}
joined_ms() { awk '$1 ~ /^[0-9]+$/ { print $3 }' | tail -n 1; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# A run with failed joins still prints its row (the failures column says how many).
one() { "$bench" --min_agents="$1" --max_agents="$1" --kv_ops=0 "${@:2}" || true; }
list=() default=()
for ((i = 1; i <= runs; ++i)); do
  list+=("$(one "$n" --with_machines=1 --preconnect=1 | joined_ms)")
  default+=("$(one "$n" --preconnect=1 | joined_ms)")
  echo "run $i: $n machines, preconnected: full list ${list[-1]} ms, default ${default[-1]} ms"
done
echo "median of $runs: full list $(printf '%s\n' "${list[@]}" | median) ms," \
     "default $(printf '%s\n' "${default[@]}" | median) ms"
echo "$n machines, connecting counted: full list $(one "$n" --with_machines=1 | joined_ms) ms," \
     "default $(one "$n" | joined_ms) ms"
echo "$big machines, $((big / 2)) channels, preconnected:"
one "$big" --channels=$((big / 2)) --preconnect=1
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
