#!/usr/bin/env bash
# Plots rendezvous_bench CSVs (join rows) as time-to-all-joined and p99 join latency vs agents,
# log-log, one line per CSV. Usage: bench/plot_rendezvous.sh OUT.png A.csv [B.csv ...]
# Needs gnuplot (Debian's gnuplot-nox, installed by scripts/install-deps).
set -euo pipefail
out=$1; shift
command -v gnuplot >/dev/null || { echo "plot_rendezvous: gnuplot not installed" >&2; exit 1; }
plots=()
for csv in "$@"; do
  name=$(basename "$csv" .csv)
  plots+=("'< grep ^join, $csv' using 2:6 with linespoints title '$name: all joined'")
  plots+=("'< grep ^join, $csv' using 2:8 with linespoints dashtype 2 title '$name: p99 join'")
done
joined=$(IFS=,; echo "${plots[*]}")
gnuplot <<GP
set terminal png size 900,600 noenhanced
set output '$out'
set datafile separator ','
set logscale xy
set xlabel 'agents (machines joining one server on loopback)'
set ylabel 'milliseconds'
set grid
set key top left
set title 'accel-launch rendezvous: time to all joined, p99 join latency'
plot $joined
GP
echo "wrote $out"
