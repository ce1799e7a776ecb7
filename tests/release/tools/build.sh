#!/usr/bin/env bash
# Builds the release tools from the pinned Go modules in this folder, one module each (their
# dependency graphs would raise each other's libraries), into build/release-tools/bin (never
# committed):
#   crane                   github.com/google/go-containerregistry  (crane/go.mod)
#   syft                    github.com/anchore/syft                 (syft/go.mod)
#   cosign                  github.com/sigstore/cosign/v2           (cosign/go.mod)
#   krew, validate-krew-manifest  sigs.k8s.io/krew                  (krew/go.mod)
#   ct                      github.com/helm/chart-testing/v3        (chart-testing/go.mod)
#   kubeconform             github.com/yannh/kubeconform            (kubeconform/go.mod)
# scripts/release.sh assembles the image index and pushes with crane, writes the SBOM with
# syft, signs with cosign; the krew manifest is checked and installed with krew's own tools;
# the chart is checked with the Helm ecosystem's ct lint and kubeconform before it is
# published (tests/deploy/test_chart_tools.py) and installed by ct install on the node.
# go.sum is committed and the build is -mod=readonly (tests/realkube/build.sh's use_pinned_go),
# stripped (-s -w), stamped with each module's version as its own release build does.
# A cold build downloads the modules and compiles for minutes (README.md here has the times),
# so each module's finished binaries are kept outside the clone, keyed by everything that
# decides them (the go version, the module's go.mod and go.sum, the packages and flags):
# $LEASEHOLD_RELEASE_TOOLS_CACHE (default /var/cache/leasehold/release-tools)/MODULE-KEY; a
# fresh clone on a machine that built the same pins before copies them in a second.
#
# Usage: build.sh [OUTDIR]     (default: <repo>/build/release-tools/bin)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
if [ $# -gt 1 ]; then
  echo "usage: build.sh [OUTDIR]" >&2
  exit 2
fi
out=${1:-$root/build/release-tools/bin}
mkdir -p "$out"
out=$(cd "$out" && pwd)

# shellcheck source-path=SCRIPTDIR/../../realkube source=build.sh
. "$root/tests/realkube/build.sh"
use_pinned_go release/tools/build.sh
cache_root=${LEASEHOLD_RELEASE_TOOLS_CACHE:-/var/cache/leasehold/release-tools}
go_version=$(go version)
go_flags=-trimpath
strip="-s -w"
total_start=$(date +%s)

# The version of MODULE_PATH that the go.mod in folder $1 requires, read from the file: a warm
# machine's copy from the cache needs neither the Go module cache nor the network.
mod_version() {
  local v
  v=$(awk -v m="$2" '$1 == m { print $2 } $1 == "require" && $2 == m { print $3 }' \
    "$here/$1/go.mod")
  [ -n "$v" ] || { echo "release/tools/build.sh: $1/go.mod requires no $2" >&2; exit 1; }
  echo "$v"
}

# tool DIR MODULE_PATH LDFLAGS NAME=PACKAGE...: the programs of the module in DIR, from the
# cache or built (then kept in the cache), into OUTDIR; one line says which and how long.
# LDFLAGS may name the version as @VERSION@ (the pin of MODULE_PATH).
tool() {
  local dir=$1 mod=$2 ldflags=$3 start key cache version names=() spec name
  shift 3
  start=$(date +%s)
  for spec in "$@"; do names+=("${spec%%=*}"); done
  key=$( (echo "$go_version $go_flags $strip $ldflags $*" &&
    cat "$here/$dir/go.mod" "$here/$dir/go.sum") | sha256sum | cut -c1-16)
  cache=$cache_root/$dir-$key
  version=$(mod_version "$dir" "$mod")
  local all_cached=1
  for name in "${names[@]}"; do [ -x "$cache/$name" ] || all_cached=0; done
  if [ "$all_cached" = 0 ]; then
    local tmp_cache
    mkdir -p "$cache_root"
    tmp_cache=$(mktemp -d "$cache.tmp.XXXXXX")
    for spec in "$@"; do
      # shellcheck disable=SC2086 # go_flags: several words
      (cd "$here/$dir" && go build $go_flags -ldflags "$strip ${ldflags//@VERSION@/$version}" \
        -o "$tmp_cache/${spec%%=*}" "${spec#*=}") || {
        rm -rf "$tmp_cache"
        echo "release/tools/build.sh: building ${spec%%=*} from $dir/go.mod failed" >&2
        exit 1
      }
    done
    # Written beside, then renamed: a build killed half-way leaves no entry that looks complete.
    chmod 755 "$tmp_cache"
    rm -rf "$cache" && mv "$tmp_cache" "$cache"
    from="built, kept in $cache"
  else
    from="from $cache"
  fi
  # A binary that differs is replaced by a rename (a running one keeps its old file).
  for name in "${names[@]}"; do
    cmp -s "$cache/$name" "$out/$name" && continue
    cp -p "$cache/$name" "$out/.$name.tmp" && mv -f "$out/.$name.tmp" "$out/$name"
  done
  echo "release/tools/build.sh: ${names[*]} ($mod $version) $from ($(($(date +%s) - start)) s)"
}

ggcr=github.com/google/go-containerregistry
tool crane $ggcr "-X $ggcr/cmd/crane/cmd.Version=@VERSION@" crane=$ggcr/cmd/crane
tool syft github.com/anchore/syft "-X main.version=@VERSION@" syft=github.com/anchore/syft/cmd/syft
tool krew sigs.k8s.io/krew "-X sigs.k8s.io/krew/internal/version.gitTag=@VERSION@" \
  krew=sigs.k8s.io/krew/cmd/krew validate-krew-manifest=sigs.k8s.io/krew/cmd/validate-krew-manifest
tool cosign github.com/sigstore/cosign/v2 \
  "-X sigs.k8s.io/release-utils/version.gitVersion=@VERSION@" \
  cosign=github.com/sigstore/cosign/v2/cmd/cosign
ct_cmd=github.com/helm/chart-testing/v3/ct/cmd
tool chart-testing github.com/helm/chart-testing/v3 "-X $ct_cmd.Version=@VERSION@" \
  ct=github.com/helm/chart-testing/v3/ct
tool kubeconform github.com/yannh/kubeconform "-X main.version=@VERSION@" \
  kubeconform=github.com/yannh/kubeconform/cmd/kubeconform
echo "release/tools/build.sh: all in $out ($(($(date +%s) - total_start)) s)"
