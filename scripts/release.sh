#!/usr/bin/env bash
# Builds and publishes one leasehold release (README "Releasing"):
#
#   scripts/release.sh VERSION --registry HOST[:PORT][/PATH] [--out DIR] [--dry-run]
#       [--download-url URL] [--ca-file FILE] [--sign-key cosign.key] [--arch amd64,arm64]
#       [--build-dir DIR] [--tools DIR]
#
# publishes to the registry
#   REGISTRY/leasehold:VERSION-amd64, :VERSION-arm64   one image per architecture (FROM scratch,
#                                                      scripts/build-image.sh), platform set
#   REGISTRY/leasehold:VERSION                         the OCI image index holding them
#   REGISTRY/leasehold:sha256-<digest>.sig / .att / .sbom   cosign's signature of the index,
#                                                      the SBOMs (when cosign is there)
#   oci://REGISTRY/charts/leasehold:<chart version>    the chart, its image pinned by the index's
#                                                      digest
# and writes to OUT (default build/dist/VERSION)
#   kubectl-leasehold_linux_<arch>.tar.gz, leasehold.yaml (the krew manifest), sha256sums.txt,
#   leasehold-<chart version>.tgz, leasehold-VERSION-linux-<arch>.spdx.json (syft's SBOM of each
#   architecture's image), release.txt (the summary printed at the end).
#
# Refused before anything is built: a dirty tree, VERSION other than project.conf's, no
# `## [VERSION]` section in CHANGELOG.md, a chart whose appVersion is not VERSION, a krew
# download URL that cannot be known (project.conf's home empty and no --download-url), the
# image tag or the chart version already in the registry (or a registry that cannot be asked),
# a build dir of other sources (--build-dir), a chart that fails `helm lint --strict` as it
# would be pushed, a --sign-key that does not open. The SBOMs and the krew files are made
# before the index is pushed; once it is, the version counts as published, so a release that
# fails after that (pushing the signature or the chart) needs a new version.
#
# --arch: default amd64, plus arm64 when the cross toolchain (aarch64-linux-gnu-g++) is
#   installed and CMakePresets.json has `release-arm64`.
# --dry-run: every check above, then the refs it would push; builds and pushes nothing.
# --ca-file: the registry's CA (helm --ca-file; for crane, syft and cosign added to the CAs of
#   SSL_CERT_FILE or the system's).
# --sign-key: cosign signs the index and attests each SBOM with it, with COSIGN_PASSWORD from
#   the environment and no transparency log (--tlog-upload=false); verify with
#   `cosign verify --key cosign.pub --insecure-ignore-tlog REF`. Without it the SBOMs are
#   attached unsigned (cosign attach sbom).
# --tools: crane, syft, cosign (default build/release-tools/bin, made by
#   tests/release/tools/build.sh; without cosign the release is unsigned and carries no
#   SBOM in the registry). helm: $LEASEHOLD_HELM, else build/realkube/bin/helm, else PATH's.
# --build-dir DIR: the directory holding the CMake build dirs `release` and `release-arm64`
#   (default build/ here). When they belong to another checkout (tests/deploy/test_release.py
#   reuses the work tree's build), that checkout's files (tracked and untracked, not ignored)
#   must be this commit's tree, and the build is brought up to date there: its binaries then
#   come from exactly these sources.
# Writes only to OUT, build/release-stage/ and the build dirs (plus Docker's local images).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
started=$(date +%s)
caller_dir=$PWD

die() { echo "release: $*" >&2; exit 1; }
say() { echo "release: $*"; }
usage() {  # the comment above, to stdout
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
  exit 0
}

version="" registry="" out="" dry_run=0 download_url="" ca_file="" sign_key="" arches=""
build_dir=$root/build tools=$root/build/release-tools/bin
while [ $# -gt 0 ]; do
  case $1 in
    --registry | --out | --download-url | --ca-file | --sign-key | --arch | --build-dir | --tools)
      if [ $# -lt 2 ] || [ -z "$2" ]; then die "$1 needs a value"; fi
      case $1 in
        --registry) registry=$2 ;; --out) out=$2 ;; --download-url) download_url=$2 ;;
        --ca-file) ca_file=$2 ;; --sign-key) sign_key=$2 ;; --arch) arches=$2 ;;
        --build-dir) build_dir=$2 ;; --tools) tools=$2 ;;
      esac
      shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    -h | --help) usage ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) [ -z "$version" ] || die "one VERSION only (got $version and $1)"; version=$1; shift ;;
  esac
