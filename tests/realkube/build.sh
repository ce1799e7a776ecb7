#!/usr/bin/env bash
# Builds the real control plane from the pinned Go modules in this folder:
#   kube-apiserver  k8s.io/kubernetes  (go.mod here; staging modules at the matching v0.x)
#   helm            helm.sh/helm/v3    (go.mod here)
#   etcd            go.etcd.io/etcd/server/v3 3.6 (etcd/go.mod: its own module)
# into build/realkube/bin (never committed), and copies the monitoring.coreos.com CRDs of
#   github.com/prometheus-operator/prometheus-operator (promcrds/go.mod: nothing built)
# into build/realkube/crds/monitoring.coreos.com (beside OUTDIR). With --node, also what a
# node needs (start.sh up DIR --node):
#   kubelet, kube-controller-manager, kube-scheduler, kube-proxy   k8s.io/kubernetes (go.mod)
#   containerd, containerd-shim-runc-v2, ctr   github.com/containerd/containerd/v2
#                                              (containerd/go.mod: its own module)
# and the pause image's program (pause.c, static, by the Debian packages' gcc). runc and the CNI
# plugins come from Debian's packages (scripts/install-deps.sh). go.sum is committed and the
# build is -mod=readonly, so what is built is exactly what is pinned. The first build on an
# empty Go cache downloads the modules and compiles for several minutes (see README). Go caches
# the compiled packages but links every binary again (kube-apiserver's link alone takes 20-60 s
# on 2 cores), so the finished binaries and CRDs are also kept outside the clone, keyed by
# everything that decides them (the go version, every go.mod and go.sum here, this script):
# $LEASEHOLD_REALKUBE_CACHE (default ~/.cache/leasehold/realkube/KEY); a fresh clone on a
# machine that built the same pins before copies them in a second.
#
# Usage: build.sh [--node] [OUTDIR]     (default: <repo>/build/realkube/bin)

# Go from /usr/local/go with what every build of pinned modules here needs: -mod=readonly
# (exactly what go.sum pins) and no cgo (static binaries). bench/clientgo/build.sh sources this
# file for it alone. $1: the script's name, for the error.
use_pinned_go() {
  export PATH="/usr/local/go/bin:$PATH"
  if ! command -v go >/dev/null 2>&1; then
    echo "$1: no Go toolchain (expected /usr/local/go/bin/go)" >&2
    exit 1
  fi
  export GOFLAGS=-mod=readonly
  export CGO_ENABLED=0
}
# Sourced: only use_pinned_go.
[ "${BASH_SOURCE[0]}" = "$0" ] || return 0

set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
node=0
if [ "${1:-}" = --node ]; then
  node=1
  shift
fi
out=${1:-$root/build/realkube/bin}
mkdir -p "$out"
out=$(cd "$out" && pwd)

use_pinned_go realkube/build.sh
start=$(date +%s)
crds=$(dirname "$out")/crds/monitoring.coreos.com
key=$( (go version && cd "$here" && cat go.mod go.sum etcd/go.mod etcd/go.sum promcrds/go.mod \
  promcrds/go.sum containerd/go.mod containerd/go.sum pause.c build.sh) | sha256sum | cut -c1-16)
cache=${LEASEHOLD_REALKUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/leasehold/realkube}/$key
plane_bins=(kube-apiserver etcd helm)
node_bins=(kubelet kube-controller-manager kube-scheduler kube-proxy containerd
  containerd-shim-runc-v2 ctr pause)

