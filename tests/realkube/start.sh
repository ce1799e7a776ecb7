#!/usr/bin/env bash
# The real control plane for tests: etcd and kube-apiserver (built by build.sh) on loopback.
#
# Usage:
#   start.sh up DIR [--ha] [--node] [KUBE-APISERVER-FLAG...]
#        certificates, keys, admin token, audit policy in DIR (kept if present), then etcd and one
#        kube-apiserver (two with --ha, both on the same etcd: an HA control plane whose watch
#        caches lag each other) on free loopback ports; waits until /readyz says ok and the
#        bootstrap RBAC roles exist; prints the environment (also written to DIR/env).
#        --node: a single-node cluster (node.sh): kube-apiserver on the node's bridge address
#        (10.244.0.1, where the pods reach it, also through the Service 10.96.0.1), the Node
#        authorizer, then containerd, kube-controller-manager, kube-scheduler, kube-proxy and a
#        kubelet whose Node is Ready; prints NODE_* lines and the seconds it took
#   start.sh down DIR              stop everything `up` started (with --node: node.sh down)
#   start.sh stop DIR COMPONENT    kill -9 one of etcd, apiserver, apiserver2 (left down)
#   start.sh start DIR COMPONENT   start it again with the same flags and ports, wait until ready
#   start.sh restart DIR COMPONENT SIGNAL   (TERM or KILL) then start it again
#   start.sh token DIR NAMESPACE SERVICEACCOUNT [DURATION]
#        creates the namespace and the ServiceAccount if missing and prints a TokenRequest token
#        for it (default 2h)
#   start.sh kubeconfig DIR TOKEN OUT [NAMESPACE] [URL]
#        a kubeconfig for TOKEN (CA from DIR, server from DIR/env unless URL is given)
#
# Binaries: $KUBE_APISERVER_BIN and $ETCD_BIN, else <repo>/build/realkube/bin/{kube-apiserver,etcd}.
# The serving certificate covers 127.0.0.1 and localhost plus $REALKUBE_SANS (comma-separated
# extra subjectAltName entries such as IP:10.0.0.1); the API binds $REALKUBE_BIND (127.0.0.1).
# Readiness waits $REALKUBE_START_TIMEOUT seconds (default 90), then fails with the log's tail.
#
# `up` leaves in DIR: ca.crt ca.key server.crt server.key sa.key sa.pub tokens.csv admin.token
# admin.kubeconfig audit-policy.yaml audit.log (JSON lines, one per finished request, level
# Metadata: user, verb, resource, code) etcd/ (data) *.log *.pid *.cmd env, and prints:
#   APISERVER_URL APISERVER_PORT APISERVER_PID [APISERVER2_URL APISERVER2_PORT APISERVER2_PID]
#   ETCD_URL ETCD_PID APISERVER_CA APISERVER_DIR AUDIT_LOG ADMIN_TOKEN KUBECONFIG KUBECACHEDIR
# Flags in every kube-apiserver: RBAC authorization, ServiceAccount token signing (TokenRequest),
# --feature-gates=CoordinatedLeaderElection=true, --runtime-config=coordination.k8s.io/v1beta1=true.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source-path=SCRIPTDIR/../lib/leasehold_testing source=stop_pidfile.sh
. "$root/tests/lib/leasehold_testing/stop_pidfile.sh"
bindir=$root/build/realkube/bin
apiserver_bin=${KUBE_APISERVER_BIN:-$bindir/kube-apiserver}
etcd_bin=${ETCD_BIN:-$bindir/etcd}
bind=${REALKUBE_BIND:-127.0.0.1}
# Where this script and the printed URLs reach the API: the bound address (127.0.0.1 for 0.0.0.0).
host=$bind
[ "$bind" = 0.0.0.0 ] && host=127.0.0.1
timeout=${REALKUBE_START_TIMEOUT:-90}

die() {
  echo "realkube/start.sh: $*" >&2
  exit 1
}

need_bin() {
  [ -x "$1" ] || die "$1 not found: run tests/realkube/build.sh (or set ${2})"
}

