#!/usr/bin/env bash
# Builds etcdctl from the pinned go.etcd.io/etcd/etcdctl/v3 (go.mod/go.sum here) into
# build/etcdctl/etcdctl (never committed). scripts/test.sh runs it beside the real control
# plane's build.
#
# Usage: build.sh [OUT]     (default: <repo>/build/etcdctl/etcdctl)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
exec "$here/../../scripts/go-build.sh" "$here" "${1:-$here/../../build/etcdctl/etcdctl}" \
  go.etcd.io/etcd/etcdctl/v3
