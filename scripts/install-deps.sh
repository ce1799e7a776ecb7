#!/usr/bin/env bash
# Installs every Debian package that building, testing and the demo need. Idempotent; run as
# root (or with sudo) on Debian bookworm. Everything comes from Debian's archive: no downloads.
# Debian's etcd-server is unpacked beside, not installed (below).
#
#   install-deps.sh              everything (what scripts/test.sh and CI use)
#   install-deps.sh --build-only what `cmake --preset release && cmake --build` needs, nothing
#                                else (the Dockerfile's build stage: a few hundred MB less to
#                                fetch and unpack than the whole test toolchain)
#   install-deps.sh --arm64      what the `release-arm64` preset needs beside the amd64 build
#                                (`--build-only`'s packages too): Debian's cross toolchain for
#                                linux/arm64, the arm64 libraries through `dpkg
#                                --add-architecture arm64`, and qemu-user-static, which runs the
#                                arm64 unit tests (and, through binfmt_misc, arm64 images)
set -euo pipefail

build_packages=(
  build-essential cmake ninja-build g++ pkg-config
  libboost-dev libssl-dev nlohmann-json3-dev libyaml-cpp-dev libcli11-dev
  googletest libgtest-dev libgmock-dev
)
packages=(
  "${build_packages[@]}"
  # scripts/check-format.sh
  clang-format
  # scripts/test.sh: a compiler cache outside the clone, so a fresh clone rebuilds in seconds
  ccache
  # tests/fuzz: libFuzzer targets (clang with its fuzzer and sanitizer runtimes)
  clang libclang-rt-14-dev
  # tests, demo, benchmarks
  openssl ca-certificates curl python3 procps iproute2
  jq  # tests/integration/dropin_scenarios.py: contrib's app reads .name with jq
  strace  # tests/integration/loop_scenarios.py: slows every fsync (fault injection)
  wrk  # tests/load/run (not in CI)
  nginx  # bench/run: /leader next to nginx serving the same JSON (not in CI); wrk above too
  python3-matplotlib  # bench/run and bench/report.py --plot: the PNGs of bench/results
  # promtool, which checks /metrics in the integration tests
  prometheus
  # tests/deploy: chart/manifest checks, the fenced-writer examples on SQLite and PostgreSQL
  yamllint shellcheck python3-yaml python3-jsonschema sqlite3 postgresql
  # scripts/make-base-images.sh: debian:bookworm(-slim) for `docker build` without a registry
  debootstrap debian-archive-keyring
  # tests/realkube/node.sh: the node's OCI runtime, pod network (CNI bridge, host-local) and
  # kube-proxy's iptables; nsenter (util-linux) and curl reach kube-apiserver from a pod
  runc containernetworking-plugins iptables conntrack util-linux
  busybox-static  # tests/realkube/node_images.sh: the stand-in for the chart's busybox app image
  # The release tests' OCI registry (distribution 2.8.2, /usr/bin/docker-registry): each test
  # starts its own on loopback with TLS from a test CA (leasehold_testing/oci_registry.py),
  # never the package's service
  docker-registry
  # --store zookeeper's tests (leasehold_testing/zookeeper_env.py): ZooKeeper 3.8.0's server
  # (the `zookeeper` package: jars and scripts, no service; `zookeeperd` would start one), the
  # Java runtime it runs on, kazoo (the Python client whose Election recipe leasehold's layout
  # follows) and pytest (the store conformance suite, tests/conformance)
  zookeeper default-jre-headless python3-kazoo python3-pytest
)

# --arm64: the cross toolchain and the arm64 libraries. Multi-Arch: same packages install beside
# their amd64 copies (dpkg then keeps both at one version, so an older amd64 copy is upgraded
# with them). The header-only libraries (nlohmann-json3-dev, libcli11-dev) are Architecture: all
# and serve both; Boost is header-only here, but its CMake config (BoostConfig.cmake) lives in
# the arch's library folder, hence libboost-dev:arm64.
arm64_packages=(
  crossbuild-essential-arm64  # g++-aarch64-linux-gnu, arm64 glibc in /usr/aarch64-linux-gnu
  libboost-dev:arm64 libssl-dev:arm64 libgtest-dev:arm64 libgmock-dev:arm64
  qemu-user-static binfmt-support
)
# libyaml-cpp-dev is not Multi-Arch: same in bookworm, so its arm64 copy cannot be installed
# beside the amd64 one: its package and its library's are unpacked into this folder instead
# (like etcd-server below); cmake/toolchains/aarch64-linux-gnu.cmake looks there.
arm64_yaml_cpp=/opt/leasehold/arm64-yaml-cpp

arm64=0
case "${1:-}" in
"") ;;
--build-only) packages=("${build_packages[@]}") ;;
--arm64)
  arm64=1
  packages=("${build_packages[@]}" "${arm64_packages[@]}")
  ;;
*)
  echo "install-deps: unknown argument '$1' (use --build-only, --arm64 or nothing)" >&2
  exit 2
  ;;
