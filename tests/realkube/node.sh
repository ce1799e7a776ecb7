#!/usr/bin/env bash
# The single node of tests/realkube: what `start.sh up DIR --node` adds to the control plane, and
# what `start.sh down DIR` takes away again. Called by start.sh only (it sources nothing here).
#
#   node.sh net-up DIR      the node's bridge (realkube0, 10.244.0.1/24): the address the node,
#                           kube-apiserver and the pods share, made before kube-apiserver binds it
#   node.sh up DIR          after the control plane is ready: containerd (CRI, runc, CNI bridge),
#                           the pause image, kube-controller-manager, kube-scheduler, kube-proxy
#                           and a kubelet whose Node registers and turns Ready; prints NODE_* lines
#   node.sh down DIR        stops all of it and leaves nothing behind: processes (the pods' too),
#                           mounts, the pods' veths and namespaces, kube-proxy's and the
#                           kubelet's iptables rules, the kubelet's cgroups
#   node.sh net-down DIR    after kube-apiserver has stopped (it deletes its endpoint Lease
#                           through the bridge address as it goes): the bridge, and the host
#                           sysctls the kubelet and kube-proxy change, as they were before net-up
#   node.sh host-state      what a node could leave on the host (links, mounts, iptables rules,
#                           the sysctls, cgroups, runtime folders, its processes): compare the
#                           output before `up` and after `down` (check_node.sh does)
#
# Everything of the node lives in DIR/node. The facts it rests on (cgroup v1, containerd's
# restrict_oom_score_adj, the Node authorizer, ...) are in tests/realkube/README.md.
# Why ~470 lines in one file: the configurations of five components that must agree with each
# other (addresses, certificates, sockets, folders), and a `down` that undoes each thing they do
# to the host; split, each half would have to know the other's paths.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source-path=SCRIPTDIR/../lib/leasehold_testing source=stop_pidfile.sh
. "$root/tests/lib/leasehold_testing/stop_pidfile.sh"
bindir=${REALKUBE_BIN_DIR:-$root/build/realkube/bin}
timeout=${REALKUBE_START_TIMEOUT:-90}
node_name=realkube-node
bridge=realkube0
node_ip=10.244.0.1
pod_cidr=10.244.0.0/24
service_cidr=10.96.0.0/24
pause_image=leasehold.test/pause:1
# What the kubelet and kube-proxy change on the host, restored by `down`.
sysctls=(kernel.panic kernel.panic_on_oops vm.overcommit_memory vm.panic_on_oom
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.conf.all.route_localnet
  net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables)
components=(kubelet kube-proxy kube-scheduler kube-controller-manager)

die() {
  echo "realkube/node.sh: $*" >&2
  exit 1
}

free_ports() {
  PYTHONPATH="$root/tests/lib${PYTHONPATH:+:$PYTHONPATH}" python3 -c '
import sys
from leasehold_testing.ports import free_port
print(" ".join(str(free_port()) for _ in range(int(sys.argv[1]))))' "$1"
}

# sign DIR NAME SUBJECT EXT: NAME.key and NAME.crt signed by DIR's CA (start.sh's make_certs).
sign() {
  local dir=$1 name=$2 subj=$3 ext=$4 n=$1/node/$2
  openssl req -newkey rsa:2048 -nodes -subj "$subj" -keyout "$n.key" -out "$n.csr" >/dev/null 2>&1
  printf '%s\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n' "$ext" >"$n.ext"
  openssl x509 -req -in "$n.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial -days 2 \
    -extfile "$n.ext" -out "$n.crt" >/dev/null 2>&1
}

# The certificates kube-apiserver needs for the node before it starts (start.sh calls net-up
# first): its client certificate towards the kubelet.
node_certs() {
  local dir=$1
  [ -f "$dir/node/apiserver-kubelet-client.crt" ] && return
  sign "$dir" apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" \
    "extendedKeyUsage=clientAuth"
  sign "$dir" kubelet-client "/O=system:nodes/CN=system:node:$node_name" \
    "extendedKeyUsage=clientAuth"
  sign "$dir" kubelet-server "/CN=$node_name" \
    "subjectAltName=IP:$node_ip,DNS:$node_name
extendedKeyUsage=serverAuth"
}