done
[ -n "$version" ] || die "no VERSION (scripts/release.sh VERSION --registry HOST[:PORT][/PATH])"
[ -n "$registry" ] || die "--registry HOST[:PORT][/PATH] is required"
[[ $registry =~ ^[A-Za-z0-9.-]+(:[0-9]+)?(/[a-z0-9._/-]+)?$ ]] ||
  die "--registry $registry: not HOST[:PORT][/PATH] (no scheme, lower-case path)"
registry=${registry%/}
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] ||
  die "VERSION $version is not SemVer X.Y.Z[-pre] (a tag: no '+' or 'v')"
out=${out:-$root/build/dist/$version}
mkdir -p "$out"  # the summary names it absolutely
out=$(cd "$out" && pwd)
build_dir=$(cd "$build_dir" 2>/dev/null && pwd) || die "--build-dir: no directory $build_dir"
if [ -n "$ca_file" ]; then
  [ -f "$ca_file" ] || die "--ca-file $ca_file: no such file"
  ca_file=$(cd "$(dirname "$ca_file")" && pwd)/$(basename "$ca_file")
  # Go's crypto/x509 reads SSL_CERT_FILE: the CAs trusted so far plus this one.
  mkdir -p "$root/build/release-stage"
  cat "${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}" "$ca_file" \
    >"$root/build/release-stage/ca-bundle.crt" 2>/dev/null || cat "$ca_file" \
    >"$root/build/release-stage/ca-bundle.crt"
  export SSL_CERT_FILE=$root/build/release-stage/ca-bundle.crt
fi
if [ -n "$sign_key" ]; then
  [ -f "$sign_key" ] || die "--sign-key $sign_key: no such file"
  sign_key=$(cd "$(dirname "$sign_key")" && pwd)/$(basename "$sign_key")
fi

setting() {  # setting KEY: project.conf's value
  sed -n "s/^$1=//p" "$root/project.conf" | head -n1
}

# ---- Checks, cheapest first; nothing is built before all pass.
cd "$root"
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || die "$root is not a git work tree"
dirty=$(git status --porcelain)
[ -z "$dirty" ] || die "the tree is dirty; commit or stash first:
$(head -n 10 <<<"$dirty")"
commit=$(git rev-parse HEAD)
# The image's creation label: the commit's time, so that it says which sources, not when built.
created=$(TZ=UTC git show -s --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ HEAD)
conf_version=$(setting version)
[ "$version" = "$conf_version" ] ||
  die "VERSION $version is not project.conf's version $conf_version (bump project.conf first)"
grep -qF "## [$version]" <(grep '^## \[' CHANGELOG.md 2>/dev/null) ||
  die "CHANGELOG.md has no '## [$version]' section: add the release's changes first"
chart_field() {  # chart_field KEY: Chart.yaml's top-level KEY, quotes removed
  sed -n "s/^$1: *\"\{0,1\}\([^\"]*\)\"\{0,1\} *$/\1/p" charts/leasehold/Chart.yaml
}
app_version=$(chart_field appVersion)
[ "$app_version" = "$version" ] ||
  die "charts/leasehold/Chart.yaml appVersion is '$app_version', not $version" \
    "(set it, and bump the chart's version)"
chart_version=$(chart_field version)
[ -n "$chart_version" ] || die "charts/leasehold/Chart.yaml has no version"
home=$(setting home)
if [ -z "$download_url" ]; then
  [ -n "$home" ] || die "no download URL for the krew manifest: set home= in project.conf" \
    "(then <home>/releases/download/v$version) or pass --download-url URL"
  download_url=${home%/}/releases/download/v$version
