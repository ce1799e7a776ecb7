#!/usr/bin/env bash
# ctest "apiserver.golden_and_kubectl": starts leasehold-test-apiserver with fresh certificates and
# tokens (start.sh), replays the project's captures from the real kube-apiserver (golden/*.http,
# golden/replay.py; must report 0 failures), then drives it with the real kubectl: get leases
# (HOLDER column), get -o yaml, describe (with Events), label + get pods -l, and checks the
# fault/control endpoint basics.
#
# Usage: check.sh PATH/TO/leasehold-test-apiserver
set -euo pipefail

bin=${1:?usage: check.sh PATH/TO/leasehold-test-apiserver}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The project's own captures from the real kube-apiserver (golden/README.md; refreshed by
# golden/capture.py) and the one replay.py beside them.
golden=$here/golden
tmp=$(mktemp -d)

cleanup() {
  APISERVER_BIN=$bin "$here/start.sh" down "$tmp" || true
  rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

export APISERVER_BIN=$bin
export APISERVER_NAMESPACE=golden
eval "$("$here/start.sh" up "$tmp" --pod golden/web-0=10.0.0.7 --pod golden/web-1=10.0.0.8)"
export KUBECONFIG

# 1. golden replay (fresh runs first, while the watch history still starts at RV 1). The skips are
# what only a whole kube-apiserver can answer (its /version and full discovery lists).
[ -f "$golden/replay.py" ] || fail "no $golden/replay.py"
skips=(--skip version --skip discovery-apis --skip discovery-apis-coordination --skip discovery-api-aggregated-accept)
replay() {
  python3 "$golden/replay.py" --server "$APISERVER_URL" --ca "$APISERVER_CA" \
    --token "$ADMIN_TOKEN" --sa-token "$SA_TOKEN" --namespace golden "${skips[@]}" "$@"
}
out=$(replay --with rbac,anonymous,pods,fresh --loose-text) || {
  echo "$out" | grep -v '^PASS' >&2
  fail "golden replay (loose text)"
}
echo "$out" | tail -n 1
echo "$out" | grep -q '^golden: [0-9]* passed, 0 failed' || fail "replay summary: $(echo "$out" | tail -n 1)"
# exact text as well (watches already covered above)
out=$(replay --with rbac,anonymous,pods --skip 'watch-*' --skip 'rbac-sa-watch-*') || {
  echo "$out" | grep -v '^PASS' >&2
  fail "golden replay (exact text)"
}
echo "exact text: $(echo "$out" | tail -n 1)"
# the real max-in-flight 429, from the stand-in's `429` fault action
curl -sf -X POST "$APISERVER_CONTROL/faults" \
  -d '{"action":"429","client":"system:serviceaccount:golden:elector","verb":"update","count":1}' >/dev/null
out=$(replay --with overload --only lease-put-429-overload) || fail "golden 429: $out"
echo "$out" | grep -q '^golden: 1 passed, 0 failed$' || fail "golden 429: $out"
echo "429 fault: $(echo "$out" | tail -n 1)"
curl -sf -X DELETE "$APISERVER_CONTROL/faults" >/dev/null

# 2. kubectl
kc() { kubectl --cache-dir "$tmp/kube-cache" --request-timeout=20s "$@"; }
kc create --validate=false -f - >/dev/null <<'EOF'
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: my-app
spec:
  holderIdentity: web-0_3f9a1c2b
  leaseDurationSeconds: 15
  leaseTransitions: 4
  acquireTime: "2026-01-02T03:04:05.000000Z"
  renewTime: "2026-01-02T03:04:05.123456Z"
EOF
out=$(kc get leases)
echo "$out"
echo "$out" | head -n 1 | grep -Eq '^NAME +HOLDER +AGE' || fail "get leases: no HOLDER column"
echo "$out" | grep -Eq '^my-app +web-0_3f9a1c2b ' || fail "get leases: holder not shown"

out=$(kc get lease my-app -o yaml)
echo "$out" | grep -q 'holderIdentity: web-0_3f9a1c2b' || fail "get -o yaml: $out"
echo "$out" | grep -q 'leaseTransitions: 4' || fail "get -o yaml: transitions"
uid=$(kc get lease my-app -o jsonpath='{.metadata.uid}')

curl -sf --cacert "$APISERVER_CA" -H "Authorization: Bearer $ADMIN_TOKEN" \
  -H 'Content-Type: application/json' -A leasehold/check \
  -X POST "$APISERVER_URL/api/v1/namespaces/golden/events" \
  -d '{"metadata":{"name":"my-app.1"},"involvedObject":{"kind":"Lease","namespace":"golden","name":"my-app","uid":"'"$uid"'","apiVersion":"coordination.k8s.io/v1"},"reason":"LeaderElection","message":"web-0_3f9a1c2b became leader","source":{"component":"leasehold"},"firstTimestamp":"2026-01-02T03:04:05Z","lastTimestamp":"2026-01-02T03:04:05Z","count":1,"type":"Normal"}' \
  >/dev/null || fail "create event"
out=$(kc describe lease my-app)
echo "$out" | grep -q 'Holder Identity: *web-0_3f9a1c2b' || fail "describe: holder: $out"
echo "$out" | grep -Eq 'Normal +LeaderElection .*web-0_3f9a1c2b became leader' || fail "describe: events: $out"

kc label pod web-0 leasehold.io/leader=true >/dev/null || fail "label pod"
kc label pod web-1 leasehold.io/leader=false >/dev/null || fail "label pod"
out=$(kc get pods -l leasehold.io/leader=true)
echo "$out"
echo "$out" | grep -Eq '^web-0 ' || fail "get pods -l: web-0 missing"
echo "$out" | grep -q 'web-1' && fail "get pods -l: web-1 should not match"
out=$(kc get pods -l leasehold.io/leader=false -o name)
[ "$out" = "pod/web-1" ] || fail "get pods -l ...=false: $out"

# 3. RBAC through kubectl: the elector SA may read lease-a only
kc --kubeconfig "$tmp/elector.kubeconfig" get lease my-app >/dev/null 2>&1 && fail "SA read my-app"
err=$(kc --kubeconfig "$tmp/elector.kubeconfig" get lease my-app 2>&1 || true)
echo "$err" | grep -q 'cannot get resource "leases"' || fail "SA error text: $err"

# 4. control endpoint: counters and a fault
curl -sf -X DELETE "$APISERVER_CONTROL/counters" >/dev/null
curl -sf -X POST "$APISERVER_CONTROL/faults" -d '{"action":"error","status":503,"verb":"get","count":1}' >/dev/null
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$APISERVER_CA" \
  -H "Authorization: Bearer $ADMIN_TOKEN" "$APISERVER_URL/apis/coordination.k8s.io/v1/namespaces/golden/leases/my-app")
[ "$code" = 503 ] || fail "fault: expected 503, got $code"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$APISERVER_CA" \
  -H "Authorization: Bearer $ADMIN_TOKEN" "$APISERVER_URL/apis/coordination.k8s.io/v1/namespaces/golden/leases/my-app")
[ "$code" = 200 ] || fail "after fault: expected 200, got $code"
counters=$(curl -sf "$APISERVER_CONTROL/counters")
[ "$counters" = '{"admin":{"get":2}}' ] || fail "counters: $counters"

echo "apiserver check: OK"
