#!/usr/bin/env bash
# Installs libaccel from a build tree into a temporary prefix, then builds and runs a user's
# project against it twice: with find_package(AccelLaunch) and with pkg-config.
# Usage: worker_install_check.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
work=$(mktemp -d -t accel_install_XXXXXX)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --component worker --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/include/accel/accelerator.h"
test ! -e "$work/prefix/include/worker"  # internal headers stay private

echo "== find_package(AccelLaunch)"
cmake -S "$src/tests/testing/worker_external" -B "$work/cmake-build" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/cmake-build" >/dev/null
"$work/cmake-build/external_train"

echo "== pkg-config accel"
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig:$work/prefix/lib64/pkgconfig"
pkg-config --modversion accel
# shellcheck disable=SC2046
c++ -std=c++17 -O1 "$src/tests/testing/worker_external/main.cpp" -o "$work/pc_train" \
  $(pkg-config --cflags --libs accel)
"$work/pc_train"
echo "install check passed"
