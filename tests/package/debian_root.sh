#!/usr/bin/env bash
# Sourced by the package tests: a clean Debian 12 root (debootstrap --variant=minbase from Debian's
# mirror) with nothing of this project's build in it.
#   debian_root DIR   unpacks the root into DIR (made once per machine by debootstrap and kept
#                     as a tarball under /var/cache/accel-launch; a fresh machine makes it anew),
#                     mounts /proc, /dev and /sys and the apt archive cache into it, and copies
#                     the host's resolv.conf and apt sources. debian_root_cleanup DIR undoes it.
# ACCEL_DEBIAN_MIRROR picks the mirror (default: the host's first deb.debian.org-style URI).
accel_debian_cache=${ACCEL_DEBIAN_CACHE:-/var/cache/accel-launch}

debian_root_tarball() {
  local tarball=$accel_debian_cache/bookworm-minbase.tar mirror tmp
  if [[ -s $tarball ]]; then echo "$tarball"; return; fi
  command -v debootstrap >/dev/null || { echo "debootstrap missing (scripts/install-deps)" >&2; return 1; }
  mirror=${ACCEL_DEBIAN_MIRROR:-$(sed -n 's/^URIs: *\(http[^ ]*\/debian\)$/\1/p' \
    /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)}
  mirror=${mirror:-http://deb.debian.org/debian}
  mkdir -p "$accel_debian_cache"
  tmp=$(mktemp -d "$accel_debian_cache/debootstrap.XXXXXX")
  echo "debian_root: debootstrap bookworm from $mirror (once per machine)" >&2
  if ! debootstrap --variant=minbase bookworm "$tmp/root" "$mirror" >"$tmp/log" 2>&1; then
    tail -n 20 "$tmp/log" >&2; rm -rf "$tmp"; return 1
  fi
  tar -C "$tmp/root" -cf "$tmp/root.tar" .
  mv "$tmp/root.tar" "$tarball"
  rm -rf "$tmp"
  echo "$tarball"
}

# debian_root_reap: a run that CTest killed at its timeout (SIGKILL: no EXIT trap) leaves its root
# mounted and its namespaces behind; the next run removes what belongs to dead processes.
debian_root_reap() {
  local f pid ns
  for f in "$accel_debian_cache"/roots/*; do
    [[ -e $f ]] || continue
    pid=${f##*/}
    kill -0 "$pid" 2>/dev/null && continue
    debian_root_cleanup "$(cat "$f")"
    rm -f "$f"
  done
  for ns in $(ip netns list 2>/dev/null | sed -n 's/^\(accel_pkg_\([0-9]*\)_[01]\).*/\1 \2/p' |
      awk '{ print $1 ":" $2 }'); do
    kill -0 "${ns#*:}" 2>/dev/null || ip netns del "${ns%:*}" 2>/dev/null || true
  done
}

debian_root() {
  local dir=$1 tarball
  tarball=$(debian_root_tarball) || return 1
  mkdir -p "$dir" "$accel_debian_cache/roots"
  echo "$dir" >"$accel_debian_cache/roots/$$"
  tar -C "$dir" -xf "$tarball"
  mkdir -p "$accel_debian_cache/archives/partial"
  mount -t proc proc "$dir/proc"
  mount --rbind /dev "$dir/dev" && mount --make-rslave "$dir/dev"
  mount -t sysfs sysfs "$dir/sys"
  mount --bind "$accel_debian_cache/archives" "$dir/var/cache/apt/archives"
  cp /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null || true
  # Keep downloaded packages for the next run (the archive cache is the host's).
  echo 'Binary::apt::APT::Keep-Downloaded-Packages "true";' >"$dir/etc/apt/apt.conf.d/10keep"
  rm -f "$dir/etc/apt/apt.conf.d/docker-clean"
}

debian_root_cleanup() {
  local dir=$1 m
  [[ -d $dir ]] || return 0
  # Innermost first.
  for m in $(awk -v d="$dir" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r); do
    umount -l "$m" 2>/dev/null || true
  done
  rm -rf --one-file-system "$dir"
  rm -f "$accel_debian_cache/roots/$$"
}
