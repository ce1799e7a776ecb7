#!/usr/bin/env bash
# Builds the Debian base images the Dockerfile's FROM lines name, debian:bookworm and
# debian:bookworm-slim, from Debian's packages, for a Docker engine that cannot pull.
#
# Usage: scripts/make-base-images.sh [--force]
#   Skips an image that already exists; --force rebuilds both.
#
# How: one `debootstrap --variant=minbase bookworm` (the same variant the official images are
# made with, by debuerreotype) from the Debian mirror this machine's apt uses, then
# `docker import` of that tree as debian:bookworm and, after the official slim variant's
# trimming (no docs except copyright files, no man/info/groff/lintian pages, no locales, kept
# out of later installs too by /etc/dpkg/dpkg.cfg.d/docker), as debian:bookworm-slim.
# Both get the official images' apt settings for containers (no caches, gzipped lists, no
# translations) and an empty /var/lib/apt/lists, and the image config CMD ["bash"] and PATH.
#
# Environment:
#   DEBIAN_MIRROR   mirror URL (default: the first URI of a bookworm `Suites`/`deb` entry in
#                   /etc/apt/sources.list and /etc/apt/sources.list.d/*)
#   BASE_WORKDIR    where the root filesystem is assembled (default: a temporary directory
#                   under ${TMPDIR:-/var/tmp}, removed at the end)
# Needs root (debootstrap chroots and creates device nodes), debootstrap (scripts/install-deps.sh)
# and a running Docker engine.
set -euo pipefail

suite=bookworm
images=("debian:$suite" "debian:$suite-slim")
force=0

die() {
  echo "make-base-images: $*" >&2
  exit 1
}

for arg in "$@"; do
  case "$arg" in
  --force) force=1 ;;
  -h | --help)
    sed -n '2,22p' "$0"
    exit 0
    ;;
  *) die "unknown argument '$arg' (usage: $0 [--force])" ;;
  esac
done

command -v docker >/dev/null 2>&1 || die "docker not found"
docker info >/dev/null 2>&1 || die "the Docker engine does not answer (docker info failed)"

todo=()
for image in "${images[@]}"; do
  if [ "$force" = 0 ] && docker image inspect "$image" >/dev/null 2>&1; then
    echo "make-base-images: $image exists (--force rebuilds it)"
  else
    todo+=("$image")
  fi
done
[ "${#todo[@]}" -gt 0 ] || exit 0

[ "$(id -u)" -eq 0 ] || die "debootstrap needs root"
command -v debootstrap >/dev/null 2>&1 || die "debootstrap not found: run scripts/install-deps.sh"

# Debian entries of this machine's apt sources: "URI SUITE" pairs from one-line (.list) and
# deb822 (.sources) files, for the suites bookworm, bookworm-updates and bookworm-security.
apt_entries() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    awk -v s="$suite" '$1 == "deb" {
        i = 2; if ($2 ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
        if ($(i + 1) == s || $(i + 1) == s "-updates" || $(i + 1) == s "-security") print $i, $(i + 1)
      }' "$f"
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk -v s="$suite" '
      function flush(   n, m, i, j, u, x) {
        if (types ~ /(^| )deb( |$)/ && enabled != "no") {
          n = split(uris, u, " "); m = split(suites, x, " ")
          for (i = 1; i <= n; i++) for (j = 1; j <= m; j++)
            if (x[j] == s || x[j] == s "-updates" || x[j] == s "-security") print u[i], x[j]
        }
        types = ""; uris = ""; suites = ""; enabled = ""
      }
      /^[ \t]*$/ { flush(); next }
      /^#/ { next }
      tolower($1) == "types:" { $1 = ""; types = $0 }
      tolower($1) == "uris:" { $1 = ""; uris = $0 }
      tolower($1) == "suites:" { $1 = ""; suites = $0 }
      tolower($1) == "enabled:" { enabled = tolower($2) }
      END { flush() }' "$f"
  done
}

entries=$(apt_entries | sed 's#/*  *# #' | awk '!seen[$0]++')
mirror=${DEBIAN_MIRROR:-$(awk -v s="$suite" '$2 == s { print $1; exit }' <<<"$entries")}
[ -n "$mirror" ] || die "no '$suite' entry in /etc/apt/sources.list*: set DEBIAN_MIRROR"
security=$(awk -v s="$suite-security" '$2 == s { print $1; exit }' <<<"$entries")
[ -n "$security" ] || security=$mirror-security
echo "make-base-images: building ${todo[*]} from $mirror ($suite)"

start=$(date +%s)
work=${BASE_WORKDIR:-}
own_work=0
if [ -z "$work" ]; then
  work=$(mktemp -d "${TMPDIR:-/var/tmp}/leasehold-base.XXXXXX")
  own_work=1
