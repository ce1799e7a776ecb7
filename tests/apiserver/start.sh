#!/usr/bin/env bash
# Test environment for leasehold-test-apiserver: certificates, tokens, RBAC, kubeconfigs, server.
#
# Usage:
#   start.sh up DIR [SERVER-FLAG...]    make everything in DIR (if missing), start the server in the
#                                       background, wait until it listens, print the environment
#   start.sh kubeconfig DIR TOKEN OUT [NAMESPACE]
#                                       write a kubeconfig for TOKEN (server/CA from DIR/env)
#   start.sh down DIR                   stop the server started by `up`
#
# The binary is $APISERVER_BIN, else the newest build/*/tests/apiserver/leasehold-test-apiserver
# under the repository root.
#
# `up` leaves in DIR:
#   ca.crt ca.key server.crt server.key   CA and server certificate (SAN IP:127.0.0.1, DNS:localhost)
#   tokens.csv                            admin-token,admin,,system:masters
#                                         elector-token,system:serviceaccount:NS:elector
#                                         other-token,system:serviceaccount:NS:other (no rights)
#   rbac.yaml                             golden/rbac.yaml for NS: ServiceAccounts default and elector,
#                                         Role "elector" + binding (what the captures assume)
#   admin.kubeconfig elector.kubeconfig   kubeconfigs for the two tokens (namespace NS)
#   server.log  server.pid  env
# and prints (and writes to DIR/env) shell assignments:
#   APISERVER_URL=https://127.0.0.1:PORT APISERVER_PORT=.. APISERVER_CONTROL=http://127.0.0.1:M
#   APISERVER_CONTROL_PORT=.. APISERVER_PID=.. APISERVER_CA=DIR/ca.crt APISERVER_DIR=DIR
#   APISERVER_NAMESPACE=NS ADMIN_TOKEN=.. SA_TOKEN=.. KUBECONFIG=DIR/admin.kubeconfig
# so a test can do:  eval "$(tests/apiserver/start.sh up "$tmp")"; ...; tests/apiserver/start.sh down "$tmp"
# NS is $APISERVER_NAMESPACE or "golden". Extra arguments are passed to the server (e.g.
# --watch-history 50 --pod golden/app-0=10.0.0.1). Tokens can be rotated by rewriting tokens.csv.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source-path=SCRIPTDIR/../lib/leasehold_testing source=stop_pidfile.sh
. "$root/tests/lib/leasehold_testing/stop_pidfile.sh"

