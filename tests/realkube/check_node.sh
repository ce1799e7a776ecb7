#!/usr/bin/env bash
# ctest realkube.node: the single-node cluster of `start.sh up DIR --node` (node.sh), checked.
# - a second node while one is up is refused with a clear error, not half-started;
# - the Node registers at the pinned version with containerd and turns Ready;
# - a Pod is scheduled, runs on the pause image, gets an address on the pod network, and
#   `kubectl exec` reaches it (kube-apiserver -> kubelet -> containerd, TLS verified each way);
# - from the pod's own network namespace, as an app sees it, kube-apiserver answers on the
#   Service IP 10.96.0.1 (kube-proxy's rules, the Service's EndpointSlice, the serving
#   certificate's SAN);
# - a deleted Pod's containers stop (the kubelet's SIGTERM) and the Pod is gone;
# - `down` leaves the host as it found it (node.sh host-state before and after).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tmp=$(mktemp -d /tmp/leasehold-realkube-node.XXXXXX)
cleanup() {
  "$here/start.sh" down "$tmp/cp" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for c in kubelet containerd kube-proxy kube-scheduler kube-controller-manager; do
    [ -f "$tmp/cp/node/$c.log" ] || continue
    echo "----- $c log (last 8 lines) -----" >&2
    tail -n 8 "$tmp/cp/node/$c.log" >&2
  done
  exit 1
}
timeout=${REALKUBE_START_TIMEOUT:-90}
# wait_until SECONDS WHAT COMMAND...: the state, not a time.
wait_until() {
  local deadline=$(($(date +%s) + $1)) what=$2
  shift 2
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "$what not within ${deadline}s"
    sleep 0.2
  done
}

"$here/node.sh" host-state >"$tmp/before"

# 1. The node.
env_lines=$("$here/start.sh" up "$tmp/cp" --node) || fail "start.sh up --node failed"
eval "$env_lines"
export KUBECONFIG KUBECACHEDIR
echo "ok: a Ready node in ${NODE_UP_SECONDS} s after the control plane"
want=$(sed -n 's/^\tk8s.io\/kubernetes \(v[0-9.]*\)$/\1/p' "$here/go.mod")
info=$(kubectl get node "$NODE_NAME" -o jsonpath='{.status.nodeInfo.kubeletVersion} {.status.nodeInfo.containerRuntimeVersion} {.status.conditions[?(@.type=="Ready")].status}')
read -r kubelet_version runtime ready <<<"$info"
[ "$kubelet_version" = "$want" ] || fail "kubelet $kubelet_version, go.mod pins $want"
[ "$ready" = True ] || fail "node not Ready: $info"
ctrd=$(awk '$1 == "require" && $2 == "github.com/containerd/containerd/v2" {print $3}' "$here/containerd/go.mod")
[ "$runtime" = "containerd://${ctrd#v}" ] || fail "runtime $runtime, containerd/go.mod pins $ctrd"
echo "ok: node $NODE_NAME Ready: kubelet $kubelet_version, $runtime"

# 2. A second node while this one is up: refused, naming the reason.
if out=$("$here/start.sh" up "$tmp/cp2" --node 2>&1); then
  "$here/start.sh" down "$tmp/cp2" >/dev/null 2>&1 || true
  fail "a second node came up beside the first"
fi
grep -q "realkube0 exists already" <<<"$out" || fail "unclear error for a second node: $out"
"$here/start.sh" down "$tmp/cp2" >/dev/null 2>&1 || true
echo "ok: a second node is refused: $(grep 'exists already' <<<"$out")"

# 3. A Pod.
kubectl run probe --image=leasehold.test/pause:1 --image-pull-policy=Never >/dev/null
kubectl wait --for=condition=Ready pod/probe --timeout="${timeout}s" >/dev/null ||
  fail "pod not Ready: $(kubectl describe pod probe | tail -n 15)"
ip=$(kubectl get pod probe -o jsonpath='{.status.podIP}')
[[ $ip == 10.244.0.* ]] || fail "pod IP $ip is not on the pod network 10.244.0.0/24"
out=$(kubectl exec probe -- /pause -v) || fail "kubectl exec failed"
[ "$out" = "pause (leasehold.test)" ] || fail "kubectl exec printed '$out'"
echo "ok: pod probe Running at $ip, kubectl exec answered '$out'"

# 4. kube-apiserver from inside the pod, through the Service IP, with the cluster's CA.
pid=$("$NODE_CTR" --address "$NODE_CONTAINERD" -n k8s.io task ls |
  awk -v id="$(kubectl get pod probe -o jsonpath='{.status.containerStatuses[0].containerID}' | sed 's|containerd://||')" \
    '$1 == id {print $2}')
[ -n "$pid" ] || fail "no task for the probe container"
slice=$(kubectl get endpointslice kubernetes -o jsonpath='{.endpoints[0].addresses[0]}:{.ports[0].port}')
[ "$slice" = "$NODE_IP:$APISERVER_PORT" ] || fail "the kubernetes Service's slice is $slice"
answer=$(nsenter -t "$pid" -n curl -s --max-time 5 --cacert "$APISERVER_CA" \
  -H "Authorization: Bearer $ADMIN_TOKEN" https://10.96.0.1/readyz) || true
[ "$answer" = ok ] || fail "https://10.96.0.1/readyz from the pod's network said '$answer'"
echo "ok: from the pod's network namespace, https://10.96.0.1/readyz (-> $slice) says ok"

# 5. Deleting the Pod stops its container.
kubectl delete pod probe --wait=true --timeout="${timeout}s" >/dev/null || fail "pod not deleted"
wait_until "$timeout" "the probe container's exit" bash -c "! kill -0 $pid"
echo "ok: pod deleted, its process $pid ended"

# 6. Nothing left behind.
"$here/start.sh" down "$tmp/cp" >/dev/null
"$here/node.sh" host-state >"$tmp/after"
diff "$tmp/before" "$tmp/after" >&2 || fail "start.sh down left the differences above on the host"
echo "ok: down left the host as it was"