fi
rootfs=$work/rootfs
cleanup() {
  # debootstrap may leave /proc or /sys mounted inside the tree when it fails.
  for m in proc sys dev/pts dev; do
    if mountpoint -q "$rootfs/$m" 2>/dev/null; then umount -l "$rootfs/$m" || true; fi
  done
  if [ "$own_work" = 1 ]; then rm -rf "$work"; else rm -rf "$rootfs"; fi
}
trap cleanup EXIT
rm -rf "$rootfs"
mkdir -p "$rootfs"

# The keyring verifies the mirror's Release signatures (debian-archive-keyring, in
# scripts/install-deps.sh): debootstrap must not fall back to an unverified download.
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -f "$keyring" ] || die "$keyring missing: apt-get install debian-archive-keyring"
if ! debootstrap --variant=minbase --keyring="$keyring" "$suite" "$rootfs" "$mirror" \
  >"$work/debootstrap.log" 2>&1; then
  tail -n 20 "$work/debootstrap.log" >&2
  die "debootstrap failed (log above)"
fi

# apt inside the image: the same mirror as this machine, the suites of the official image.
rm -f "$rootfs/etc/apt/sources.list"
cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: $suite $suite-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $security
Suites: $suite-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
# A snapshot mirror serves Release files past their Valid-Until; when this machine's apt is
# told to accept that, so is the image's (a real mirror needs no such setting).
# (The dump first: under pipefail `apt-config dump | grep -q` is false when grep stops at its
# match and apt-config dies of SIGPIPE.)
apt_settings=$(apt-config dump 2>/dev/null || true)
if grep -qx 'Acquire::Check-Valid-Until "false";' <<<"$apt_settings"; then
  echo 'Acquire::Check-Valid-Until "false";' >"$rootfs/etc/apt/apt.conf.d/99local-snapshot-mirror"
fi
# The official images' settings for apt in containers (debuerreotype's docker-* files).
conf=$rootfs/etc/apt/apt.conf.d
cat >"$conf/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
echo 'Acquire::GzipIndexes "true";' >"$conf/docker-gzip-indexes"
echo 'Acquire::Languages "none";' >"$conf/docker-no-languages"
echo 'Apt::AutoRemove::SuggestsImportant "false";' >"$conf/docker-autoremove-suggests"
echo 'force-unsafe-io' >"$rootfs/etc/dpkg/dpkg.cfg.d/docker-apt-speedup"
# Docker provides these at run time; services must not start during `apt-get install`.
printf '#!/bin/sh\nexit 101\n' >"$rootfs/usr/sbin/policy-rc.d"
chmod 0755 "$rootfs/usr/sbin/policy-rc.d"
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb \
  "$rootfs"/var/log/* "$rootfs/etc/resolv.conf" "$rootfs/etc/hostname" "$rootfs"/tmp/* \
  "$rootfs/debootstrap"
mkdir -p "$rootfs/var/lib/apt/lists/partial"
: >"$rootfs/etc/machine-id"

import() {
  local image=$1 t0
  t0=$(date +%s)
  tar --numeric-owner --xattrs -C "$rootfs" -c . |
    docker import \
      --change 'CMD ["bash"]' \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change "LABEL org.leasehold.base=\"debootstrap --variant=minbase $suite $mirror\"" \
      --message "scripts/make-base-images.sh: debootstrap $suite from $mirror" \
      - "$image" >/dev/null
  echo "make-base-images: $image $(docker image inspect -f '{{.Size}}' "$image") bytes (import $(($(date +%s) - t0))s)"
}

wants() {
  local i
  for i in "${todo[@]}"; do [ "$i" = "$1" ] && return 0; done
  return 1
}

if wants "debian:$suite"; then import "debian:$suite"; fi

if wants "debian:$suite-slim"; then
  # The official slim variant: what containers do not need goes, and stays out of later
  # installs (dpkg reads the same patterns).
  cat >"$rootfs/etc/dpkg/dpkg.cfg.d/docker" <<'EOF'
# This is the "slim" variant of the Debian base image: files that containers normally do not
# need are excluded, and this configuration keeps them that way.
path-exclude /usr/share/doc/*
# copyright files stay, for legal reasons
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/man/*
EOF
  find "$rootfs/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
  find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
  for d in groff info linda lintian locale man; do
    if [ -d "$rootfs/usr/share/$d" ]; then find "$rootfs/usr/share/$d" -mindepth 1 -delete; fi
  done
  import "debian:$suite-slim"
fi
echo "make-base-images: done in $(($(date +%s) - start))s"
