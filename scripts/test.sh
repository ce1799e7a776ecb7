#!/usr/bin/env bash
# The whole test suite, exactly as CI runs it: dependencies, format check, release build with
# every test (unit, test API server with the golden replay and kubectl, integration with real
# processes, the same and more against a real kube-apiserver + etcd (label `real`), deploy
# checks with real helm and docker, a benchmark smoke run), then the AddressSanitizer + UBSan build with
# the unit and integration tests again, then 30 s of libFuzzer per parser.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)

scripts/install-deps.sh
scripts/check-format.sh

# The real control plane (kube-apiserver, etcd, helm) from the pinned Go modules; the first
# build on an empty Go cache takes minutes, later ones seconds (tests/realkube/build.sh).
tests/realkube/build.sh
# Real client-go v0.37.2 leader election, the bench's baseline (bench.real_smoke).
bench/clientgo/build.sh

jobs=$(nproc)
flaky_log=$(mktemp)
report_flaky() {
  if [ -s "$flaky_log" ]; then
    echo "test.sh: FLAKY (failed once, passed on the second attempt):"
    sed 's/^/  /' "$flaky_log"
  fi
  rm -f "$flaky_log"
}
trap report_flaky EXIT

# Unit and test-server tests run on fake clocks and recorded exchanges: one attempt. Every other
# test times real processes (sidecars, kube-apiserver, helm, docker) on a shared 2-core machine
# and gets a second attempt if the first fails (ctest --repeat until-pass:2). A test that fails
# twice fails the run; one that needed the second attempt is listed as FLAKY at the end, its
# first attempt's output above, so a flake is seen and not hidden.
deterministic='^(unit|apiserver)$'
ctest_retrying() {  # PRESET [ctest arguments]
  local preset=$1 out rc
  shift
  out=$(mktemp)
  set +e
  ctest --preset "$preset" "$@" -LE "$deterministic" --repeat until-pass:2 --output-on-failure 2>&1 | tee "$out"
  rc=${PIPESTATUS[0]}
  set -e
  # A test with a failed attempt that is not among "The following tests FAILED" passed on its second.
  awk '/\*\*\*(Failed|Timeout|Exception)/ { sub(/^.*Test +#[0-9]+: /, ""); sub(/ \.+.*$/, ""); bad[$0] = 1 }
       /^The following tests FAILED/ { final = 1 }
       final && /^\t/ { sub(/^\t *[0-9]+ - /, ""); sub(/ \(.*$/, ""); delete bad[$0] }
       END { for (t in bad) print t }' "$out" | sed "s/^/$preset: /" >> "$flaky_log"
  rm -f "$out"
  return "$rc"
}

cmake --preset release >/dev/null
cmake --build --preset release -j "$jobs"
ctest --preset release -j "$jobs" -L "$deterministic" --output-on-failure
ctest_retrying release -j "$jobs"

cmake --preset asan >/dev/null
cmake --build --preset asan -j "$jobs"
ctest --preset asan -j "$jobs" -L '^unit$' --output-on-failure
# Not the shard-group scenarios (integration.shards.*, integration.runshards.*): under ASan one
# of them alone overloads 2 cores (renewals of 8-16 Leases per replica every 0.3 s lapse, the
# supervised commands churn) and they fail on timing, not on memory. ASan still runs the shard
# code's unit tests (shard_test, supervise_test); the release stage runs these scenarios.
ctest_retrying asan -j "$jobs" -L '^integration$' -E '^integration[.](run)?shards[.]'

# Every parser under libFuzzer for 30 s (clang build, seed corpora in tests/fuzz/corpus).
tests/fuzz/run.sh 30

echo "test.sh: everything passed in $(( $(date +%s) - start )) s"