# Ports below the ephemeral range, from the one port picker the tests share (tests/lib).
free_ports() {
  PYTHONPATH="$root/tests/lib${PYTHONPATH:+:$PYTHONPATH}" python3 -c '
import sys
from leasehold_testing.ports import free_port
print(" ".join(str(free_port()) for _ in range(int(sys.argv[1]))))' "$1"
}

make_certs() {
  local dir=$1
  [ -f "$dir/server.crt" ] && return
  local sans="IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc"
  # The node's pods reach kube-apiserver on the bridge and through the Service's IP.
  [ "${node:-0}" = 1 ] && sans="$sans,IP:10.244.0.1,IP:10.96.0.1,DNS:kubernetes.default"
  [ -n "${REALKUBE_SANS:-}" ] && sans="$sans,$REALKUBE_SANS"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=leasehold-realkube-ca" \
    -keyout "$dir/ca.key" -out "$dir/ca.crt" >/dev/null 2>&1
  openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
    -keyout "$dir/server.key" -out "$dir/server.csr" >/dev/null 2>&1
  printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n' \
    "$sans" >"$dir/server.ext"
  openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
    -CAcreateserial -days 2 -extfile "$dir/server.ext" -out "$dir/server.crt" >/dev/null 2>&1
  openssl genrsa -out "$dir/sa.key" 2048 >/dev/null 2>&1
  openssl rsa -in "$dir/sa.key" -pubout -out "$dir/sa.pub" >/dev/null 2>&1
  local admin
  admin=admin-$(openssl rand -hex 16)
  echo "$admin" >"$dir/admin.token"
  echo "$admin,admin,admin,system:masters" >"$dir/tokens.csv"
  cat >"$dir/audit-policy.yaml" <<EOF
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
EOF
}

# URL CA TOKEN OUT [NAMESPACE]: the one kubeconfig writer, the tests' (tests/lib).
write_kubeconfig() {
  PYTHONPATH="$root/tests/lib${PYTHONPATH:+:$PYTHONPATH}" python3 -c '
import sys
from leasehold_testing.kubeconfig import main
main(sys.argv[1:])' realkube "$@"
}

# Writes DIR/NAME.cmd (one argument per line) so `start` can run it again unchanged.
save_cmd() {
  local dir=$1 name=$2
  shift 2
  printf '%s\n' "$@" >"$dir/$name.cmd"
}

launch() {
  local dir=$1 name=$2
  local -a argv
  mapfile -t argv <"$dir/$name.cmd"
  "${argv[@]}" >>"$dir/$name.log" 2>&1 &
  echo $! >"$dir/$name.pid"
}

# Waits until COMPONENT answers: etcd's /health, kube-apiserver's /readyz.
wait_ready() {
  local dir=$1 name=$2 url=$3
  local pid deadline
  pid=$(cat "$dir/$name.pid")
  deadline=$(( $(date +%s) + timeout ))
  while :; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 20 "$dir/$name.log" >&2
      die "$name exited before it was ready (log: $dir/$name.log)"
    fi
    if [ "$name" = etcd ]; then
      curl -sf --max-time 2 "$url/health" 2>/dev/null | grep -q '"health":"true"' && return 0
    else
      [ "$(curl -s --max-time 5 --cacert "$dir/ca.crt" -H "Authorization: Bearer $(cat "$dir/admin.token")" \
        "$url/readyz" 2>/dev/null)" = ok ] && return 0
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      tail -n 20 "$dir/$name.log" >&2
      die "$name not ready within ${timeout}s (log: $dir/$name.log)"
    fi
    sleep 0.2
  done
}

