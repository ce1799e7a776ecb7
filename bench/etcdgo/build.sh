#!/usr/bin/env bash
# Builds the bench's etcd baseline (main.go here; etcd's client/v3 pinned in go.mod/go.sum) into
# build/bench/etcdgo (never committed). bench/run calls it before --only etcd.
#
# Usage: build.sh [OUT]     (default: <repo>/build/bench/etcdgo)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
exec "$here/../../scripts/go-build.sh" "$here" "${1:-$here/../../build/bench/etcdgo}"