find_bin() {
  if [ -n "${APISERVER_BIN:-}" ]; then
    echo "$APISERVER_BIN"
    return
  fi
  local newest=""
  local f
  for f in "$root"/build/*/tests/apiserver/leasehold-test-apiserver; do
    [ -x "$f" ] || continue
    if [ -z "$newest" ] || [ "$f" -nt "$newest" ]; then newest=$f; fi
  done
  if [ -z "$newest" ]; then
    echo "start.sh: no leasehold-test-apiserver binary; build it or set APISERVER_BIN" >&2
    exit 1
  fi
  echo "$newest"
}

make_certs() {
  local dir=$1
  [ -f "$dir/server.crt" ] && return
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=leasehold-test-ca" \
    -keyout "$dir/ca.key" -out "$dir/ca.crt" >/dev/null 2>&1
  openssl req -newkey rsa:2048 -nodes -subj "/CN=leasehold-test-apiserver" \
    -keyout "$dir/server.key" -out "$dir/server.csr" >/dev/null 2>&1
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n' \
    >"$dir/server.ext"
  openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
    -CAcreateserial -days 2 -extfile "$dir/server.ext" -out "$dir/server.crt" >/dev/null 2>&1
}

make_auth() {
  local dir=$1 ns=$2
  if [ ! -f "$dir/tokens.csv" ]; then
    local admin sa other
    admin=admin-$(openssl rand -hex 12)
    sa=elector-$(openssl rand -hex 12)
    other=other-$(openssl rand -hex 12)
    {
      echo "$admin,admin,,system:masters"
      echo "$sa,system:serviceaccount:$ns:elector"
      echo "$other,system:serviceaccount:$ns:other"
    } >"$dir/tokens.csv"
    echo "$admin" >"$dir/admin.token"
    echo "$sa" >"$dir/sa.token"
    echo "$other" >"$dir/other.token"
  fi
  # The captures' environment (golden/rbac.yaml, the one copy) with NS for golden.
  [ -f "$dir/rbac.yaml" ] || sed -E "s/(namespace|name): golden([,}])/\1: $ns\2/" "$here/golden/rbac.yaml" >"$dir/rbac.yaml"
}

# URL CA TOKEN OUT [NAMESPACE]: the one kubeconfig writer, the tests' (tests/lib).
write_kubeconfig() {
  PYTHONPATH="$root/tests/lib${PYTHONPATH:+:$PYTHONPATH}" python3 -c '
import sys
from leasehold_testing.kubeconfig import main
main(sys.argv[1:])' test "$@"
}

cmd=${1:-}
case "$cmd" in
up)
  dir=${2:?usage: start.sh up DIR [SERVER-FLAG...]}
  shift 2
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  ns=${APISERVER_NAMESPACE:-golden}
  make_certs "$dir"
  make_auth "$dir" "$ns"
  bin=$(find_bin)
  rm -f "$dir/ports"
  "$bin" --tls-cert "$dir/server.crt" --tls-key "$dir/server.key" \
    --token-file "$dir/tokens.csv" --rbac "$dir/rbac.yaml" "$@" \
    >"$dir/ports" 2>"$dir/server.log" &
  pid=$!
  echo "$pid" >"$dir/server.pid"
  for _ in $(seq 1 100); do
    if [ -s "$dir/ports" ]; then break; fi
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "start.sh: server exited: $(cat "$dir/server.log")" >&2
      exit 1
    fi
    sleep 0.05
  done
  line=$(head -n 1 "$dir/ports")
  port=$(echo "$line" | sed -E 's/.*"port":([0-9]+).*/\1/')
  cport=$(echo "$line" | sed -E 's/.*"controlPort":([0-9]+).*/\1/')
  url="https://127.0.0.1:$port"
  write_kubeconfig "$url" "$dir/ca.crt" "$(cat "$dir/admin.token")" "$dir/admin.kubeconfig" "$ns"
  write_kubeconfig "$url" "$dir/ca.crt" "$(cat "$dir/sa.token")" "$dir/elector.kubeconfig" "$ns"
  {
    echo "APISERVER_URL=$url"
    echo "APISERVER_PORT=$port"
    echo "APISERVER_CONTROL=http://127.0.0.1:$cport"
    echo "APISERVER_CONTROL_PORT=$cport"
    echo "APISERVER_PID=$pid"
    echo "APISERVER_CA=$dir/ca.crt"
    echo "APISERVER_DIR=$dir"
    echo "APISERVER_NAMESPACE=$ns"
    echo "ADMIN_TOKEN=$(cat "$dir/admin.token")"
    echo "SA_TOKEN=$(cat "$dir/sa.token")"
    echo "KUBECONFIG=$dir/admin.kubeconfig"
  } >"$dir/env"
  cat "$dir/env"
  ;;
kubeconfig)
  dir=${2:?usage: start.sh kubeconfig DIR TOKEN OUT [NAMESPACE]}
  token=${3:?token}
  out=${4:?output file}
  url=$(sed -n 's/^APISERVER_URL=//p' "$dir/env")
  write_kubeconfig "$url" "$dir/ca.crt" "$token" "$out" "${5:-${APISERVER_NAMESPACE:-golden}}"
  ;;
down)
  dir=${2:?usage: start.sh down DIR}
  stop_pidfile "$dir/server.pid" TERM 25
  ;;
*)
  sed -n '2,30p' "$0"
  exit 2
  ;;
esac
