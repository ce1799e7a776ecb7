#!/usr/bin/env bash
# The control plane that the `real` scenario entries share (ctest fixture realkube_shared,
# tests/integration/CMakeLists.txt): one etcd and kube-apiserver for all of them instead of one
# each, every scenario in a namespace of its own on it (scenario_runner reads its folder from
# LEASEHOLD_REAL_PLANE). The entries that stop, pause or restart a component, or need two
# kube-apiservers, start their own.
#
#   shared_plane.sh up DIR     stop and remove what an earlier run left in DIR, then start.sh up
#   shared_plane.sh down DIR   start.sh down, then remove DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=${2:?usage: shared_plane.sh up|down DIR}
case "${1:-}" in
up)
  if [ -d "$dir" ]; then "$here/start.sh" down "$dir" >/dev/null 2>&1 || true; fi
  rm -rf "$dir"
  "$here/start.sh" up "$dir"
  ;;
down)
  if [ -d "$dir" ]; then "$here/start.sh" down "$dir"; fi
  rm -rf "$dir"
  ;;
*)
  echo "usage: shared_plane.sh up|down DIR" >&2
  exit 2
  ;;
esac
