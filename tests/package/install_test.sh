#!/usr/bin/env bash
# The Debian packages, as a cluster's machine gets them: scripts/package builds them from this
# build directory, lintian finds no error in them, and a clean Debian 12 root (debootstrap, no
# build tree, no build dependency) installs them with `apt-get install ./*.deb`. There:
#   - apt pulled in no compiler, no CMake and no -dev package (runtime packages only);
#   - `accel-launch env`, `man accel-launch` and the bash completion work;
#   - `accel-launch --num_processes 2 --use_cpu /usr/lib/accel-launch/examples/train.bin` trains;
#   - two machines (network namespaces, each running the root's accel-launch) train one job;
#   - after `apt-get install libaccel-dev cmake g++ ...`, the example project in
#     /usr/share/doc/libaccel-dev/examples builds with find_package(AccelLaunch) and with
#     pkg-config, and runs.
# Needs root and Debian's mirror (exit 77 = skipped, with the reason). The root's tarball and
# the downloaded packages are kept under /var/cache/accel-launch, so a rerun downloads nothing.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
source "$(dirname "$0")/../testing/skip.sh"
[[ $(id -u) -eq 0 ]] || skip "needs root (chroot, mount, ip netns; uid $(id -u))"
for tool in debootstrap lintian ip; do
  command -v "$tool" >/dev/null || skip "$tool missing (scripts/install-deps)"
done
here=$(cd "$(dirname "$0")" && pwd)
source "$here/debian_root.sh"
source "$here/../testing/two_machines.sh"
debian_root_reap  # what an earlier run killed at its timeout left behind
two_machines pkg 215  # sets ns0 ns1 addr0 addr1 work; its EXIT trap calls before_cleanup
root=$work/root
before_cleanup() { debian_root_cleanup "$root"; }
step() { echo "== $*"; }
# deb NAME...: the root's paths of the copied packages NAME_*.deb
deb() { local p; for p; do echo /tmp/debs/$(basename "$(ls "$root/tmp/debs/${p}"_*.deb)"); done; }
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
  LANG=C.UTF-8 "$@"; }

step "scripts/package"
# Its own build directory beside this one (same depth: ccache reuses this build's objects).
ACCEL_PACKAGE_BUILD_DIR=$build-package "$src/scripts/package" "$work/debs"
ls -l "$work/debs"

