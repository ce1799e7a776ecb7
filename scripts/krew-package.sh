#!/usr/bin/env bash
# Builds the krew archives of kubectl-leasehold and their manifest (README "kubectl leasehold").
#
#   scripts/krew-package.sh [--arch amd64|arm64] [--version V] [--download-url URL] BIN OUTDIR
#       OUTDIR/kubectl-leasehold_linux_ARCH.tar.gz (BIN as kubectl-leasehold, and LICENSE when
#       the repository has one; ARCH default amd64), then OUTDIR/leasehold.yaml from the template
#       sidecar/kubectl/krew/leasehold.yaml with a platform entry for every
#       kubectl-leasehold_linux_*.tar.gz in OUTDIR (its sha256, URI URL/<archive>).
#       V: default what `BIN version` prints (given for a binary this machine cannot run; when
#       BIN runs, it must print V). URL: default <project.conf home>/releases/download/vV; with
#       home empty, --download-url is required.
#   scripts/krew-package.sh --check MANIFEST ARCHIVE
#       exits 1 unless MANIFEST has a platform whose uri ends in ARCHIVE's name, with ARCHIVE's
#       sha256 and a bin that is a file in ARCHIVE
#
# The archive is reproducible (sorted names, mtime 0, owner 0, gzip -n): the same binary gives
# the same sha256.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
template=$root/sidecar/kubectl/krew/leasehold.yaml

die() { echo "krew-package: $*" >&2; exit 1; }

platform_field() {  # platform_field MANIFEST ARCHIVE_NAME KEY: KEY of the entry for that archive
  awk -v name="$2" -v key="$3" '
    function flush() { if (uri ~ ("/" name "$")) { print val[key]; found = 1; exit } }
    /^ *- selector:/ { flush(); uri = ""; delete val }
    match($0, /^ *(uri|sha256|bin): */) {
      k = $0; sub(/^ */, "", k); sub(/:.*/, "", k)
      v = substr($0, RLENGTH + 1); gsub(/"/, "", v); sub(/ *$/, "", v)
      val[k] = v; if (k == "uri") uri = v
    }
    END { if (!found) flush() }' "$1"
}

if [ "${1:-}" = "--check" ]; then
  [ $# -eq 3 ] || die "usage: --check MANIFEST ARCHIVE"
  manifest=$2 archive=$3
  [ -f "$manifest" ] || die "no manifest $manifest"
  [ -f "$archive" ] || die "no archive $archive"
  name=$(basename "$archive")
  uri=$(platform_field "$manifest" "$name" uri)
  [ -n "$uri" ] || die "$manifest: no platform whose uri ends in /$name"
  want=$(platform_field "$manifest" "$name" sha256)
  have=$(sha256sum "$archive" | cut -d' ' -f1)
  [ "$want" = "$have" ] || die "$manifest: sha256 $want, but $archive has $have"
  bin=$(platform_field "$manifest" "$name" bin)
  # The listing first, then grep: `tar | grep -q` fails under pipefail once grep stops reading
  # at its match and tar, with names still to print, dies of SIGPIPE (it did as soon as the
  # archive held LICENSE after the binary).
  listing=$(tar -tzf "$archive") || die "$archive: not a readable tar.gz"
  grep -qxF "$bin" <<<"$listing" || die "$manifest: bin $bin is not in $archive"
  echo "krew-package: $manifest matches $archive (sha256 $have, bin $bin)"
  exit 0
fi

arch=amd64 version="" url=""
while [ $# -gt 0 ]; do
  case $1 in
    --arch | --version | --download-url)
      if [ $# -lt 2 ] || [ -z "$2" ]; then die "$1 needs a value"; fi
      case $1 in --arch) arch=$2 ;; --version) version=$2 ;; --download-url) url=$2 ;; esac
      shift 2 ;;
    -*) die "unknown option $1" ;;
    *) break ;;
  esac
done
[ $# -eq 2 ] ||
  die "usage: [--arch A] [--version V] [--download-url URL] BIN OUTDIR | --check MANIFEST ARCHIVE"
bin=$1 out=$2
case $arch in amd64 | arm64) ;; *) die "--arch $arch: amd64 or arm64" ;; esac
[ -x "$bin" ] || die "$bin is not an executable"
if ran=$("$bin" version 2>/dev/null); then
  printed=$(sed -n 's/^kubectl-leasehold \(.*\)$/\1/p' <<<"$ran")
  [ -n "$printed" ] || die "$bin version printed no version"
  [ -z "$version" ] || [ "$version" = "$printed" ] || die "$bin is $printed, not --version $version"
  version=$printed
fi
[ -n "$version" ] || die "$bin does not run here: give --version"
if [ -z "$url" ]; then
  home=$(sed -n 's/^home=//p' "$root/project.conf")
  [ -n "$home" ] || die "no download URL: set home= in project.conf or pass --download-url URL"
  url=${home%/}/releases/download/v$version
fi
url=${url%/}
home=$(sed -n 's/^home=//p' "$root/project.conf")

mkdir -p "$out"
archive_name=kubectl-leasehold_linux_$arch.tar.gz
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
install -m 0755 "$bin" "$stage/kubectl-leasehold"
files=(kubectl-leasehold)
if [ -f "$root/LICENSE" ]; then
  install -m 0644 "$root/LICENSE" "$stage/LICENSE"
  files+=(LICENSE)
fi
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$stage" -cf - "${files[@]}" |
  gzip -9n >"$out/$archive_name"

# The manifest: the template's head, then its platform entry once per archive in OUTDIR.
# shellcheck disable=SC2001 # sed: the escapes of a sed replacement, not a bash one
esc() { sed 's/[&#\\]/\\&/g' <<<"$1"; }
head_part=$(sed '/^ *- selector:/,$d' "$template" | sed '/^# /d; /^#$/d')
entry=$(sed -n '/^ *- selector:/,$p' "$template")
{
  sed -e "s#\${VERSION}#$(esc "$version")#g" -e "s#\${HOMEPAGE}#$(esc "$home")#g" \
    <<<"$head_part" | if [ -n "$home" ]; then cat; else grep -v '^ *homepage: *$'; fi
  for archive in "$out"/kubectl-leasehold_linux_*.tar.gz; do
    a=$(basename "$archive" .tar.gz)
    a=${a#kubectl-leasehold_linux_}
    sha=$(sha256sum "$archive" | cut -d' ' -f1)
    sed -e "s#\${ARCH}#$a#g" -e "s#\${URL}#$(esc "$url")#g" -e "s#\${SHA256}#$sha#g" <<<"$entry"
  done
} >"$out/leasehold.yaml"
# shellcheck disable=SC2016 # a literal ${
if grep -n '\${' "$out/leasehold.yaml" >&2; then die "$out/leasehold.yaml: placeholders left"; fi
"$0" --check "$out/leasehold.yaml" "$out/$archive_name" >/dev/null
echo "krew-package: $out/$archive_name sha256 $(sha256sum "$out/$archive_name" | cut -d' ' -f1)," \
  "manifest $out/leasehold.yaml"
