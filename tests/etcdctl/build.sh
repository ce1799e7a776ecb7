#!/usr/bin/env bash
# Builds etcdctl from the pinned go.etcd.io/etcd/etcdctl/v3 (go.mod/go.sum here, -mod=readonly)
# into build/etcdctl/etcdctl (never committed). scripts/test.sh runs it beside the real control
# plane's build; Go's build cache makes a rebuild of an unchanged tree take about a second.
#
# Usage: build.sh [OUT]     (default: <repo>/build/etcdctl/etcdctl)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$root/build/etcdctl/etcdctl}
mkdir -p "$(dirname "$out")"

# shellcheck source-path=SCRIPTDIR/../realkube source=build.sh
. "$root/tests/realkube/build.sh"
use_pinned_go etcdctl/build.sh
start=$(date +%s)
cd "$here"
go build -trimpath -o "$out.tmp" go.etcd.io/etcd/etcdctl/v3
mv "$out.tmp" "$out"
echo "etcdctl/build.sh: $("$out" version | head -1) in $out ($(($(date +%s) - start)) s)"
