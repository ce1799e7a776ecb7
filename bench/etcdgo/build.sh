#!/usr/bin/env bash
# Builds the bench's etcd baseline (main.go here; etcd's client/v3 pinned in go.mod/go.sum, built
# -mod=readonly so what runs is exactly what is pinned) into build/bench/etcdgo (never
# committed). bench/run calls it before --only etcd; Go's build cache makes a rebuild of an
# unchanged tree take about a second.
#
# Usage: build.sh [OUT]     (default: <repo>/build/bench/etcdgo)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$root/build/bench/etcdgo}
mkdir -p "$(dirname "$out")"

# shellcheck source-path=SCRIPTDIR/../../tests/realkube source=build.sh
. "$root/tests/realkube/build.sh"
use_pinned_go bench/etcdgo/build.sh
cd "$here"
# Stripped like Kubernetes' release builds of its own components (hack/lib/golang.sh: -s -w).
go build -trimpath -ldflags="-s -w" -o "$out" .
[ -x "$out" ] || { echo "bench/etcdgo/build.sh: $out was not built" >&2; exit 1; }