launch() {
  local dir=$1 name=$2
  shift 2
  "$@" >>"$dir/node/$name.log" 2>&1 &
  echo $! >"$dir/node/$name.pid"
}

# fail_with DIR NAME MESSAGE: the component's log tail, then the message.
fail_with() {
  echo "----- $2 log (last 25 lines): $1/node/$2.log -----" >&2
  tail -n 25 "$1/node/$2.log" >&2 2>/dev/null || true
  die "$3"
}

# wait_for DIR NAME WHAT COMMAND...: until COMMAND succeeds, while NAME runs, for $timeout s.
wait_for() {
  local dir=$1 name=$2 what=$3 deadline pid
  shift 3
  deadline=$(($(date +%s) + timeout))
  pid=$(cat "$dir/node/$name.pid")
  until "$@" >/dev/null 2>&1; do
    kill -0 "$pid" 2>/dev/null || fail_with "$dir" "$name" "$name exited before $what"
    [ "$(date +%s)" -lt "$deadline" ] || fail_with "$dir" "$name" "no $what within ${timeout}s"
    sleep 0.2
  done
}

net_up() {
  local dir=$1
  # Before anything is written: a DIR whose net-up was refused has nothing for down to undo.
  if ip link show "$bridge" >/dev/null 2>&1; then
    die "$bridge exists already: another node is up (start.sh down its DIR), or a crashed one left it (ip link del $bridge)"
  fi
  mkdir -p "$dir/node"
  if [ ! -f "$dir/node/sysctl.saved" ]; then
    local k
    for k in "${sysctls[@]}"; do
      sysctl -n "$k" >/dev/null 2>&1 && echo "$k=$(sysctl -n "$k")"
    done >"$dir/node/sysctl.saved"
  fi
  [ -f "$dir/node/iptables.before" ] || kube_chains >"$dir/node/iptables.before"
  [ -d /run/containerd ] || touch "$dir/node/run-containerd.made"
  # Folders the kubelet and the CNI library use whatever they are told: removed by down when
  # up made them.
  local f
  for f in /var/log/containers /var/lib/kubelet /var/lib/cni; do
    [ -d "$f" ] || touch "$dir/node/$(echo "${f#/}" | tr / -).made"
  done
  touch "$dir/node/bridge.made"
  ip link add "$bridge" type bridge
  ip addr add "$node_ip/24" dev "$bridge"
  ip link set "$bridge" up
  # Pods reach kube-apiserver through kube-proxy's DNAT of the Service IP: routed, not bridged.
  sysctl -qw net.ipv4.ip_forward=1
  node_certs "$dir"
}

write_configs() {
  local dir=$1 n=$1/node p_kubelet=$2 p_healthz=$3 p_proxy=$4 p_metrics=$5
  mkdir -p "$n/cni/net.d" "$n/pods-logs" "$n/kubelet" "$n/certs.d"
  cat >"$n/containerd.toml" <<EOF
version = 4
root = '$n/containerd/root'
state = '$n/containerd/state'
imports = []
# NRI would leave its socket in /var/run/nri; nothing here uses it.
disabled_plugins = ['io.containerd.nri.v1.nri']
[plugins.'io.containerd.server.v1.grpc']
  address = '$n/containerd.sock'
[plugins.'io.containerd.server.v1.ttrpc']
  address = '$n/containerd.sock.ttrpc'
[plugins.'io.containerd.server.v1.debug']
  address = ''
[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = '$pause_image'
  # The registries' hosts.toml (HOST:PORT/hosts.toml: server, ca) in the node's own folder, not
  # containerd's default /etc/containerd/certs.d:/etc/docker/certs.d: a test that pulls from its
  # registry writes one here (OciRegistry.write_containerd_hosts), and containerd then verifies
  # the registry's certificate with its CA (without one it skips that for a loopback host).
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = '$n/certs.d'
[plugins.'io.containerd.cri.v1.runtime']
  # root here lacks CAP_SYS_RESOURCE: without it runc fails every sandbox ("can't get final
  # child's PID from pipe: EOF") when it lowers the OOM score below the runtime's own.
  restrict_oom_score_adj = true
  # The pods' network namespaces under DIR, so that down finds and unmounts every one.
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ['/usr/lib/cni']
    conf_dir = '$n/cni/net.d'
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
    BinaryName = '$(command -v runc)'
    Root = '$n/runc'
    SystemdCgroup = false
EOF
  # The pods on the node's bridge; their default route is the node, no masquerading (nothing
  # leaves the machine), so the bridge plugin writes no iptables rule.
  cat >"$n/cni/net.d/10-realkube.conflist" <<EOF
{"cniVersion": "1.0.0", "name": "realkube", "plugins": [
  {"type": "bridge", "bridge": "$bridge", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "$n/cni/ipam",
            "ranges": [[{"subnet": "$pod_cidr", "gateway": "$node_ip"}]],
            "routes": [{"dst": "0.0.0.0/0"}]}}]}
EOF
  cat >"$n/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $node_ip
port: $p_kubelet
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $p_healthz
tlsCertFile: $n/kubelet-server.crt
tlsPrivateKeyFile: $n/kubelet-server.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $dir/ca.crt}
authorization: {mode: Webhook}
# cgroup v1 (this kind of machine): supported, but only when asked for.
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$n/containerd.sock
failSwapOn: false
resolvConf: /etc/resolv.conf
podLogsDir: $n/pods-logs
makeIPTablesUtilChains: false
serializeImagePulls: false
# A test machine's disk may be fuller than a node's defaults allow: no eviction for disk.
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, nodefs.inodesFree: 1%, imagefs.available: 1%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
EOF
  cat >"$n/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clusterCIDR: $pod_cidr
hostnameOverride: $node_name
clientConnection: {kubeconfig: $dir/admin.kubeconfig}
bindAddress: 127.0.0.1
healthzBindAddress: 127.0.0.1:$p_proxy
metricsBindAddress: 127.0.0.1:$p_metrics
# Leave the host's conntrack table sizes and timeouts alone.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
# No NodePorts on 127.0.0.1: that would need route_localnet on every interface.
iptables: {localhostNodePorts: false}
nodePortAddresses: [$node_ip/32]
EOF
  PYTHONPATH="$root/tests/lib${PYTHONPATH:+:$PYTHONPATH}" python3 - "$dir" "$n" "$node_ip" <<'EOF'
import sys
from pathlib import Path
dir_, n, ip = sys.argv[1:]
url = [l.split("=", 1)[1] for l in Path(dir_, "env").read_text().splitlines()
       if l.startswith("APISERVER_URL=")][0]
Path(n, "kubelet.kubeconfig").write_text(f"""apiVersion: v1
kind: Config
clusters:
- name: realkube
  cluster: {{server: "{url}", certificate-authority: "{dir_}/ca.crt"}}
users:
- name: kubelet
  user: {{client-certificate: "{n}/kubelet-client.crt", client-key: "{n}/kubelet-client.key"}}
contexts:
- name: kubelet
  context: {{cluster: realkube, user: kubelet}}
current-context: kubelet
""")
EOF
}

