#!/usr/bin/env bash
# The leasehold demo: a test Kubernetes API server (TLS, tokens) and 3 sidecars competing for the
# Lease "demo". Shows who leads (kubectl and each sidecar's /leader), kills the leader with
# kill -9, shows the takeover after the lease duration and the fencing token going up, then
# hands over gracefully with SIGTERM. Builds what it needs; stops everything it started;
# takes about 40 seconds.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

if ! command -v cmake >/dev/null || [ ! -f /usr/include/boost/beast.hpp ] || \
   [ ! -f /usr/include/nlohmann/json.hpp ]; then
  scripts/install-deps.sh
fi
build=build/release
if [ ! -x "$build/sidecar/leasehold" ] || [ ! -x "$build/tests/apiserver/leasehold-test-apiserver" ]; then
  echo "== building (release preset; a few minutes the first time)"
  cmake --preset release >/dev/null
  cmake --build --preset release --target leasehold leasehold-test-apiserver -j "$(nproc)"
fi

tmp=$(mktemp -d /tmp/leasehold-demo.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do
    { kill -9 "$p" && wait "$p"; } 2>/dev/null || true
  done
  APISERVER_BIN="$build/tests/apiserver/leasehold-test-apiserver" tests/apiserver/start.sh down "$tmp" || true
  rm -rf "$tmp"
}
trap cleanup EXIT

export APISERVER_NAMESPACE=demo
eval "$(APISERVER_BIN="$build/tests/apiserver/leasehold-test-apiserver" tests/apiserver/start.sh up "$tmp" \
  --pod demo/web-0=10.0.0.10 --pod demo/web-1=10.0.0.11 --pod demo/web-2=10.0.0.12)"
export KUBECONFIG
echo "== test API server at $APISERVER_URL (TLS, bearer tokens); kubectl uses $KUBECONFIG"

declare -A port pid
for i in 0 1 2; do
  name=web-$i
  port[$name]=$((14040 + i))
  POD_NAME=$name POD_NAMESPACE=demo POD_IP=10.0.0.1$i \
    "$build/sidecar/leasehold" --lease-name demo --kubeconfig "$KUBECONFIG" \
    --http-address "127.0.0.1:${port[$name]}" --probe-address "127.0.0.1:$((19100 + i))" \
    --lease-duration 3s --renew-deadline 2s --retry-period 500ms \
    >"$tmp/$name.log" 2>&1 &
  pid[$name]=$!
  pids+=("$!")
done
echo "== started web-0, web-1, web-2 (D=3s R=2s P=500ms; /leader on ports 14040-14042)"

status() {  # one line per sidecar: name leader token holder
  for name in web-0 web-1 web-2; do
    if ! kill -0 "${pid[$name]}" 2>/dev/null; then
      printf '  %-6s (stopped)\n' "$name"
      continue
    fi
    curl -s --max-time 1 "http://127.0.0.1:${port[$name]}/leader" | python3 -c '
import json, sys
name = sys.argv[1]
try:
    s = json.load(sys.stdin)
except ValueError:
    print(f"  {name:6} (no answer)"); sys.exit()
mark = "LEADER" if s["leader"] else "follower"
holder, token = s["holder"], s["fencingToken"]
until = "  validUntil=" + s["validUntil"][11:23] if s["leader"] else ""
print(f"  {name:6} {mark:8} holder={holder:<16} fencingToken={token}{until}")
' "$name"
  done
}
leader() {
  for name in web-0 web-1 web-2; do
    kill -0 "${pid[$name]}" 2>/dev/null || continue
    if curl -s --max-time 1 "http://127.0.0.1:${port[$name]}/leader" | grep -q '"leader":true'; then
      echo "$name"; return
    fi
  done
}

sleep 1.5
echo; echo "== kubectl get lease demo -n demo"
kubectl get lease demo -n demo
echo; echo "== each sidecar's /leader"
status

first=$(leader)
echo; echo "== kill -9 $first (no release: the others must wait for the lease to expire)"
{ kill -9 "${pid[$first]}" && wait "${pid[$first]}"; } 2>/dev/null || true
start=$(date +%s%N)
second=""
for _ in $(seq 1 30); do
  sleep 0.4
  elapsed=$(( ($(date +%s%N) - start) / 100000000 ))
  echo "  t=+$((elapsed / 10)).$((elapsed % 10))s"
  status | grep -v "(stopped)"
  second=$(leader)
  if [ -n "$second" ]; then break; fi
done
echo "  -> $second took over after the lease duration (3s) with a higher fencing token"
echo; echo "== kubectl get lease demo -n demo -o custom-columns=HOLDER:.spec.holderIdentity,TRANSITIONS:.spec.leaseTransitions"
kubectl get lease demo -n demo -o custom-columns=HOLDER:.spec.holderIdentity,TRANSITIONS:.spec.leaseTransitions

echo; echo "== SIGTERM $second: it stops claiming, releases the lease, exits 0; the other takes over at once"
kill -TERM "${pid[$second]}"
wait "${pid[$second]}" && echo "  $second exited with 0"
sleep 0.3
status
echo; echo "== $second's log"
grep -E 'became leader|stopped leading|released|new leader' "$tmp/$second.log" | sed 's/^/  /'
echo; echo "== done: the fencing token went up with every new term; stopping everything"
