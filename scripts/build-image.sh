#!/usr/bin/env bash
# Builds leasehold's container image from a binary built already: the Dockerfile's rootfs and
# runtime stages (FROM scratch), verbatim but for their `COPY --from=build /out/X`, which copy X
# from a build context holding only the stripped binary and status.d. The one recipe of the
# runtime image for deploy.image (tests/deploy/test_image.py), the node tests and releases; the
# full `docker build .` runs the same stages after its own build stage.
#
# Usage: scripts/build-image.sh --binary PATH --tag NAME [--arch amd64|arm64] [--version V]
#                               [--revision R] [--created T]
#        scripts/build-image.sh --write-status DIR [--arch amd64|arm64]
#
#   --binary PATH   the leasehold binary (stripped into the context; the original is untouched)
#   --tag NAME      the image's name, e.g. leasehold:0.5.0
#   --arch A        the binary's architecture, amd64 (default) or arm64: the image's glibc is
#                   libc6:A, and the binary must be an A executable
#   --version V     org.opencontainers.image.version (default: project.conf's version=)
#   --revision R    org.opencontainers.image.revision (default: git rev-parse HEAD, or unknown)
#   --created T     org.opencontainers.image.created (default: now, UTC)
#   --write-status DIR  only write the dpkg status entries of the -dev packages linked
#                   statically into the binary (`dpkg-query -s`, this machine's, so run it where
#                   the binary was linked) to DIR/<package>, then exit; the Dockerfile's build
#                   stage uses it
#
# Environment: STRIP, the strip program (default: strip for amd64, aarch64-linux-gnu-strip for
# arm64). Needs docker, the base image debian:bookworm-slim (scripts/make-base-images.sh) and
# the Debian mirror from the build (the rootfs stage runs apt-get download libc6:A).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)

# Linked statically into the binary (CMakeLists.txt, LEASEHOLD_STATIC_DEPS; the header-only
# nlohmann-json and CLI11 compiled in): no file of theirs is in the image, so only these entries
# tell an SBOM (syft) and scanners their versions.
linked_packages=(libssl-dev libyaml-cpp-dev libboost1.74-dev libstdc++-12-dev nlohmann-json3-dev
  libcli11-dev)

die() {
  echo "build-image: $*" >&2
  exit 2
}

usage() {
  sed -n '8,10p' "$0" | sed 's/^# //' >&2
  exit 2
}

binary='' tag='' arch=amd64 version='' revision='' created='' status_dir=''
while [ $# -gt 0 ]; do
  case "$1" in
  --binary | --tag | --arch | --version | --revision | --created | --write-status)
    [ $# -ge 2 ] || die "$1 needs a value"
    case "$1" in
    --binary) binary=$2 ;;
    --tag) tag=$2 ;;
    --arch) arch=$2 ;;
    --version) version=$2 ;;
    --revision) revision=$2 ;;
    --created) created=$2 ;;
    --write-status) status_dir=$2 ;;
    esac
    shift 2
    ;;
  -h | --help)
    sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  *) die "unknown argument '$1' (see --help)" ;;
  esac
done

case "$arch" in
amd64) triplet=x86_64-linux-gnu machine='X86-64' ;;
arm64) triplet=aarch64-linux-gnu machine='AArch64' ;;
*) die "--arch $arch: amd64 or arm64" ;;
esac

# DIR/<package>: `dpkg-query -s` of each linked package, for ARCH (Architecture: all ones, the
# header-only libraries, as they are). A package that cannot be installed beside the machine's
# own architecture's (libyaml-cpp-dev:arm64, not Multi-Arch: same) is unpacked by
# `scripts/install-deps.sh --arm64` into /opt/leasehold/arm64-*/, with its control paragraph
# in status.d/ there.
unpacked_status=/opt/leasehold
write_status() {
  local dir=$1 pkg unpacked
  mkdir -p "$dir"
  for pkg in "${linked_packages[@]}"; do
    unpacked=$(find "$unpacked_status" -path "$unpacked_status/$arch-*/status.d/$pkg" \
      -print -quit 2>/dev/null || true)
    if ! dpkg-query -s "$pkg:$arch" >"$dir/$pkg" 2>/dev/null &&
      ! { dpkg-query -s "$pkg" >"$dir/$pkg" 2>/dev/null &&
        grep -qx 'Architecture: all' "$dir/$pkg"; } &&
      ! { [ -n "$unpacked" ] && cp "$unpacked" "$dir/$pkg"; }; then
      rm -f "$dir/$pkg"
      echo "build-image: $pkg:$arch is not installed here (dpkg-query -s), but the binary" \
        "links it statically: run this where the binary was built" >&2
      exit 1
    fi
  done
}

if [ -n "$status_dir" ]; then
  [ -z "$binary$tag" ] || die "--write-status excludes --binary and --tag"
  write_status "$status_dir"
  exit 0
fi

[ -n "$binary" ] || usage
[ -n "$tag" ] || die "--tag is required"
[ -f "$binary" ] || die "--binary $binary: no such file"
if [ -z "$version" ]; then
  version=$(sed -n 's/^version=//p' "$root/project.conf")
  [ -n "$version" ] || die "no version= in $root/project.conf"
fi
[ -n "$revision" ] || revision=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)
[ -n "$created" ] || created=$(date -u +%FT%TZ)
strip=${STRIP:-$([ "$arch" = amd64 ] && echo strip || echo "$triplet-strip")}
command -v "$strip" >/dev/null || die "$strip not found (set STRIP to a strip for $arch)"
command -v docker >/dev/null || die "docker not found"

found=$(LC_ALL=C readelf -h "$binary" 2>/dev/null | sed -n 's/^ *Machine: *//p') ||
  die "--binary $binary: not an ELF file"
case "$found" in
*"$machine"*) ;;
*) die "--binary $binary is a ${found:-non-ELF} executable, not $arch (--arch)" ;;
esac

context=$(mktemp -d "${TMPDIR:-/tmp}/leasehold-image-XXXXXX")
trap 'rm -rf "$context"' EXIT

# The rootfs and runtime stages: from `FROM ... AS rootfs` to the end, build-stage files from
# the context. Any other reference to the build stage would not build here: refused.
awk '/^FROM[ \t].*[ \t]AS[ \t]+rootfs[ \t]*$/ { on = 1 } on' "$root/Dockerfile" |
  sed 's|^COPY --from=build /out/|COPY |' >"$context/Dockerfile"
grep -q '^FROM .* AS rootfs' "$context/Dockerfile" || die "no rootfs stage in $root/Dockerfile"
if grep -n -E '^[^#]*--from=build' "$context/Dockerfile" >&2; then
  die "the runtime stages take more than /out/ from the build stage (the lines above)"
fi
"$strip" -o "$context/leasehold" "$binary"
chmod 0755 "$context/leasehold"
write_status "$context/status.d"

echo "build-image: $tag ($arch, version $version) from $binary" \
  "($(stat -c %s "$context/leasehold") bytes stripped)"
docker build -t "$tag" --build-arg "TARGETARCH=$arch" --build-arg "VERSION=$version" \
  --build-arg "REVISION=$revision" --build-arg "CREATED=$created" "$context"
echo "build-image: $tag: $(docker image inspect -f '{{.Size}}' "$tag") bytes"
