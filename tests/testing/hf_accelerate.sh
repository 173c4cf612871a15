#!/usr/bin/env bash
# HF accelerate for the tests that run a real accelerate script under accel-launch
# (tests/testing/hf_accelerate_train.py). accelerate is not a Debian 12 package and this project's
# machines cannot reach PyPI, so it is never a dependency: it is installed OUTSIDE the repository,
# from a source a person provides, and the tests that need it skip (with this reason) without it.
# Its own dependencies are Debian's: python3-torch, python3-numpy, python3-packaging,
# python3-psutil, python3-yaml (scripts/install-deps installs them for /usr/bin/python3).
#
# Install (run it; nothing is built, accelerate is pure Python):
#   tests/testing/hf_accelerate.sh install SOURCE [TAG] [DEST]
#     SOURCE  a git directory of accelerate (bare or not: TAG is archived from it, default
#             v0.20.3), or an unpacked source tree (a directory with src/accelerate/ or
#             accelerate/, e.g. an sdist: TAG is ignored, the tree's version is checked);
#     DEST    where it goes (default ${XDG_CACHE_HOME:-~/.cache}/accel-launch/accelerate-<version>);
#             replaced if present.
#   It checks that /usr/bin/python3 imports that version from DEST and prints
#   "ACCEL_HF_ACCELERATE=<dir>": the directory to put on PYTHONPATH.
#   e.g. tests/testing/hf_accelerate.sh install /path/to/accelerate.git v0.20.3
#
# Find (sourced by tests): hf_accelerate_dir VERSION prints the PYTHONPATH directory holding
# accelerate VERSION, from $ACCEL_HF_ACCELERATE (that directory, or one with src/ below it), else
# ${XDG_CACHE_HOME:-~/.cache}/accel-launch/accelerate-VERSION; returns 1 and prints why on stderr
# when there is none.
set -euo pipefail

hf_accelerate_default_dir() { echo "${XDG_CACHE_HOME:-${HOME:-/nonexistent}/.cache}/accel-launch/accelerate-$1"; }

# Prints the version in DIR/accelerate/__init__.py, or nothing.
hf_accelerate_version_in() {
  sed -n 's/^__version__ = "\([^"]*\)".*/\1/p' "$1/accelerate/__init__.py" 2>/dev/null | head -n 1
}

hf_accelerate_dir() {
  local want=$1 base dir
  base=${ACCEL_HF_ACCELERATE:-$(hf_accelerate_default_dir "$want")}
  for dir in "$base" "$base/src"; do
    if [[ $(hf_accelerate_version_in "$dir") == "$want" ]]; then
      echo "$dir"
      return 0
    fi
  done
  echo "accelerate $want not found at ${base} (ACCEL_HF_ACCELERATE$( [[ -n ${ACCEL_HF_ACCELERATE:-} ]] || echo ' unset, the default')): it is not in Debian 12 and PyPI is unreachable here; install it from a source with tests/testing/hf_accelerate.sh install" >&2
  return 1
}

hf_accelerate_install() {
  local source=$1 tag=${2:-v0.20.3} dest=${3:-} stage version tree
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' RETURN
  if git --git-dir="$source" rev-parse --verify -q "$tag^{commit}" >/dev/null 2>&1 ||
     git --git-dir="$source/.git" rev-parse --verify -q "$tag^{commit}" >/dev/null 2>&1; then
    local gitdir=$source
    [[ -d $source/.git ]] && gitdir=$source/.git
    git --git-dir="$gitdir" archive --format=tar "$tag" src/accelerate setup.py LICENSE |
      tar -x -C "$stage"
    tree=$stage/src
  elif [[ -d $source/src/accelerate || -d $source/accelerate ]]; then
    if [[ -d $source/src/accelerate ]]; then cp -r "$source/src/accelerate" "$stage/"
    else cp -r "$source/accelerate" "$stage/"; fi
    if [[ -f $source/LICENSE ]]; then cp "$source/LICENSE" "$stage/"; fi
    tree=$stage
    tag=  # a tree is what it is: its version is checked below
  else
    echo "install: $source is neither a git directory with tag $tag nor a source tree with src/accelerate/ or accelerate/" >&2
    return 1
  fi
  version=$(hf_accelerate_version_in "$tree")
  [[ -n $version ]] || { echo "install: no __version__ in $tree/accelerate/__init__.py" >&2; return 1; }
  dest=${dest:-$(hf_accelerate_default_dir "$version")}
  rm -rf "$dest.new"
  mkdir -p "$dest.new"
  cp -r "$tree/accelerate" "$dest.new/"
  [[ -f $stage/LICENSE ]] && cp "$stage/LICENSE" "$dest.new/"
  rm -rf "$dest"
  mv "$dest.new" "$dest"
  local got
  got=$(cd / && PYTHONPATH=$dest /usr/bin/python3 -c \
    'import accelerate, os; print(accelerate.__version__, os.path.dirname(os.path.dirname(accelerate.__file__)))') ||
    { echo "install: /usr/bin/python3 cannot import accelerate from $dest (its Debian dependencies: python3-torch python3-numpy python3-packaging python3-psutil python3-yaml)" >&2; return 1; }
  [[ $got == "$version $dest" ]] || { echo "install: imported '$got', want '$version $dest'" >&2; return 1; }
  echo "installed accelerate $version (from $source${tag:+, tag $tag}) in $dest"
  echo "ACCEL_HF_ACCELERATE=$dest"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  case ${1:-} in
    install) shift; [[ $# -ge 1 ]] || { echo "usage: $0 install SOURCE [TAG] [DEST]" >&2; exit 2; }
             hf_accelerate_install "$@" ;;
    find) hf_accelerate_dir "${2:-0.20.3}" ;;
    *) echo "usage: $0 install SOURCE [TAG] [DEST] | find [VERSION]" >&2; exit 2 ;;
  esac
fi