fi
[[ $download_url =~ ^https:// ]] || die "--download-url $download_url: krew needs an https:// URL"
download_url=${download_url%/}

if [ -z "$arches" ]; then
  arches=amd64
  if command -v aarch64-linux-gnu-g++ >/dev/null &&
    grep -q '"name": *"release-arm64"' CMakePresets.json; then
    arches=amd64,arm64
  fi
  say "architectures: $arches (arm64 needs aarch64-linux-gnu-g++ and the release-arm64" \
    "preset; --arch chooses)"
fi
IFS=, read -r -a arch_list <<<"$arches"
for a in "${arch_list[@]}"; do
  case $a in amd64 | arm64) ;; *) die "--arch: $a is not amd64 or arm64" ;; esac
done
[[ ,$arches, == *,amd64,* ]] ||
  die "--arch $arches: amd64 is always released (its binary is the one checked to run here)"

tools=$(cd "$caller_dir" && cd "$tools" 2>/dev/null && pwd) ||
  die "--tools: no directory $tools (tests/release/tools/build.sh makes build/release-tools/bin)"
for t in crane syft; do
  [ -x "$tools/$t" ] || die "$tools/$t missing: run tests/release/tools/build.sh (or --tools DIR)"
done
crane=$tools/crane syft=$tools/syft cosign=""
if [ -x "$tools/cosign" ]; then cosign=$tools/cosign; fi
[ -z "$sign_key" ] || [ -n "$cosign" ] || die "--sign-key given but $tools/cosign is missing"
helm=${LEASEHOLD_HELM:-}
if [ -z "$helm" ] && [ -x "$root/build/realkube/bin/helm" ]; then
  helm=$root/build/realkube/bin/helm
fi
if [ -z "$helm" ]; then
  helm=$(command -v helm) || die "no helm: set LEASEHOLD_HELM or run tests/realkube/build.sh"
fi

# Whether REF exists in the registry: 0 yes, 1 no; anything else (unreachable, refused TLS or
# credentials) stops the release, which cannot then know that it publishes nothing twice.
image_ref=$registry/leasehold
chart_repo=$registry/charts/leasehold
exists() {  # exists manifest REF | exists tag REPO TAG
  local err
  if [ "$1" = manifest ]; then
    err=$("$crane" manifest "$2" 2>&1 >/dev/null) && return 0
  else
    err=$("$crane" ls "$2" 2>&1) && { grep -qxF "$3" <<<"$err"; return; }
  fi
  if grep -qE 'MANIFEST_UNKNOWN|NAME_UNKNOWN|NOT_FOUND|status code 404|404 Not Found' \
    <<<"$err"; then
    return 1
  fi
  die "cannot ask the registry about $2: $err"
}
if exists manifest "$image_ref:$version"; then
  die "$image_ref:$version is already published; a version is released once (bump project.conf)"
fi
if exists tag "$chart_repo" "${chart_version//+/_}"; then
  die "the chart $chart_repo:$chart_version is already published; bump Chart.yaml's version"
fi
say "checks passed: $commit, version $version, chart $chart_version, not in $registry yet"


