#!/usr/bin/env bash
# Images for the node of `start.sh up DIR --node`: no registry can be reached, so every image a
# pod runs is built here with Docker and imported into the node's containerd.
#
#   node_images.sh DIR IMAGE...
#
# Each IMAGE is imported from Docker (`docker save | ctr -n k8s.io images import`) under the name
# Docker has for it, which is the name a pod spec gives (busybox:1.36 is
# docker.io/library/busybox:1.36 to both). The public images the chart names by default have
# stand-ins, built when Docker lacks them, from Debian's packages on this machine:
#   busybox:*                 Debian's busybox-static and its applets' links, FROM scratch (the
#                             chart's example app: sh, wget, sleep, cat)
#   curlimages/curl:*         debian:bookworm-slim (scripts/make-base-images.sh) with this
#                             machine's curl and the libraries it links (the chart's `helm test`
#                             pod: sh, curl, seq, sleep)
# Any other IMAGE must exist in Docker already (deploy tests build leasehold:test).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
dir=${1:?usage: node_images.sh DIR IMAGE...}
shift
bindir=${REALKUBE_BIN_DIR:-$root/build/realkube/bin}
sock=$dir/node/containerd.sock
[ -S "$sock" ] || { echo "realkube/node_images.sh: no node in $dir (start.sh up DIR --node)" >&2; exit 1; }

die() {
  echo "realkube/node_images.sh: $*" >&2
  exit 1
}

# build IMAGE CONTEXT: docker build, its output shown only when it fails.
build() {
  docker build -q -t "$1" "$2" >"$2/build.log" 2>&1 || { cat "$2/build.log" >&2; die "docker build of $1 failed"; }
}

busybox_stand_in() {
  local image=$1 ctx=$2 applet
  [ -x /bin/busybox ] || die "/bin/busybox not found: run scripts/install-deps.sh (busybox-static)"
  mkdir -p "$ctx/rootfs/bin" "$ctx/rootfs/tmp"
  cp /bin/busybox "$ctx/rootfs/bin/busybox"
  for applet in $(/bin/busybox --list); do
    [ "$applet" = busybox ] || ln -s busybox "$ctx/rootfs/bin/$applet"
  done
  printf 'FROM scratch\nCOPY rootfs /\nENV PATH=/bin\nCMD ["/bin/sh"]\n' >"$ctx/Dockerfile"
  build "$image" "$ctx"
}

curl_stand_in() {
  local image=$1 ctx=$2 lib
  bash "$root/scripts/make-base-images.sh" >/dev/null
  mkdir -p "$ctx/rootfs/usr/bin"
  cp /usr/bin/curl "$ctx/rootfs/usr/bin/curl"
  # The libraries curl links that the slim image may lack, at their paths (the same Debian
  # release as the base image). Under /usr: bookworm's /lib is a symlink to usr/lib, and a
  # layer with a /lib folder would hide it (and the dynamic loader with it).
  local dest
  for lib in $(ldd /usr/bin/curl | awk '$3 ~ /^\// {print $3}'); do
    case "$lib" in /usr/*) dest=$lib ;; *) dest=/usr$lib ;; esac
    mkdir -p "$ctx/rootfs$(dirname "$dest")"
    cp -L "$lib" "$ctx/rootfs$dest"
  done
  printf 'FROM debian:bookworm-slim\nCOPY rootfs /\nUSER 65532:65532\nENTRYPOINT ["/usr/bin/curl"]\n' >"$ctx/Dockerfile"
  build "$image" "$ctx"
}

for image in "$@"; do
  if ! docker image inspect "$image" >/dev/null 2>&1; then
    ctx=$(mktemp -d /tmp/leasehold-node-image.XXXXXX)
    case "$image" in
    busybox:* | docker.io/library/busybox:*) busybox_stand_in "$image" "$ctx" ;;
    curlimages/curl:* | docker.io/curlimages/curl:*) curl_stand_in "$image" "$ctx" ;;
    *) rm -rf "$ctx"; die "$image is not in Docker (build it first) and has no stand-in here" ;;
    esac
    rm -rf "$ctx"
  fi
  docker save "$image" | "$bindir/ctr" --address "$sock" -n k8s.io images import \
    --snapshotter overlayfs - >/dev/null 2>"$dir/node/import.log" ||
    { cat "$dir/node/import.log" >&2; die "importing $image into the node failed"; }
done
