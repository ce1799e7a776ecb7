#!/usr/bin/env bash
# Builds one Go program from a module of this repository whose go.mod/go.sum pin everything
# (-mod=readonly: what runs is exactly what is pinned), with the Go of tests/realkube/build.sh's
# use_pinned_go, stripped like Kubernetes' release builds of its own components
# (hack/lib/golang.sh: -s -w). The bench's baselines and the tests' etcdctl use it; Go's build
# cache makes a rebuild of an unchanged tree take about a second.
#
# Usage: go-build.sh MODULE_DIR OUT [PACKAGE]     (PACKAGE default: the module's own, ".")
set -euo pipefail
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: go-build.sh MODULE_DIR OUT [PACKAGE]" >&2
  exit 2
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
module=$(cd "$1" && pwd)
out=$2
package=${3:-.}
mkdir -p "$(dirname "$out")"
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")

# shellcheck source-path=SCRIPTDIR/../tests/realkube source=build.sh
. "$root/tests/realkube/build.sh"
use_pinned_go "go-build.sh ${module#"$root"/}"
start=$(date +%s)
cd "$module"
# Written beside, then renamed: a build killed half-way leaves no program that looks complete.
go build -trimpath -ldflags="-s -w" -o "$out.tmp" "$package"
mv "$out.tmp" "$out"
echo "go-build.sh: ${module#"$root"/} -> $out ($(($(date +%s) - start)) s)"
