#!/usr/bin/env bash
# Times the README's command (1) step by step: scripts/install-deps, a from-scratch build (a fresh
# build directory, ccache off) and the training run, on this machine; prints a markdown table.
# Run it as root on a fresh Debian 12 machine for docs/results.md's numbers ("How long command (1)
# takes"). Nothing else should run: the build and the training use every core.
#
#   bench/command1_time.sh            # the real thing: a fresh build in a new $TMPDIR directory
#   bench/command1_time.sh --quick    # a check that the script works: reuses build/ (no-op
#                                     # build) and trains for a few steps
#   bench/command1_time.sh --fresh-root
#                                     # a fresh machine on any machine: a clean Debian 12 root
#                                     # (the package test's debootstrap root, without its apt
#                                     # cache), a git clone of this commit in it, and this script
#                                     # run there: every package is downloaded and installed
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
case "${1:-}" in
  --quick) quick=1 ;;
  --fresh-root)
    # shellcheck source=../tests/package/debian_root.sh
    source tests/package/debian_root.sh
    root=$(mktemp -d -t accel-command1-root.XXXXXX)
    trap 'debian_root_cleanup "$root"' EXIT
    debian_root "$root"
    umount "$root/var/cache/apt/archives"  # nothing downloaded earlier: a fresh machine's apt
    git clone -q "$PWD" "$root/root/accel-launch"
    chroot "$root" /bin/bash -c 'cd /root/accel-launch && bench/command1_time.sh'
    exit
    ;;
  "") ;;
  *) echo "usage: $0 [--quick | --fresh-root]" >&2; exit 2 ;;
esac

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

t0=$(now)
scripts/install-deps
t1=$(now)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
cpu_log=$(mktemp)
if ((quick)); then
  build_dir=build
  /usr/bin/time -f '%U %S' -o "$cpu_log" scripts/build
else
  # Outside the checkout, so the build directory's depth matches nothing in ccache either way.
  build_dir=${ACCEL_COMMAND1_BUILD_DIR:-$(mktemp -d -t accel-command1-build.XXXXXX)}
  rm -rf "$build_dir"
  CCACHE_DISABLE=1 ACCEL_BUILD_DIR="$build_dir" /usr/bin/time -f '%U %S' -o "$cpu_log" scripts/build
fi
t2=$(now)
# Build steps ninja ran (each line of .ninja_log after the header, the last run of each output)
# and the CPU-seconds of the whole build (compilers included).
steps=$(awk 'NR > 1 { last[$4] = 1 } END { print length(last) }' "$build_dir/.ninja_log")
build_cpu=$(awk '{ printf "%.0f", $1 + $2 }' "$cpu_log")
rm -f "$cpu_log"
train=(--samples 60000 --hidden 512 --epochs 20)
((quick)) && train=(--samples 600 --hidden 32 --epochs 1)
"$build_dir/launcher/accel-launch" --config_file configs/default_config.yaml \
  "$build_dir/examples/train.bin" "${train[@]}" | tail -n 1
t3=$(now)

echo
echo "command (1) on $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg)$( ((quick)) && echo ', --quick: NOT the README numbers')"
echo
echo "| step | seconds |"
echo "|---|---|"
echo "| scripts/install-deps | $(elapsed "$t0" "$t1") |"
echo "| scripts/build ($( ((quick)) && echo 'build/, incremental' || echo 'from scratch, no ccache'); $steps steps, $build_cpu CPU-s, load before: $load_before) | $(elapsed "$t1" "$t2") |"
echo "| training (${train[*]}) | $(elapsed "$t2" "$t3") |"
echo "| total | $(elapsed "$t0" "$t3") |"