esac

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
# Another apt run (a test run's, a second helper's) may hold the lock: wait for it.
apt_get() { DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=900 "$@"; }

if [ "$arm64" = 1 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "install-deps: dpkg --add-architecture arm64"
  $SUDO dpkg --add-architecture arm64
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

apt_get update -qq
if [ "${#missing[@]}" -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  apt_get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all ${#packages[@]} packages already installed"
fi

# Debian's etcd-server (3.4.23), the oldest etcd the etcd store is tested on (integration.etcd34.*,
# tests/integration/CMakeLists.txt): unpacked into /opt/leasehold/debian-etcd, not installed,
# because its package starts an etcd on port 2379 as a system service.
debian_etcd=/opt/leasehold/debian-etcd
if [ "${1:-}" = "" ] && [ ! -x "$debian_etcd/usr/bin/etcd" ]; then
  deb_dir=$(mktemp -d)
  # apt-get download fetches as the user _apt where that user may write (else it warns)
  $SUDO chown _apt "$deb_dir" 2>/dev/null || true
  (cd "$deb_dir" && apt-get download -qq etcd-server)
  $SUDO rm -rf "$debian_etcd.tmp"
  $SUDO mkdir -p "$debian_etcd.tmp"
  $SUDO dpkg-deb -x "$deb_dir"/etcd-server_*.deb "$debian_etcd.tmp"
  $SUDO mv "$debian_etcd.tmp" "$debian_etcd"
  rm -rf "$deb_dir"
  echo "install-deps: $("$debian_etcd/usr/bin/etcd" --version | head -1) in $debian_etcd"
fi

if [ "$arm64" = 1 ]; then
  # yaml-cpp for arm64 (above): unpacked, not installed; again when the archive has a newer one.
  yaml_version=$(apt-cache policy libyaml-cpp-dev:arm64 | awk '/Candidate:/ {print $2}')
  if [ "$(cat "$arm64_yaml_cpp/version" 2>/dev/null)" != "$yaml_version" ] ||
    [ ! -f "$arm64_yaml_cpp/status.d/libyaml-cpp-dev" ]; then
    deb_dir=$(mktemp -d)
    $SUDO chown _apt "$deb_dir" 2>/dev/null || true
    (cd "$deb_dir" && apt-get download -qq libyaml-cpp-dev:arm64 "libyaml-cpp0.7:arm64")
    $SUDO rm -rf "$arm64_yaml_cpp.tmp"
    $SUDO mkdir -p "$arm64_yaml_cpp.tmp"
    # Each package's control paragraph too, as dpkg would record it: scripts/build-image.sh
    # puts it in the arm64 image's /var/lib/dpkg/status.d (the SBOM's yaml-cpp entry).
    $SUDO mkdir -p "$arm64_yaml_cpp.tmp/status.d"
    for deb in "$deb_dir"/*.deb; do
      $SUDO dpkg-deb -x "$deb" "$arm64_yaml_cpp.tmp"
      pkg=$(dpkg-deb -f "$deb" Package)
      { dpkg-deb -f "$deb"; echo "Status: install ok unpacked"; } |
        $SUDO tee "$arm64_yaml_cpp.tmp/status.d/$pkg" >/dev/null
    done
    echo "$yaml_version" | $SUDO tee "$arm64_yaml_cpp.tmp/version" >/dev/null
    $SUDO rm -rf "$arm64_yaml_cpp"
    $SUDO mv "$arm64_yaml_cpp.tmp" "$arm64_yaml_cpp"
    rm -rf "$deb_dir"
  fi
  echo "install-deps: yaml-cpp $yaml_version for arm64 in $arm64_yaml_cpp"
  # binfmt_misc runs arm64 programs through qemu-aarch64-static by themselves (what
  # `docker run --platform linux/arm64` needs; the unit tests name the emulator and do not).
  # Where no init system mounted it, mount it and register qemu-user-static's formats.
  binfmt=/proc/sys/fs/binfmt_misc
  if [ ! -e "$binfmt/register" ]; then
    $SUDO mount -t binfmt_misc binfmt_misc "$binfmt" ||
      echo "install-deps: warning: cannot mount binfmt_misc; arm64 images will not run" >&2
  fi
  if [ -e "$binfmt/register" ] && [ ! -e "$binfmt/qemu-aarch64" ]; then
    $SUDO update-binfmts --enable qemu-aarch64 ||
      echo "install-deps: warning: qemu-aarch64 not registered with binfmt_misc" >&2
  fi
  if [ -e "$binfmt/qemu-aarch64" ]; then
    echo "install-deps: binfmt_misc: qemu-aarch64 $(head -1 "$binfmt/qemu-aarch64")"
  fi
fi

# kubectl is not in Debian bookworm's archive; the machines this project runs on ship it.
# The kubectl checks in the test suite need it and say so clearly when it is missing.
if ! command -v kubectl >/dev/null 2>&1; then
  echo "install-deps: warning: kubectl not found; the kubectl integration checks will fail" >&2
fi
