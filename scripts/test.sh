#!/usr/bin/env bash
# The test suites (tests/README.md says what runs where and why):
#
#   scripts/test.sh          the gate: what CI runs (.ci/run) and what protects a landing.
#                            Dependencies, format check, the real control plane (kube-apiserver,
#                            etcd, helm) from pinned sources, the release build with every unit,
#                            test-API-server, integration, `real`, deploy and short chaos test,
#                            then the ASan + UBSan build with the unit and integration tests (all
#                            but the shard-group scenarios), then the chart on a single-node
#                            cluster with a real kubelet (ctest label `node`: install, the
#                            leader pod's delete, its sidecar's crash, helm test). Every test
#                            runs once: no retries.
#   scripts/test.sh --full   the gate, then what is long (ctest label `full`: chaos runs of 100
#                            scenarios per flavour, the bench smoke runs, the image built from
#                            the whole Dockerfile, the rest of the node scenarios),
#                            the shard-group scenarios under ASan, 60 s of libFuzzer per
#                            parser, and the linux/arm64 cross build with its unit tests
#                            under qemu.
#
# Both end with a table: each stage's seconds and tests, and the 10 slowest tests.
# Compiles go through ccache when it is installed (scripts/install-deps.sh installs it), with
# its cache outside the clone (LEASEHOLD_CCACHE_DIR, default /var/cache/leasehold/ccache), so a
# fresh clone on a machine that built before compiles nothing it has compiled already.
# Work that needs neither the Debian packages' compilers nor the machine's quiet runs in the
# background beside the first stages: the real control plane's Go build and the image's base
# images; the ASan build runs beside the release tests at the lowest CPU priority. A stage waits
# for each before the tests that use it (its seconds there are the wait).
# A failed scenario's directory (sidecar logs, journals) is copied under LEASEHOLD_TEST_KEEP
# (default build/test-kept) and listed at the end, after what each failed test said (its FAIL
# lines and its output's last lines): CI shows only the end of a run's output.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

full=0
case "${1:-}" in
"") ;;
--full) full=1 ;;
-h | --help)
  sed -n '2,/^set -euo/{/^set -euo/d;p}' "$0"
  exit 0
  ;;
*)
  echo "test.sh: unknown argument '$1' (usage: scripts/test.sh [--full])" >&2
  exit 2
  ;;
esac

start=$SECONDS
jobs=$(nproc)
reports=$root/build/test-report
rm -rf "$reports"
mkdir -p "$reports"
stages=$reports/stages.tsv
: >"$stages"
export LEASEHOLD_TEST_KEEP=${LEASEHOLD_TEST_KEEP:-$root/build/test-kept}
# The machine's own stalls, seen by a probe that is not a test (leasehold_testing.machine_stalls):
# a paused virtual machine stops the product, its control plane and the test alike. A failed
# scenario names the stalls that overlapped it, a wait gets their time back, and the run ends
# with the list.
export LEASEHOLD_STALL_LOG=$reports/stalls.tsv
python3 tests/lib/leasehold_testing/machine_stalls.py probe --log "$LEASEHOLD_STALL_LOG" \
  --parent $$ &
stall_probe=$!
failed_stages=()
declare -A background_pid=() # background jobs by name (background, below)

finish() {
  local rc=$?
  # A run that ended early leaves no background job behind (each is its own process group).
  local pid
  for pid in "${background_pid[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then kill -- -"$pid" 2>/dev/null || true; fi
  done
  kill "$stall_probe" 2>/dev/null || true
  echo
  echo "test.sh: $([ "$full" = 1 ] && echo "full suite" || echo "gate") took $((SECONDS - start)) s"
  python3 scripts/test-report.py "$stages" || true
  python3 tests/lib/leasehold_testing/machine_stalls.py summary "$LEASEHOLD_STALL_LOG" || true
  if [ -d "$LEASEHOLD_TEST_KEEP" ] && [ -n "$(ls -A "$LEASEHOLD_TEST_KEEP" 2>/dev/null)" ]; then
    echo "test.sh: failed scenarios' directories kept in $LEASEHOLD_TEST_KEEP:"
    find "$LEASEHOLD_TEST_KEEP" -mindepth 1 -maxdepth 1 -printf '  %f\n'
  fi
  if [ "${#failed_stages[@]}" -gt 0 ]; then
    echo "test.sh: FAILED stages: ${failed_stages[*]}"
    [ "$rc" -ne 0 ] || rc=1
  elif [ "$rc" -eq 0 ]; then
    echo "test.sh: everything passed"
  fi
  exit "$rc"
}
trap finish EXIT
# A run stopped by a signal is not a pass: without these, bash reached finish with status 0
# after SIGTERM (seen: a gate killed during its build said "everything passed").
trap 'echo "test.sh: interrupted (SIGINT)"; exit 130' INT
trap 'echo "test.sh: terminated (SIGTERM)"; exit 143' TERM

