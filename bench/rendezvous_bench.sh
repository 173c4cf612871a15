#!/usr/bin/env bash
# The rendezvous benchmark in one command: runs build/bench/rendezvous_bench three ways (full
# machine list; no list; no list with channels connected before the clock starts), writes the
# CSVs under bench/results/ and plots them into bench/results/rendezvous_bench.png.
# Usage: bench/rendezvous_bench.sh [BUILD_DIR] [--max_agents=N]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
results=bench/results
mkdir -p "$results"
extra=("$@")
run() {
  local name=$1; shift
  echo "== rendezvous_bench $name $* ${extra[*]}"
  "$build/bench/rendezvous_bench" "$@" "${extra[@]}" --out="$results/rendezvous_bench_$name.csv"
}
run list --with_machines=1
run nolist --with_machines=0
run preconnect --with_machines=0 --preconnect=1
bench/plot_rendezvous.sh "$results/rendezvous_bench.png" "$results"/rendezvous_bench_{list,nolist,preconnect}.csv
