#!/usr/bin/env bash
# The network security scenarios at full size, for a person (CI runs `flood` reduced): a sniffer
# and a replay, a port squatter, and floods of 5,000 connections, 100 streams of 16 MiB and 1,000
# slow handshakes during training. Needs root (network namespaces), tcpdump and openssl.
# Usage: tests/faults/security_full.sh [build dir] [trials]
set -euo pipefail
build=${1:-build}
trials=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
exec /usr/bin/python3 "$here/run_faults.py" --launcher "$build/launcher/accel-launch" \
  --train "$build/examples/train.bin" --intruder "$build/tests/testing/rdzv_intruder" \
  --trials "$trials" --scenarios capture-replay,squatter,flood-full