# stage NAME JUNIT|- COMMAND...: runs COMMAND, records its seconds and status. A failed build
# or setup stage ends the run; a failed test stage is recorded and the run goes on, so that one
# CI run reports every failing test.
stage() {
  local name=$1 junit=$2 t0=$SECONDS status=ok
  shift 2
  echo "test.sh: ==== $name"
  "$@" || status=FAILED
  printf '%s\t%s\t%s\t%s\n' "$name" $((SECONDS - t0)) "$status" "$junit" >>"$stages"
  if [ "$status" != ok ]; then
    failed_stages+=("$name")
    if [ "$junit" = - ]; then exit 1; fi
  fi
}

# ctest_stage NAME PRESET [ctest arguments]: one attempt per test, output of failures shown.
ctest_stage() {
  local name=$1 preset=$2
  shift 2
  stage "$name" "$reports/$name.xml" ctest --preset "$preset" -j "$jobs" --output-on-failure \
    --test-output-truncation middle --output-junit "$reports/$name.xml" "$@"
}

use_ccache() {
  command -v ccache >/dev/null 2>&1 || return 0
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache
  export CCACHE_DIR=${LEASEHOLD_CCACHE_DIR:-/var/cache/leasehold/ccache}
  # Paths under the clone hash as relative ones, and the working directory is not hashed, so
  # a fresh clone in another folder hits the objects of the last one.
  export CCACHE_BASEDIR=$root CCACHE_NOHASHDIR=true
  mkdir -p "$CCACHE_DIR"
  ccache --max-size "${LEASEHOLD_CCACHE_SIZE:-6G}" >/dev/null
  ccache --zero-stats >/dev/null
}

# background [--idle] NAME COMMAND...: starts COMMAND beside the stages that follow, its output
# in $reports/NAME.log, in a session and process group of its own (so that finish can stop it).
# --idle: at the lowest CPU priority, so that it takes only what the stages leave idle. A new
# session is a new scheduler autogroup, and the kernel weighs autogroups against each other
# before it looks at a process's nice value: the group's own nice (/proc/self/autogroup) is
# what lowers it beside the tests; renice covers kernels without autogroups.
# background_wait NAME: raises it to the tests' priority, waits for it, prints its output and
# how long it ran, and returns its status; the stage that calls it records the time spent
# waiting.
background() {
  local nice=0
  if [ "$1" = --idle ]; then
    nice=19
    shift
  fi
  local name=$1
  shift
  # shellcheck disable=SC2016 # expanded by the inner bash: $1 the nice value, $2 the log
  setsid bash -c 'nice=$1 log=$2; shift 2
    if [ "$nice" != 0 ]; then
      echo "$nice" >/proc/self/autogroup 2>/dev/null || true
      renice -n "$nice" -p $$ >/dev/null
    fi
    t0=$SECONDS; "$@" >"$log" 2>&1; rc=$?
    echo "$rc $((SECONDS - t0))" >"$log.rc"' "$name" "$nice" "$reports/$name.log" "$@" &
  background_pid[$name]=$!
}
background_wait() {
  local name=$1 rc secs pid=${background_pid[$1]}
  # Waited for, it is the stage's work now: back to the tests' priority, ahead of any other
  # idle job (the ASan build's wait would otherwise share the CPU with the node's build).
  if kill -0 "$pid" 2>/dev/null; then
    echo 0 >"/proc/$pid/autogroup" 2>/dev/null || true
    renice -n 0 -g "$pid" >/dev/null 2>&1 || true
  fi
  wait "$pid" || true
  cat "$reports/$name.log"
  read -r rc secs <"$reports/$name.log.rc" || rc=1
  echo "test.sh: $name ran ${secs:-?} s in the background (exit $rc)"
  return "$rc"
}

# The real control plane (kube-apiserver, etcd, helm) from the pinned Go modules, from the
# start: on a fresh machine it downloads modules and compiles for about ten minutes (it needs
# only Go, never the Debian packages), and beside the package installation and the release
# build it fills the time those spend waiting on the network and the disk. On a machine that
# built the same pins before it takes a second (tests/realkube/build.sh). etcdctl, for the etcd
# store's `etcdctl elect` scenario, after it from a module of its own (tests/etcdctl/build.sh).
# Then the release tools (crane, syft, cosign, krew) for the release tests and their registry
# (tests/release/tools/build.sh: minutes on a fresh machine, a second from its binary cache).
background realkube-build bash -c 'tests/realkube/build.sh && tests/etcdctl/build.sh &&
  tests/release/tools/build.sh'
stage deps - scripts/install-deps.sh
use_ccache
# The image's base images from Debian's packages (debootstrap, from deps; minutes of network
# and disk on a fresh machine), beside the release build. deploy.image builds the Dockerfile's
# runtime stage on them with the release binary (tests/deploy/test_image.py). A failure here is
# not the verdict: deploy.image makes them again and reports it.
background base-images scripts/make-base-images.sh
stage format - scripts/check-format.sh