# ---- The stage, build/release-stage/VERSION: the steps' logs, the chart's copy, the binaries.
stage=$root/build/release-stage/$version
rm -rf "$stage"
mkdir -p "$stage"
# The tools' caches (syft's, cosign's TUF root) in the stage, not in $HOME.
export XDG_CACHE_HOME=$stage/cache SYFT_CACHE_DIR=$stage/cache/syft TUF_ROOT=$stage/sigstore
tree_of() {  # tree_of DIR: the git tree of DIR's files (tracked and untracked, not ignored)
  if [ -z "$(git -C "$1" status --porcelain)" ]; then
    git -C "$1" rev-parse 'HEAD^{tree}'
  else  # a scratch index, so the checkout's own index is left alone
    local idx=$stage/index.$RANDOM
    cp "$(cd "$1" && realpath "$(git rev-parse --git-path index)")" "$idx"
    GIT_INDEX_FILE=$idx git -C "$1" add -A && GIT_INDEX_FILE=$idx git -C "$1" write-tree
    rm -f "$idx"
  fi
}
logged() {  # logged NAME CMD...: CMD's output into the stage's NAME.log, its tail on failure
  local name=$1
  shift
  "$@" >"$stage/$name.log" 2>&1 || die "$(basename "$1") failed ($stage/$name.log):
$(tail -n 20 "$stage/$name.log")"
}
# stage_chart DIGEST: $stage/chart/leasehold, a copy of the chart whose values.yaml names this
# release's image pinned by DIGEST, with project.conf's home when set; helm lint --strict.
stage_chart() {
  chart=$stage/chart/leasehold
  rm -rf "$stage/chart"
  mkdir -p "$stage/chart"
  cp -a "$root/charts/leasehold" "$chart"
  awk -v repo="$image_ref" -v tag="$version" -v digest="$1" '
    /^[^ #]/ { in_image = ($0 ~ /^image:/) }
    in_image && /^  repository:/ { print "  repository: " repo; next }
    in_image && /^  tag:/ { print "  tag: \"" tag "\""; next }
    in_image && /^  digest:/ { print "  digest: \"" digest "\""; next }
    { print }' "$root/charts/leasehold/values.yaml" >"$chart/values.yaml"
  for want in "  repository: $image_ref" "  tag: \"$version\"" "  digest: \"$1\""; do
    grep -qxF "$want" "$chart/values.yaml" || die "charts/leasehold/values.yaml: no image" \
      "line to set to '$want' (image.repository, tag, digest)"
  done
  # Artifact Hub's list of images: this release's, pinned.
  awk -v image="$image_ref:$version@$1" '
    /^  artifacthub.io\/images:/ { in_images = 1 }
    in_images && /^      image: / { print "      image: " image; in_images = 0; next }
    { print }' "$root/charts/leasehold/Chart.yaml" >"$chart/Chart.yaml"
  grep -qxF "      image: $image_ref:$version@$1" "$chart/Chart.yaml" ||
    die "charts/leasehold/Chart.yaml: no artifacthub.io/images entry to set to the release's image"
  if [ -n "$home" ]; then
    printf 'home: %s\nsources:\n  - %s\n' "$home" "$home" >>"$chart/Chart.yaml"
    # Artifact Hub's links, as the first annotation.
    awk -v home="$home" '{ print } /^annotations:/ { print "  artifacthub.io/links: |\n    - name: source\n      url: " home }' \
      "$chart/Chart.yaml" >"$chart/Chart.yaml.new" && mv "$chart/Chart.yaml.new" "$chart/Chart.yaml"
  fi
  logged lint "$helm" lint --strict "$chart"
}
# Before any build: the chart as it will be pushed (a stand-in digest) passes helm lint, and
# the signing key opens with COSIGN_PASSWORD; a release that fails after its index is pushed
# leaves the version published.
helm_home=$stage/helm
export HELM_CACHE_HOME=$helm_home/cache HELM_DATA_HOME=$helm_home/data
export HELM_CONFIG_HOME=$helm_home/config
user_registry_config=${XDG_CONFIG_HOME:-$HOME/.config}/helm/registry/config.json
if [ -f "$user_registry_config" ]; then export HELM_REGISTRY_CONFIG=$user_registry_config; fi
stage_chart "sha256:$(printf '0%.0s' {1..64})"
if [ -n "$sign_key" ]; then
  logged key "$cosign" public-key --key "$sign_key"
fi
if [ "$dry_run" = 1 ]; then
  say "dry run: would push"
  for a in "${arch_list[@]}"; do echo "  $image_ref:$version-$a    (linux/$a image)"; done
  echo "  $image_ref:$version    (OCI image index of ${arches})"
  if [ -n "$cosign" ]; then
    for a in "${arch_list[@]}"; do
      kind=sbom
      [ -z "$sign_key" ] || kind=att
      echo "  $image_ref:sha256-<$a digest>.$kind    (SBOM)"
    done
    [ -z "$sign_key" ] || echo "  $image_ref:sha256-<index digest>.sig    (signature)"
  fi
  echo "  oci://$registry/charts/leasehold:$chart_version    (chart, image.digest = the index's)"
  files=()
  for a in "${arch_list[@]}"; do
    files+=("kubectl-leasehold_linux_$a.tar.gz" "leasehold-$version-linux-$a.spdx.json")
  done
  files+=(leasehold.yaml sha256sums.txt "leasehold-$chart_version.tgz" release.txt)
  say "dry run: would write to $out: ${files[*]}; krew URIs under $download_url"
  say "dry run: nothing built, nothing pushed ($(($(date +%s) - started)) s)"
  exit 0
fi

# ---- Build: the release binaries, stripped.
my_tree=$(git rev-parse 'HEAD^{tree}')
declare -A bin_dir image_digest image_size image_bytes sbom
for a in "${arch_list[@]}"; do
  preset=release
  [ "$a" = amd64 ] || preset=release-$a
  dir=$build_dir/$preset
  if [ ! -f "$dir/CMakeCache.txt" ]; then
    [ "$build_dir" = "$root/build" ] || die "--build-dir: $dir is not a configured CMake build"
    say "configuring $preset"
    logged "configure-$a" cmake --preset "$preset"
  fi
  src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$dir/CMakeCache.txt")
  if [ "$(realpath "$src")" != "$root" ]; then
    # Another checkout's build (the test's shortcut): honest only if its files are this commit's.
    [ "$(tree_of "$src")" = "$my_tree" ] ||
      die "--build-dir: $dir was built from $src, whose files differ from $commit's"
    say "reusing $dir, the build of $src (its files are this commit's)"
  fi
  say "building $preset (leasehold, kubectl-leasehold)"
  logged "build-$a" cmake --build "$dir" --target leasehold kubectl-leasehold
  strip="strip"
  [ "$a" = amd64 ] || strip="aarch64-linux-gnu-strip"
  mkdir -p "$stage/$a"
  for b in sidecar/leasehold sidecar/kubectl/kubectl-leasehold; do
    "$strip" -o "$stage/$a/$(basename "$b")" "$dir/$b" || die "$strip $dir/$b failed"
  done
  machine=$(readelf -h "$stage/$a/leasehold" | sed -n 's/^ *Machine: *//p')
  case $a:$machine in amd64:*X86-64* | arm64:*AArch64*) ;;
    *) die "$dir/sidecar/leasehold is a '$machine' binary, not $a" ;; esac
  if [ "$a" = amd64 ]; then
    got=$("$stage/$a/leasehold" --version)
    [[ $got == *" $version" || $got == "$version" ]] ||
      die "$dir/sidecar/leasehold --version says '$got', not $version"
  fi
  bin_dir[$a]=$stage/$a
