#!/usr/bin/env bash
# Builds the krew archive of kubectl-leasehold and its manifest (README "kubectl leasehold").
#
#   scripts/krew-package.sh BIN OUTDIR      OUTDIR/kubectl-leasehold_linux_amd64.tar.gz (the
#                                           binary, and LICENSE when the repository has one) and
#                                           OUTDIR/leasehold.yaml: sidecar/kubectl/krew/leasehold.yaml
#                                           with the archive's sha256 and BIN's version
#   scripts/krew-package.sh --check MANIFEST ARCHIVE
#                                           exits 1 unless MANIFEST's linux/amd64 sha256 is
#                                           ARCHIVE's and its bin is a file in ARCHIVE
#
# The archive is reproducible (sorted names, mtime 0, owner 0, gzip -n): the same binary gives
# the same sha256.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
manifest_src=$root/sidecar/kubectl/krew/leasehold.yaml
archive_name=kubectl-leasehold_linux_amd64.tar.gz

die() { echo "krew-package: $*" >&2; exit 1; }

field() {  # field FILE KEY: the first `KEY: value` in FILE, quotes removed
  sed -n "s/^ *$2: *\"\{0,1\}\([^\"]*\)\"\{0,1\} *$/\1/p" "$1" | head -n1
}

if [ "${1:-}" = "--check" ]; then
  [ $# -eq 3 ] || die "usage: --check MANIFEST ARCHIVE"
  manifest=$2 archive=$3
  [ -f "$manifest" ] || die "no manifest $manifest"
  [ -f "$archive" ] || die "no archive $archive"
  want=$(field "$manifest" sha256)
  have=$(sha256sum "$archive" | cut -d' ' -f1)
  [ "$want" = "$have" ] || die "$manifest: sha256 $want, but $archive has $have"
  bin=$(field "$manifest" bin)
  # The listing first, then grep: `tar | grep -q` fails under pipefail once grep stops reading
  # at its match and tar, with names still to print, dies of SIGPIPE (it did as soon as the
  # archive held LICENSE after the binary).
  listing=$(tar -tzf "$archive") || die "$archive: not a readable tar.gz"
  grep -qxF "$bin" <<<"$listing" || die "$manifest: bin $bin is not in $archive"
  echo "krew-package: $manifest matches $archive (sha256 $have, bin $bin)"
  exit 0
fi

[ $# -eq 2 ] || die "usage: BIN OUTDIR | --check MANIFEST ARCHIVE"
bin=$1 out=$2
[ -x "$bin" ] || die "$bin is not an executable"
version=$("$bin" version | sed -n 's/^kubectl-leasehold \(.*\)$/\1/p')
[ -n "$version" ] || die "$bin version printed no version"
mkdir -p "$out"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
install -m 0755 "$bin" "$stage/kubectl-leasehold"
files=(kubectl-leasehold)
if [ -f "$root/LICENSE" ]; then
  install -m 0644 "$root/LICENSE" "$stage/LICENSE"
  files+=(LICENSE)
fi
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$stage" -cf - "${files[@]}" |
  gzip -9n > "$out/$archive_name"
sha=$(sha256sum "$out/$archive_name" | cut -d' ' -f1)
sed -e "s/^\( *sha256: *\).*$/\1\"$sha\"/" -e "s/^\( *version: *\).*$/\1v$version/" \
  -e "s#/download/v[^/]*/#/download/v$version/#" "$manifest_src" > "$out/leasehold.yaml"
"$0" --check "$out/leasehold.yaml" "$out/$archive_name" >/dev/null
echo "krew-package: $out/$archive_name sha256 $sha, manifest $out/leasehold.yaml"
