#!/usr/bin/env bash
# The whole test suite, exactly as CI runs it: dependencies, format check, release build with
# every test, then the AddressSanitizer + UBSan build with the unit tests.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)

scripts/install-deps.sh
scripts/check-format.sh

jobs=$(nproc)
cmake --preset release >/dev/null
cmake --build --preset release -j "$jobs"
ctest --preset release -j "$jobs"

cmake --preset asan >/dev/null
cmake --build --preset asan -j "$jobs"
ctest --preset asan -j "$jobs" -L unit

echo "test.sh: everything passed in $(( $(date +%s) - start )) s"
