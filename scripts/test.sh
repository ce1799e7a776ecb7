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
cmake --preset release >/dev/null
cmake --build --preset release -j "$jobs"
ctest --preset release -j "$jobs" --output-on-failure

cmake --preset asan >/dev/null
cmake --build --preset asan -j "$jobs"
ctest --preset asan -j "$jobs" -L 'unit|integration' --output-on-failure

# Every parser under libFuzzer for 30 s (clang build, seed corpora in tests/fuzz/corpus).
tests/fuzz/run.sh 30

echo "test.sh: everything passed in $(( $(date +%s) - start )) s"