step "lintian"
# Errors fail the test; warnings are printed (docs/install.md "Installing on a cluster").
lintian --fail-on error --tag-display-limit 0 "$work/debs"/*.deb

step "a clean Debian 12 root"
debian_root "$root" || skip "no Debian 12 root (debootstrap failed: mirror unreachable?)"
mkdir -p "$root/tmp/debs"
cp "$work/debs"/*.deb "$root/tmp/debs/"
export DEBIAN_FRONTEND=noninteractive
in_root apt-get update -qq
for p in g++ cmake libtorch-dev pkg-config; do
  ! in_root dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
    { echo "the clean root already has $p"; exit 1; }
done

step "apt-get install accel-launch, libaccel0, accel-launch-examples (and man-db to read the page)"
in_root apt-get install -y -qq --no-install-recommends $(deb accel-launch libaccel0 \
  accel-launch-examples) man-db >"$work/apt.log" 2>&1 ||
  { tail -n 30 "$work/apt.log"; exit 1; }
for p in g++ cmake libtorch-dev libgrpc++-dev pkg-config; do
  ! in_root dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
    { echo "installing the runtime packages pulled in the build dependency $p"; exit 1; }
done
[[ -x $root/usr/bin/accel-launch && -x $root/usr/lib/accel-launch/examples/train.bin ]]

step "accel-launch env"
in_root accel-launch env | tee "$work/env.txt"
grep -q "LibTorch" "$work/env.txt" || { echo "env: no LibTorch line"; exit 1; }

step "man accel-launch"
in_root man -P cat accel-launch >"$work/man.txt" 2>&1 || { cat "$work/man.txt"; exit 1; }
for heading in NAME SYNOPSIS OPTIONS "EXIT STATUS"; do
  grep -q "^$heading" "$work/man.txt" || { echo "man page lacks $heading"; head "$work/man.txt"; exit 1; }
done
grep -q -- "--num_processes" "$work/man.txt" || { echo "man page lacks --num_processes"; exit 1; }

step "bash completion"
completed=$(in_root bash -c 'source /usr/share/bash-completion/completions/accel-launch
  COMP_WORDS=(accel-launch --num_pro); COMP_CWORD=1; _accel_launch; echo "${COMPREPLY[*]}"
  COMP_WORDS=(accel-launch env --js); COMP_CWORD=2; _accel_launch; echo "${COMPREPLY[*]}"')
echo "$completed"
[[ $completed == $'--num_processes\n--json' ]] || { echo "completion: unexpected"; exit 1; }

step "accel-launch --num_processes 2 --use_cpu /usr/lib/accel-launch/examples/train.bin"
train=(/usr/lib/accel-launch/examples/train.bin --samples 512 --hidden 32 --epochs 1 --batch-size 16)
in_root timeout -s KILL 300 accel-launch --num_processes 2 --use_cpu "${train[@]}" \
  >"$work/one.log" 2>&1 || { cat "$work/one.log"; exit 1; }
tail -n 3 "$work/one.log"
grep -q '"world": 2' "$work/one.log" || { echo "not a world of 2"; cat "$work/one.log"; exit 1; }

step "two machines (network namespaces), each running the installed accel-launch"
echo "secret-$$" >"$root/tmp/token"
chmod 600 "$root/tmp/token"
common=(--use_cpu --num_machines 2 --num_processes 2 --main_process_ip "$addr0"
        --main_process_port 29566 --rdzv_timeout 120 --run_id pkg-netns
        --rdzv_token_file /tmp/token)
for m in 0 1; do
  ns=ns$m
  timeout -s KILL 300 ip netns exec "${!ns}" chroot "$root" /usr/bin/env -i \
    PATH=/usr/bin:/bin HOME=/root accel-launch "${common[@]}" --machine_rank "$m" \
    "${train[@]}" >"$work/m$m.log" 2>&1 &
  eval "pid$m=$!"
done
rc0=0 rc1=0
wait "$pid0" || rc0=$?
wait "$pid1" || rc1=$?
echo "machine 0 exit $rc0, machine 1 exit $rc1"
if ((rc0 || rc1)); then for m in 0 1; do echo "--- machine $m"; cat "$work/m$m.log"; done; exit 1; fi
grep -q '"world": 2' "$work/m0.log" || { echo "machine 0: not a world of 2"; cat "$work/m0.log"; exit 1; }
grep -q '"backend": "gloo"' "$work/m0.log" || { echo "machine 0: not Gloo"; cat "$work/m0.log"; exit 1; }

step "apt-get install libaccel-dev cmake g++ make pkg-config; the example project builds and runs"
in_root apt-get install -y -qq --no-install-recommends $(deb libaccel-dev) cmake g++ make \
  pkg-config >"$work/apt-dev.log" 2>&1 || { tail -n 30 "$work/apt-dev.log"; exit 1; }
in_root sh -c 'cp -r /usr/share/doc/libaccel-dev/examples/external /tmp/external &&
  cmake -S /tmp/external -B /tmp/external/build -DCMAKE_BUILD_TYPE=Release >/dev/null &&
  cmake --build /tmp/external/build -j2 >/dev/null && /tmp/external/build/external_train'
in_root sh -c 'pkg-config --modversion accel &&
  c++ -std=c++17 -O1 /tmp/external/main.cpp -o /tmp/pc_train $(pkg-config --cflags --libs accel) &&
  /tmp/pc_train'

[[ -z $(ip netns pids "$ns0") && -z $(ip netns pids "$ns1") ]] || { echo "processes left behind"; exit 1; }
echo "PASS"