apiserver_cmd() {
  local dir=$1 name=$2 port=$3 etcd_url=$4
  shift 4
  # Without a node: no Endpoints for the `kubernetes` Service (nothing in-cluster uses it, and
  # two planes must not fight over it). With one: the node's authorizer and admission, the
  # kubelet's client certificate, and the Service pointing at the bridge address.
  local -a mode=(--advertise-address=127.0.0.1 --authorization-mode=RBAC
    --endpoint-reconciler-type=none)
  if [ "${node:-0}" = 1 ]; then
    # shellcheck disable=SC2054 # Node,RBAC is one flag value
    mode=(--advertise-address="$bind" --authorization-mode=Node,RBAC
      --endpoint-reconciler-type=lease --enable-admission-plugins=NodeRestriction
      --kubelet-client-certificate="$dir/node/apiserver-kubelet-client.crt"
      --kubelet-client-key="$dir/node/apiserver-kubelet-client.key"
      --kubelet-certificate-authority="$dir/ca.crt"
      --kubelet-preferred-address-types=InternalIP,Hostname)
  fi
  save_cmd "$dir" "$name" "$apiserver_bin" \
    --etcd-servers="$etcd_url" \
    --bind-address="$bind" --secure-port="$port" "${mode[@]}" \
    --tls-cert-file="$dir/server.crt" --tls-private-key-file="$dir/server.key" \
    --client-ca-file="$dir/ca.crt" \
    --token-auth-file="$dir/tokens.csv" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$dir/sa.pub" --service-account-signing-key-file="$dir/sa.key" \
    --service-cluster-ip-range=10.96.0.0/24 \
    --audit-policy-file="$dir/audit-policy.yaml" --audit-log-path="$dir/audit.log" \
    --audit-log-mode=blocking --audit-log-maxsize=0 \
    --feature-gates=CoordinatedLeaderElection=true \
    --runtime-config=coordination.k8s.io/v1beta1=true \
    --cert-dir="$dir/$name-certs" \
    "$@"
}

env_value() {
  sed -n "s/^$2=//p" "$1/env"
}

url_of() {
  case "$2" in
  etcd) env_value "$1" ETCD_URL ;;
  apiserver) env_value "$1" APISERVER_URL ;;
  apiserver2) env_value "$1" APISERVER2_URL ;;
  *) die "unknown component $2 (etcd, apiserver, apiserver2)" ;;
  esac
}

kill_component() {
  stop_pidfile "$1/$2.pid" "${3:-KILL}" 100
}

cmd=${1:-}
case "$cmd" in
up)
  dir=${2:?usage: start.sh up DIR [--ha] [--node] [KUBE-APISERVER-FLAG...]}
  shift 2
  ha=0 node=0
  while [ "${1:-}" = --ha ] || [ "${1:-}" = --node ]; do
    [ "$1" = --ha ] && ha=1
    [ "$1" = --node ] && node=1
    shift
  done
  need_bin "$apiserver_bin" KUBE_APISERVER_BIN
  need_bin "$etcd_bin" ETCD_BIN
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  make_certs "$dir"
  if [ "$node" = 1 ]; then
    "$here/node.sh" net-up "$dir"
    bind=10.244.0.1 host=10.244.0.1
  fi
  read -r p_etcd p_peer p_api p_api2 <<<"$(free_ports 4)"
  etcd_url="http://127.0.0.1:$p_etcd"
  # No fsync: test data only, and a slow disk must not look like an overloaded control plane.
  save_cmd "$dir" etcd "$etcd_bin" --name realkube --data-dir "$dir/etcd" \
    --listen-client-urls "$etcd_url" --advertise-client-urls "$etcd_url" \
    --listen-peer-urls "http://127.0.0.1:$p_peer" \
    --initial-advertise-peer-urls "http://127.0.0.1:$p_peer" \
    --initial-cluster "realkube=http://127.0.0.1:$p_peer" --unsafe-no-fsync \
    --log-level warn
  launch "$dir" etcd
  wait_ready "$dir" etcd "$etcd_url"
  apiserver_cmd "$dir" apiserver "$p_api" "$etcd_url" "$@"
  launch "$dir" apiserver
  if [ "$ha" = 1 ]; then
    apiserver_cmd "$dir" apiserver2 "$p_api2" "$etcd_url" "$@"
    launch "$dir" apiserver2
  fi
  url="https://$host:$p_api"
  wait_ready "$dir" apiserver "$url"
  [ "$ha" = 1 ] && wait_ready "$dir" apiserver2 "https://$host:$p_api2"
  write_kubeconfig "$url" "$dir/ca.crt" "$(cat "$dir/admin.token")" "$dir/admin.kubeconfig"
  {
    echo "APISERVER_URL=$url"
    echo "APISERVER_PORT=$p_api"
    echo "APISERVER_PID=$(cat "$dir/apiserver.pid")"
    if [ "$ha" = 1 ]; then
      echo "APISERVER2_URL=https://$host:$p_api2"
      echo "APISERVER2_PORT=$p_api2"
      echo "APISERVER2_PID=$(cat "$dir/apiserver2.pid")"
    fi
    echo "ETCD_URL=$etcd_url"
    echo "ETCD_PID=$(cat "$dir/etcd.pid")"
    echo "APISERVER_CA=$dir/ca.crt"
    echo "APISERVER_DIR=$dir"
    echo "AUDIT_LOG=$dir/audit.log"
    echo "ADMIN_TOKEN=$(cat "$dir/admin.token")"
    echo "KUBECONFIG=$dir/admin.kubeconfig"
    # kubectl's discovery cache of this plane: the default, ~/.kube/cache/discovery/HOST_PORT,
    # is shared by every plane that ever listened on that loopback port and kept for hours, so
    # kubectl could answer a new plane from what an earlier server there served, or had served
    # yet while starting ("... LeaseCandidate is not served" in check.sh).
    echo "KUBECACHEDIR=$dir/kubecache"
  } >"$dir/env"
  export KUBECACHEDIR=$dir/kubecache
  # The bootstrap policy (system:* ClusterRoles) is written by a post-start hook; /readyz
  # covers it, but a Role binding test right after `up` must not race it.
  deadline=$(( $(date +%s) + timeout ))
  until KUBECONFIG="$dir/admin.kubeconfig" kubectl get clusterrole system:basic-user >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || die "bootstrap RBAC roles missing after ${timeout}s"
    sleep 0.2
  done
  cat "$dir/env"
  [ "$node" = 0 ] || "$here/node.sh" up "$dir"
  ;;