# The pause image: the static pause program (build.sh) in an image FROM scratch, built by
# Docker and imported into containerd's k8s.io namespace (no registry can be reached).
import_pause() {
  local dir=$1 ctx
  ctx=$(mktemp -d "$dir/node/pause.XXXXXX")
  cp "$bindir/pause" "$ctx/pause"
  printf 'FROM scratch\nCOPY pause /pause\nENTRYPOINT ["/pause"]\n' >"$ctx/Dockerfile"
  docker build -q -t "$pause_image" "$ctx" >"$ctx/build.log" 2>&1 ||
    { cat "$ctx/build.log" >&2; die "docker build of $pause_image failed"; }
  docker save "$pause_image" | "$bindir/ctr" --address "$dir/node/containerd.sock" -n k8s.io \
    images import --snapshotter overlayfs - >/dev/null
  rm -rf "$ctx"
}

node_ready() {
  [ "$(kubectl get node "$node_name" \
    -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}

up() {
  local dir=$1 t0 b
  t0=$(date +%s.%N)
  for b in containerd containerd-shim-runc-v2 ctr kubelet kube-proxy kube-scheduler \
    kube-controller-manager pause; do
    [ -x "$bindir/$b" ] || die "$bindir/$b not found: run tests/realkube/build.sh --node"
  done
  command -v runc >/dev/null || die "runc not found: run scripts/install-deps.sh"
  [ -x /usr/lib/cni/bridge ] || die "/usr/lib/cni/bridge not found: run scripts/install-deps.sh"
  local p_kubelet p_healthz p_kcm p_sched p_proxy p_metrics
  read -r p_kubelet p_healthz p_kcm p_sched p_proxy p_metrics <<<"$(free_ports 6)"
  write_configs "$dir" "$p_kubelet" "$p_healthz" "$p_proxy" "$p_metrics"
  export KUBECONFIG=$dir/admin.kubeconfig KUBECACHEDIR=$dir/kubecache
  local n=$dir/node
  # containerd's shims find their binary on PATH.
  export PATH="$bindir:$PATH"
  launch "$dir" containerd "$bindir/containerd" --config "$n/containerd.toml"
  wait_for "$dir" containerd "containerd's socket" \
    "$bindir/ctr" --address "$n/containerd.sock" version
  import_pause "$dir"
  launch "$dir" kube-controller-manager "$bindir/kube-controller-manager" \
    --kubeconfig="$dir/admin.kubeconfig" --authentication-kubeconfig="$dir/admin.kubeconfig" \
    --authorization-kubeconfig="$dir/admin.kubeconfig" --authentication-skip-lookup=true \
    --bind-address=127.0.0.1 --secure-port="$p_kcm" --leader-elect=false \
    --service-account-private-key-file="$dir/sa.key" --root-ca-file="$dir/ca.crt" \
    --use-service-account-credentials=true --controllers='*,-nodeipam' \
    --service-cluster-ip-range="$service_cidr"
  launch "$dir" kube-scheduler "$bindir/kube-scheduler" \
    --kubeconfig="$dir/admin.kubeconfig" --authentication-kubeconfig="$dir/admin.kubeconfig" \
    --authorization-kubeconfig="$dir/admin.kubeconfig" --authentication-skip-lookup=true \
    --bind-address=127.0.0.1 --secure-port="$p_sched" --leader-elect=false
  launch "$dir" kube-proxy "$bindir/kube-proxy" --config="$n/kube-proxy.yaml"
  launch "$dir" kubelet "$bindir/kubelet" --config="$n/kubelet.yaml" \
    --kubeconfig="$n/kubelet.kubeconfig" --hostname-override="$node_name" \
    --node-ip="$node_ip" --root-dir="$n/kubelet"
  wait_for "$dir" kubelet "a Ready node $node_name" node_ready
  local c
  for c in kube-controller-manager kube-scheduler kube-proxy containerd; do
    kill -0 "$(cat "$n/$c.pid")" 2>/dev/null || fail_with "$dir" "$c" "$c exited"
  done
  # Pods need their namespace's ServiceAccount, which the controller-manager makes.
  wait_for "$dir" kube-controller-manager "the default ServiceAccount" \
    kubectl -n default get serviceaccount default
  {
    echo "NODE_NAME=$node_name"
    echo "NODE_IP=$node_ip"
    echo "NODE_CONTAINERD=$n/containerd.sock"
    echo "NODE_CTR=$bindir/ctr"
    echo "NODE_REGISTRY_CONFIG=$n/certs.d"
    echo "NODE_UP_SECONDS=$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}")"
  } | tee -a "$dir/env"
}

# kube_chains: "COMMAND TABLE CHAIN" for every KUBE-* chain of iptables and ip6tables now.
kube_chains() {
  local c t
  for c in iptables ip6tables; do
    command -v "$c" >/dev/null || continue
    for t in filter nat mangle raw; do
      "$c" -t "$t" -S 2>/dev/null | awk -v c="$c" -v t="$t" '$1 == "-N" && $2 ~ /^KUBE-/ {print c, t, $2}'
    done
  done
}

# remove_new_chains DIR: the KUBE-* chains that were not there before `up` and that the
# kubelet or kube-proxy left (kube-proxy --cleanup does not take the kubelet's KUBE-FIREWALL):
# the rules that jump to them, then the chains.
remove_new_chains() {
  local c t chain rule
  local -a args
  kube_chains | grep -vxF -f "$1/node/iptables.before" | while read -r c t chain; do
    "$c" -t "$t" -S 2>/dev/null | grep -E -- "-j $chain( |\$)" | grep '^-A ' | while read -r rule; do
      read -r -a args <<<"${rule/#-A/-D}"
      "$c" -t "$t" "${args[@]}" 2>/dev/null || true
    done
    "$c" -t "$t" -F "$chain" 2>/dev/null || true
    echo "$c $t $chain"
  done | while read -r c t chain; do "$c" -t "$t" -X "$chain" 2>/dev/null || true; done
}

# The sockets of this node's shims in /run/containerd/s (containerd puts them there whatever
# its state directory): named by the sha256 of "ADDRESS/NAMESPACE/ID", as containerd names them.
remove_shim_sockets() {
  local n=$1/node id d
  for d in "$n"/containerd/state/io.containerd.runtime.v2.task/k8s.io/*/; do
    [ -d "$d" ] || continue
    id=$(basename "$d")
    rm -f "/run/containerd/s/$(printf '%s' "$n/containerd.sock/k8s.io/$id" | sha256sum | cut -c1-64)"
  done
  if [ -f "$n/run-containerd.made" ]; then
    rmdir /run/containerd/s /run/containerd/runc/k8s.io /run/containerd/runc /run/containerd 2>/dev/null || true
  fi
}

# Every process in the kubelet's pod cgroups: the pods' containers, whatever they forked.
pod_pids() {
  find /sys/fs/cgroup/pids/kubepods -name cgroup.procs -exec cat {} + 2>/dev/null || true
}

# containerd's shims of this node: their command line names this node's containerd socket.
shim_pids() {
  local f pid
  for f in /proc/[0-9]*/cmdline; do
    pid=${f#/proc/}
    pid=${pid%/cmdline}
    { tr '\0' '\n' <"$f"; } 2>/dev/null | grep -qxF "$1/node/containerd.sock" && echo "$pid"
  done
  return 0
}

down() {
  local dir=$1 n=$1/node c pid d
  [ -d "$n" ] || return 0
  # All at once: each may take its 5 s to shut down on SIGTERM before its SIGKILL.
  for c in "${components[@]}"; do stop_pidfile "$n/$c.pid" TERM 50 & done
  wait
  # The pods' processes: SIGKILL until the cgroups are empty (bounded: 10 s).
  for _ in $(seq 1 100); do
    [ -n "$(pod_pids)" ] || break
    for pid in $(pod_pids); do kill -9 "$pid" 2>/dev/null || true; done
    sleep 0.1
  done
  stop_pidfile "$n/containerd.pid" TERM 50
  for pid in $(shim_pids "$dir"); do kill -9 "$pid" 2>/dev/null || true; done
  remove_shim_sockets "$dir"
  # Mounts under the node's folder (rootfs overlays, volumes, shm, network namespaces), the
  # deepest first.
  local m
  for m in $(findmnt -rn -o TARGET | grep -F "$n/" | awk '{print length, $0}' | sort -rn | cut -d' ' -f2-); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done
  # kube-proxy's rules (iptables and nftables), as kube-proxy itself removes them.
  if [ -x "$bindir/kube-proxy" ] && [ -f "$n/kube-proxy.yaml" ]; then
    "$bindir/kube-proxy" --cleanup --config="$n/kube-proxy.yaml" >>"$n/kube-proxy.log" 2>&1 || true
  fi
  if [ -f "$n/iptables.before" ]; then remove_new_chains "$dir"; fi
  # The kubelet's cgroups in every hierarchy, the deepest first (empty now).
  local h
  for h in /sys/fs/cgroup/*/; do
    if [ -d "$h/kubepods" ]; then
      find "$h/kubepods" -depth -type d -exec rmdir {} + 2>/dev/null || true
    fi
  done
  # The kubelet's links to the pods' logs (it writes them to /var/log/containers always).
  find /var/log/containers -maxdepth 1 -type l -lname "$n/*" -delete 2>/dev/null || true
  # The kubelet's device-plugin socket (always /var/lib/kubelet/device-plugins) and the CNI
  # library's cached results of this node's sandboxes (always /var/lib/cni/results).
  rm -f /var/lib/kubelet/device-plugins/kubelet.sock
  local id
  for d in "$n"/containerd/state/io.containerd.grpc.v1.cri/sandboxes/*/; do
    [ -d "$d" ] || continue
    id=$(basename "$d")
    rm -f "/var/lib/cni/results/realkube-$id-eth0" "/var/lib/cni/results/cni-loopback-$id-lo"
  done
  local f
  for f in /var/log/containers /var/lib/kubelet /var/lib/cni; do
    if [ -f "$n/$(echo "${f#/}" | tr / -).made" ]; then
      find "$f" -depth -type d -exec rmdir {} + 2>/dev/null || true
    fi
  done
  return 0
}

net_down() {
  local n=$1/node
  [ -f "$n/bridge.made" ] || return 0
  ip link del "$bridge" 2>/dev/null || true
  if [ -f "$n/sysctl.saved" ]; then
    sysctl -q -p "$n/sysctl.saved" >/dev/null 2>&1 || true
  fi
}

host_state() {
  # Docker's own links, mounts and rules come and go with the tests' containers.
  ip -o link | awk '{print $2}' | grep -v -E '^(veth|docker|br-)' || true
  findmnt -rn -o TARGET | grep -v -E '^(/var/lib/docker|/run/docker)' || true
  local c t
  for c in iptables ip6tables; do
    for t in filter nat mangle raw; do
      "$c" -t "$t" -S 2>/dev/null | grep -v -i docker | sed "s/^/$c $t /"
    done
  done
  sysctl "${sysctls[@]}" 2>/dev/null || true
  ls -d /sys/fs/cgroup/*/kubepods /run/containerd /var/log/containers /run/netns/* /var/run/nri \
    /var/lib/kubelet /var/lib/cni 2>/dev/null || true
  ip -o addr show to "$pod_cidr" 2>/dev/null || true
  # shellcheck disable=SC2009 # every matching process, whoever started it: pgrep names one
  ps -eo args | grep -E '^[^ ]*(containerd-shim-runc-v2|kubelet|kube-proxy|/pause)( |$)' || true
}

cmd=${1:-}
case "$cmd" in
host-state) host_state ;;
net-up) net_up "${2:?usage: node.sh net-up DIR}" ;;
up) up "${2:?usage: node.sh up DIR}" ;;
down) down "${2:?usage: node.sh down DIR}" ;;
net-down) net_down "${2:?usage: node.sh net-down DIR}" ;;
*)
  sed -n '2,/^set -euo/{/^set -euo/d;p}' "$0"
  exit 2
  ;;
esac
