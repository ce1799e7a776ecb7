#!/usr/bin/env bash
# Builds the bench's client-go baseline (main.go here; client-go pinned in go.mod/go.sum) into
# build/bench/clientgo (never committed). bench/run calls it before a client-go run.
#
# Usage: build.sh [OUT]     (default: <repo>/build/bench/clientgo)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
exec "$here/../../scripts/go-build.sh" "$here" "${1:-$here/../../build/bench/clientgo}"