done

# ---- Images: one per architecture, pushed, platform set.
for a in "${arch_list[@]}"; do
  local_tag=leasehold-release:$version-$a
  say "image linux/$a"
  logged "image-$a" "$root/scripts/build-image.sh" --binary "${bin_dir[$a]}/leasehold" \
    --arch "$a" --tag "$local_tag" --version "$version" --revision "$commit" --created "$created"
  image_bytes[$a]=$(docker image inspect -f '{{.Size}}' "$local_tag")
  logged "save-$a" docker save -o "$stage/image-$a.tar" "$local_tag"
  logged "push-$a" "$crane" push "$stage/image-$a.tar" "$image_ref:$version-$a"
  rm -f "$stage/image-$a.tar"
  # Docker 20.10 without buildx writes its own architecture into every image's config.
  logged "platform-$a" "$crane" mutate --set-platform "linux/$a" "$image_ref:$version-$a"
  image_digest[$a]=$("$crane" digest "$image_ref:$version-$a")
  image_size[$a]=$("$crane" manifest "$image_ref@${image_digest[$a]}" |
    jq '[.config.size] + [.layers[].size] | add')
  say "pushed $image_ref:$version-$a@${image_digest[$a]}"
done

# ---- SBOM of each architecture's image, checked, attached (signed with the key when given),
# before the index: the version counts as published once the index is there.
export SYFT_CHECK_FOR_APP_UPDATE=false
for a in "${arch_list[@]}"; do
  sbom[$a]=$out/leasehold-$version-linux-$a.spdx.json
  logged "sbom-$a" "$syft" scan "registry:$image_ref@${image_digest[$a]}" \
    -o "spdx-json=${sbom[$a]}"
  for pattern in '^libc6$' 'ssl' 'yaml-cpp' 'boost'; do
    found=$(jq -r --arg p "$pattern" '.packages[] | select((.name | test($p))
      and (.versionInfo // "") != "") | "\(.name) \(.versionInfo)"' "${sbom[$a]}" | head -n1)
    [ -n "$found" ] || die "${sbom[$a]}: no package matching /$pattern/ with a version"
  done
  if [ -n "$cosign" ]; then
    if [ -n "$sign_key" ]; then
      logged "attest-$a" "$cosign" attest --yes --key "$sign_key" --tlog-upload=false \
        --type spdxjson --predicate "${sbom[$a]}" "$image_ref@${image_digest[$a]}"
    else
      logged "attach-$a" "$cosign" attach sbom --sbom "${sbom[$a]}" --type spdx \
        "$image_ref@${image_digest[$a]}"
    fi
  fi
done

# ---- kubectl plugin: an archive per architecture, the krew manifest.
rm -f "$out"/kubectl-leasehold_linux_*.tar.gz
for a in "${arch_list[@]}"; do
  logged "krew-$a" "$root/scripts/krew-package.sh" --arch "$a" --version "$version" \
    --download-url "$download_url" "${bin_dir[$a]}/kubectl-leasehold" "$out"
done

# ---- The index, the version's tag: from here on the version is published.
index_args=()
for a in "${arch_list[@]}"; do index_args+=(-m "$image_ref@${image_digest[$a]}"); done
logged index "$crane" index append "${index_args[@]}" -t "$image_ref:$version"
index_digest=$("$crane" digest "$image_ref:$version")
platforms=$("$crane" manifest "$image_ref@$index_digest" |
  jq -r '[.manifests[].platform | "\(.os)/\(.architecture)"] | join(",")')
say "pushed the index $image_ref:$version@$index_digest ($platforms)"

signed="no (no --sign-key)"
[ -n "$cosign" ] || signed="no (cosign not built)"
if [ -n "$sign_key" ]; then
  logged sign "$cosign" sign --yes --key "$sign_key" --tlog-upload=false \
    "$image_ref@$index_digest"
  signed="yes, $image_ref@$index_digest with $sign_key (no transparency log)"
fi

# ---- Chart: the staged copy, now naming the index's digest, packaged and pushed.
stage_chart "$index_digest"
logged package "$helm" package "$chart" -d "$out"
chart_tgz=$out/leasehold-$chart_version.tgz
helm_push=("$helm" push "$chart_tgz" "oci://$registry/charts")
[ -z "$ca_file" ] || helm_push+=(--ca-file "$ca_file")
logged push-chart "${helm_push[@]}"
chart_digest=$(sed -n 's/^Digest: //p' "$stage/push-chart.log")
say "pushed the chart oci://$chart_repo:$chart_version@$chart_digest"

# ---- Checksums of the files to upload.
files=()
for a in "${arch_list[@]}"; do
  files+=("kubectl-leasehold_linux_$a.tar.gz" "leasehold-$version-linux-$a.spdx.json")
done
files+=(leasehold.yaml "leasehold-$chart_version.tgz")
(cd "$out" && sha256sum "${files[@]}" >sha256sums.txt)

# ---- Summary.
{
  echo "leasehold $version from $commit"
  echo "image index  $image_ref:$version@$index_digest ($platforms)"
  for a in "${arch_list[@]}"; do
    printf '  linux/%-6s %s  %s bytes unpacked, %s bytes in the registry\n' "$a" \
      "${image_digest[$a]}" "${image_bytes[$a]}" "${image_size[$a]}"
  done
  echo "signed       $signed"
  echo "chart        oci://$chart_repo:$chart_version@$chart_digest"
  echo "krew         $download_url/kubectl-leasehold_linux_<arch>.tar.gz"
  echo "files in $out:"
  for f in "${files[@]}" sha256sums.txt; do echo "  $f $(stat -c %s "$out/$f") bytes"; done
  echo "took         $(($(date +%s) - started)) s"
} | tee "$out/release.txt"