# cached NAME...: every NAME is in the cache.
cached() {
  local b
  for b in "$@"; do [ -x "$cache/bin/$b" ] || return 1; done
}
# keep NAME...: the built NAMEs into the cache for the next clone: written beside, then renamed,
# so that a build killed half-way never leaves a cache entry that looks complete.
keep() {
  mkdir -p "$(dirname "$cache")"
  local tmp_cache
  tmp_cache=$(mktemp -d "$cache.tmp.XXXXXX")
  if [ -d "$cache" ]; then cp -pr "$cache"/. "$tmp_cache/"; fi
  mkdir -p "$tmp_cache/bin" "$tmp_cache/crds"
  local b
  for b in "$@"; do cp -p "$out/$b" "$tmp_cache/bin/"; done
  cp -p "$crds"/*.yaml "$tmp_cache/crds/" 2>/dev/null || true
  rm -rf "$cache" && mv "$tmp_cache" "$cache"
}
# from_cache NAME...: each NAME and the CRDs from the cache into OUTDIR, leaving alone what is
# already there and the same: the gate builds the node's programs beside tests that run
# kube-apiserver from OUTDIR and apply the CRDs, so nothing they use is rewritten; a binary that
# differs is replaced by a rename (a running one keeps its old file; cp would fail on it with
# "Text file busy").
from_cache() {
  local b
  for b in "$@"; do
    cmp -s "$cache/bin/$b" "$out/$b" && continue
    cp -p "$cache/bin/$b" "$out/.$b.tmp" && mv -f "$out/.$b.tmp" "$out/$b"
  done
  if ! diff -rq "$cache/crds" "$crds" >/dev/null 2>&1; then
    rm -rf "$crds" && mkdir -p "$crds" && cp -p "$cache"/crds/*.yaml "$crds/"
  fi
}
built() {
  local b
  for b in "$@"; do
    [ -x "$out/$b" ] || { echo "realkube/build.sh: $out/$b was not built" >&2; exit 1; }
  done
}

if cached "${plane_bins[@]}" && [ -f "$cache/crds/monitoring.coreos.com_prometheusrules.yaml" ] &&
  { [ "$node" = 0 ] || cached "${node_bins[@]}"; }; then
  wanted=("${plane_bins[@]}")
  [ "$node" = 0 ] || wanted+=("${node_bins[@]}")
  from_cache "${wanted[@]}"
  echo "realkube/build.sh: ${wanted[*]} in $out, CRDs in $crds, from $cache" \
    "($(( $(date +%s) - start )) s)"
  exit 0
fi
# Version stamps, as the projects' own release builds set them (kubernetes' hack/lib/version.sh,
# helm's Makefile): without them kube-apiserver reports v0.0.0-master, which kubectl and helm's
# kubeVersion check cannot parse. The versions come from go.mod, the one place they are pinned.
mod_version() { (cd "$1" && go list -m -f '{{.Version}}' "$2"); }
kube=$(mod_version "$here" k8s.io/kubernetes)
helm=$(mod_version "$here" helm.sh/helm/v3)
kube_minor=$(echo "$kube" | cut -d. -f2)
kv=k8s.io/component-base/version
cv=k8s.io/client-go/pkg/version
kube_ldflags="-X $kv.gitVersion=$kube -X $kv.gitMajor=1 -X $kv.gitMinor=$kube_minor"
kube_ldflags="$kube_ldflags -X $kv.gitTreeState=clean -X $cv.gitVersion=$kube -X $cv.gitMajor=1"
kube_ldflags="$kube_ldflags -X $cv.gitMinor=$kube_minor -X $cv.gitTreeState=clean"
hv=helm.sh/helm/v3
helm_ldflags="-X $hv/internal/version.version=$helm -X $hv/internal/version.gitTreeState=clean"
helm_ldflags="$helm_ldflags -X $hv/pkg/lint/rules.k8sVersionMajor=1 -X $hv/pkg/lint/rules.k8sVersionMinor=$kube_minor"
helm_ldflags="$helm_ldflags -X $hv/pkg/chartutil.k8sVersionMajor=1 -X $hv/pkg/chartutil.k8sVersionMinor=$kube_minor"
# build_plane: kube-apiserver, helm, etcd and the CRDs.
build_plane() {
  (cd "$here" && go build -trimpath -ldflags "$kube_ldflags" -o "$out/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver)
  (cd "$here" && go build -trimpath -ldflags "$helm_ldflags" -o "$out/helm" helm.sh/helm/v3/cmd/helm)
  (cd "$here/etcd" && go build -trimpath -o "$out/etcd" go.etcd.io/etcd/server/v3)
  # The CRDs the chart's PodMonitor, ServiceMonitor and PrometheusRule need on a real server
  # (tests/deploy/test_monitoring_real.py applies them), exactly as the pinned release ships them.
  local crd_mod=github.com/prometheus-operator/prometheus-operator crd_src
  crd_src=$(cd "$here/promcrds" && go mod download "$crd_mod" && go list -m -f '{{.Dir}}' "$crd_mod")
  rm -rf "$crds" && mkdir -p "$crds"
  install -m 0644 "$crd_src"/example/prometheus-operator-crd/*.yaml "$crds/"
  [ -f "$crds/monitoring.coreos.com_prometheusrules.yaml" ] || {
    echo "realkube/build.sh: no PrometheusRule CRD in $crd_src" >&2; exit 1; }
  built "${plane_bins[@]}"
}
# build_node: the node's programs. containerd with the tags its own release uses for a build
# without the btrfs, devmapper and zfs snapshotters' C libraries (the node uses overlayfs or
# native), stamped with its version as its Makefile does.
build_node() {
  local b
  for b in kubelet kube-controller-manager kube-scheduler kube-proxy; do
    (cd "$here" && go build -trimpath -ldflags "$kube_ldflags" -o "$out/$b" "k8s.io/kubernetes/cmd/$b")
  done
  local ctrd ctrd_ldflags
  ctrd=$(mod_version "$here/containerd" github.com/containerd/containerd/v2)
  ctrd_ldflags="-X github.com/containerd/containerd/v2/version.Version=$ctrd"
  for b in containerd containerd-shim-runc-v2 ctr; do
    (cd "$here/containerd" && go build -trimpath -tags "no_btrfs no_devmapper no_zfs" \
      -ldflags "$ctrd_ldflags" -o "$out/$b" "github.com/containerd/containerd/v2/cmd/$b")
  done
  # The sandbox's pause program: static, so that the image is FROM scratch (no registry).
  cc -static -O2 -o "$out/pause" "$here/pause.c"
  built "${node_bins[@]}"
}

if cached "${plane_bins[@]}" && [ -f "$cache/crds/monitoring.coreos.com_prometheusrules.yaml" ]; then
  from_cache "${plane_bins[@]}"
else
  build_plane
  keep "${plane_bins[@]}"
fi
wanted=("${plane_bins[@]}")
if [ "$node" = 1 ]; then
  build_node
  keep "${plane_bins[@]}" "${node_bins[@]}"
  wanted+=("${node_bins[@]}")
fi
echo "realkube/build.sh: ${wanted[*]} in $out, CRDs in $crds ($(( $(date +%s) - start )) s)"
