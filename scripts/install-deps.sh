#!/usr/bin/env bash
# Installs every Debian package that building, testing and the demo need. Idempotent; run as
# root (or with sudo) on Debian bookworm. Everything comes from Debian's archive: no downloads.
# Debian's etcd-server is unpacked beside, not installed (below).
#
#   install-deps.sh              everything (what scripts/test.sh and CI use)
#   install-deps.sh --build-only what `cmake --preset release && cmake --build` needs, nothing
#                                else (the Dockerfile's build stage: a few hundred MB less to
#                                fetch and unpack than the whole test toolchain)
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
)

case "${1:-}" in
"") ;;
--build-only) packages=("${build_packages[@]}") ;;
*)
  echo "install-deps: unknown argument '$1' (use --build-only or nothing)" >&2
  exit 2
  ;;
esac

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

$SUDO apt-get update -qq
if [ "${#missing[@]}" -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
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

# kubectl is not in Debian bookworm's archive; the machines this project runs on ship it.
# The kubectl checks in the test suite need it and say so clearly when it is missing.
if ! command -v kubectl >/dev/null 2>&1; then
  echo "install-deps: warning: kubectl not found; the kubectl integration checks will fail" >&2
fi