down)
  dir=${2:?usage: start.sh down DIR}
  # The node first (its pods must not outlive it), the bridge last: kube-apiserver deletes its
  # endpoint Lease through the bridge address as it stops. A failing step stops nothing else.
  "$here/node.sh" down "$dir" || echo "realkube/start.sh: node.sh down $dir failed" >&2
  for c in apiserver2 apiserver etcd; do kill_component "$dir" "$c" TERM; done
  "$here/node.sh" net-down "$dir" || echo "realkube/start.sh: node.sh net-down $dir failed" >&2
  ;;
stop)
  dir=${2:?usage: start.sh stop DIR COMPONENT}
  kill_component "$dir" "${3:?component}" KILL
  ;;
start)
  dir=${2:?usage: start.sh start DIR COMPONENT}
  name=${3:?component}
  url=$(url_of "$dir" "$name")
  [ -f "$dir/$name.cmd" ] || die "$name was never started in $dir"
  launch "$dir" "$name"
  wait_ready "$dir" "$name" "$url"
  echo "${name^^}_PID=$(cat "$dir/$name.pid")"
  ;;
restart)
  dir=${2:?usage: start.sh restart DIR COMPONENT SIGNAL}
  name=${3:?component}
  url=$(url_of "$dir" "$name")
  kill_component "$dir" "$name" "${4:-TERM}"
  launch "$dir" "$name"
  wait_ready "$dir" "$name" "$url"
  echo "${name^^}_PID=$(cat "$dir/$name.pid")"
  ;;
token)
  dir=${2:?usage: start.sh token DIR NAMESPACE SERVICEACCOUNT [DURATION]}
  ns=${3:?namespace}
  sa=${4:?serviceaccount}
  export KUBECONFIG=$dir/admin.kubeconfig KUBECACHEDIR=$dir/kubecache
  kubectl get namespace "$ns" >/dev/null 2>&1 || kubectl create namespace "$ns" >/dev/null
  kubectl -n "$ns" get serviceaccount "$sa" >/dev/null 2>&1 ||
    kubectl -n "$ns" create serviceaccount "$sa" >/dev/null
  kubectl -n "$ns" create token "$sa" --duration "${5:-2h}"
  ;;
kubeconfig)
  dir=${2:?usage: start.sh kubeconfig DIR TOKEN OUT [NAMESPACE] [URL]}
  token=${3:?token}
  out=${4:?output file}
  url=${6:-$(env_value "$dir" APISERVER_URL)}
  write_kubeconfig "$url" "$dir/ca.crt" "$token" "$out" "${5:-default}"
  ;;
*)
  sed -n '2,/^set -euo/{/^set -euo/d;p}' "$0"
  exit 2
  ;;
esac