release_build() { cmake --preset release >/dev/null && cmake --build --preset release -j "$jobs"; }
stage release-build - release_build
# The sanitizer build, beside the release tests at the lowest CPU priority (background --idle):
# the tests of real processes mostly wait on their timings and leave a core or more idle,
# which on a fresh machine compiles most of the ASan build (10-12 minutes of two cores) before
# they end; on a warm machine it is ccache's and takes seconds. The test API server is a test
# tool: the sanitizer build takes the release build's (LEASEHOLD_TEST_APISERVER,
# tests/apiserver/CMakeLists.txt) rather than compiling it again.
# shellcheck disable=SC2016 # expanded by the inner bash: $1 the test API server, $2 the jobs
background --idle asan-build bash -c 'cmake --preset asan -DLEASEHOLD_TEST_APISERVER="$1" \
  >/dev/null && cmake --build --preset asan -j "$2"' asan-build \
  "$root/build/release/tests/apiserver/leasehold-test-apiserver" "$jobs"
stage realkube-build - background_wait realkube-build
# The node's programs for the tests labelled `node` (kubelet, kube-controller-manager,
# kube-scheduler, kube-proxy, containerd and its shim, the pause program), beside the release
# tests at the lowest CPU priority like the ASan build: on a fresh machine the kubelet's and
# containerd's packages beyond kube-apiserver's compile there; on a warm one they come from the
# binary cache in a second (tests/realkube/build.sh).
background --idle node-build tests/realkube/build.sh --node
base_images_wait() {
  background_wait base-images || echo "test.sh: deploy.image makes them again and reports why"
}
stage base-images - base_images_wait
# Fake clocks and recorded exchanges first: seconds, and they name a broken build at once.
ctest_stage release-unit release -L '^(unit|apiserver)$'
# Real processes: integration scenarios, the real kube-apiserver, deploy, short chaos runs.
# Not the node's tests: they wait for the node's build (below).
ctest_stage release-processes release -LE '^(unit|unit-binary|apiserver|full|node)$'

stage asan-build - background_wait asan-build
ctest_stage asan-unit asan -L '^unit-binary$'
# Not the shard-group scenarios (integration.shards.*, integration.runshards.*) in the gate:
# under ASan one of them alone keeps both cores busy (4-5 replicas renewing 16 Leases every
# 0.3 s) and their fixed bounds fail on timing, not on memory; the release stage runs them, and
# the full suite runs them under ASan with timings scaled for the sanitizer (tests/README.md).
ctest_stage asan-integration asan -L '^integration$' -LE '^full$' -E '^integration[.](run)?shards[.]'

# The chart on a real node (deploy.node_chart: helm install, the leader pod's delete, its
# sidecar's crash, helm test), after the ASan stages, so that on a fresh machine the node's
# build has their minutes too.
stage node-build - background_wait node-build
ctest_stage release-node release -L '^node$' -LE '^full$'

if [ "$full" = 1 ]; then
  # Real client-go v0.37.2 leader election, the bench's baseline.
  stage clientgo-build - bench/clientgo/build.sh
  ctest_stage release-full release -L '^full$'
  LEASEHOLD_TEST_SLOWDOWN=${LEASEHOLD_TEST_SLOWDOWN:-3} \
    ctest_stage asan-shards asan -R '^integration[.](run)?shards[.]'
  stage fuzz "-" tests/fuzz/run.sh 60
  # linux/arm64 (README "Cross-building for linux/arm64"): the cross toolchain and the arm64
  # libraries, the `release-arm64` preset (the sidecar, the kubectl plugin, the unit tests),
  # and every unit test case under qemu-user-static, each in a process of its own as in
  # release-unit (the test preset selects label `unit`). Last: its failure to build ends
  # nothing else. Not in the gate: emulation makes it long, and a landing that passes amd64's
  # unit tests under ASan rarely fails only on arm64 (tests/README.md).
  arm64_build() {
    scripts/install-deps.sh --arm64 && cmake --preset release-arm64 >/dev/null &&
      cmake --build --preset release-arm64 -j "$jobs"
  }
  stage arm64-build - arm64_build
  ctest_stage arm64-unit release-arm64
  # The release again, now that build/release-arm64 exists: deploy.release publishes both
  # architectures, checks the index holds linux/arm64 too, each image's platform, the arm64
  # SBOM, and runs the arm64 image under binfmt (`docker run --platform linux/arm64`). The
  # gate's run of it has no arm64 build and publishes amd64 alone.
  ctest_stage arm64-release release -R '^deploy[.]release$'
fi

if command -v ccache >/dev/null 2>&1; then
  echo "test.sh: ccache: $(ccache --print-stats 2>/dev/null | awk -F'\t' '$1 ~ /^(direct_cache_hit|preprocessed_cache_hit|cache_miss)$/ {printf "%s=%s ", $1, $2}')"
fi
