"""NodeCluster: one namespace of a single-node cluster (ControlPlane(node=True)), as the node
tests see it: kubectl and helm there, the pods, what an app container of a pod sees (/leader
on 127.0.0.1:4040 and the status file, through `kubectl exec`), and the node's runtime (ctr)
for what only the runtime can do: a process's network namespace, a SIGKILL."""
import contextlib
import json
import os
import subprocess

from .checks import Failure, check, wait_for
from .helm import HelmError, chart_value
from .paths import ROOT
from .pod_sampler import PodSidecar

NODE_IMAGES = ROOT / "tests/realkube/node_images.sh"
STATUS_FILE = "/var/run/leasehold/status.json"
SIDECAR = "leasehold"  # the chart's and the manifests' container name
API_SERVICE_IP = "10.96.0.1"  # the kubernetes Service (tests/realkube/node.sh's Service range)


def run(argv, timeout=180):
    """ARGV's stdout; a Failure with its output when it exits non-zero."""
    r = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise Failure(f"`{' '.join(map(str, argv))}` exited {r.returncode}: "
                      f"{(r.stdout + r.stderr).strip()[-3000:]}")
    return r.stdout


class NodeCluster:
    """cp: a ControlPlane(node=True); helm: a leasehold_testing.helm.Helm on cp's kubeconfig."""

    def __init__(self, cp, namespace, helm=None):
        check(cp.node, "NodeCluster needs ControlPlane(node=True)")
        self.cp, self.namespace, self.helm_runner = cp, namespace, helm
        self.ctr = [cp.env["NODE_CTR"], "--address", cp.env["NODE_CONTAINERD"], "-n", "k8s.io"]

    def import_images(self, *images):
        """IMAGES from Docker into the node's containerd (tests/realkube/node_images.sh: the
        chart's public default images get stand-ins built here; no registry)."""
        run(["bash", NODE_IMAGES, self.cp.dir, *images], timeout=600)

    def kubectl(self, *args, timeout=60, ok=True, input=None):
        """kubectl's stdout in the namespace; None when it failed and ok=False."""
        r = self.cp.kubectl("-n", self.namespace, *args, timeout=timeout, ok=ok, input=input)
        return r.stdout if r.returncode == 0 else None

    def helm(self, *args, timeout=240):
        """helm's stdout in the namespace."""
        try:
            return self.helm_runner.run(*args, "-n", self.namespace, timeout=timeout).stdout
        except HelmError as e:
            raise Failure(str(e)) from None

    def pods(self, selector=None):
        """The pods not being deleted (but helm test's), oldest first."""
        items = json.loads(self.kubectl("get", "pods", "-o", "json",
                                        *(["-l", selector] if selector else [])))["items"]
        items.sort(key=lambda p: p["metadata"]["creationTimestamp"])
        return [p for p in items if p["metadata"].get("deletionTimestamp") is None
                and not p["metadata"]["name"].endswith("-test-leader")]

    def pod(self, name):
        out = self.kubectl("get", "pod", name, "-o", "json", ok=False)
        return json.loads(out) if out else None

    @staticmethod
    def ready(pod):
        """Every container of POD (the native sidecar too) started and ready."""
        st = pod["status"]
        statuses = st.get("containerStatuses", []) + [
            c for c in st.get("initContainerStatuses", []) if c["name"] == SIDECAR]
        return bool(statuses) and all(c.get("ready") for c in statuses)

    def all_ready(self, replicas):
        """The pods, once there are REPLICAS of them (but those being deleted), all Ready."""
        pods = self.pods()
        return len(pods) == replicas and all(self.ready(p) for p in pods) and pods

    def install_chart(self, release, image, *args):
        """`helm install --wait` of charts/leasehold as RELEASE with IMAGE ("repo/name:tag",
        already in the node: pullPolicy Never) and helm's ARGS (--set ...); the chart's pods,
        every one Ready."""
        repository, tag = image.rsplit(":", 1)
        self.helm("install", release, ROOT / "charts/leasehold", "--create-namespace",
                  "--set", f"image.repository={repository}", "--set", f"image.tag={tag}",
                  "--set", "image.pullPolicy=Never", *args, "--wait", "--timeout", "180s")
        return self._ready_pods(release)

    def install_released_chart(self, release, registry, chart_version, *args, pods=True):
        """`helm install --wait` as a user installs a release (README "Installing"): the chart
        oci://REGISTRY/charts/leasehold --version CHART_VERSION as RELEASE with helm's ARGS, its
        values as pushed (the image REGISTRY/leasehold:TAG@DIGEST, pullPolicy IfNotPresent),
        so the node's containerd pulls the image from REGISTRY (an OciRegistry), verifying its
        certificate: REGISTRY's hosts.toml goes into the node's registry config_path first
        (tests/realkube/node.sh). The chart's pods, every one Ready (PODS=False: a release
        without the example, nothing to wait for)."""
        registry.write_containerd_hosts(self.cp.env["NODE_REGISTRY_CONFIG"])
        self.helm("install", release, f"oci://{registry.host}/charts/leasehold", "--version",
                  chart_version, "--ca-file", registry.ca_file, "--create-namespace", *args,
                  "--wait", "--timeout", "180s")
        return self._ready_pods(release) if pods else []

    def _ready_pods(self, release):
        replicas = chart_value("example.replicas")
        return wait_for(f"{replicas} Ready pods of {release}",
                        lambda: self.all_ready(replicas), 60, interval=0.5)

    def runtime_images(self):
        """The image refs the node's containerd holds (`ctr -n k8s.io images ls -q`)."""
        return run([*self.ctr, "images", "ls", "-q"]).split()

    def app_sees(self, pod, container="app", status_file=True):
        """(/leader's JSON, the status file's JSON) from inside POD's CONTAINER, or None while it
        cannot answer (a new pod whose app has not started). Without STATUS_FILE (a release
        with statusFile.enabled=false) the second is None."""
        name = pod["metadata"]["name"]
        answer = self.kubectl("exec", name, "-c", container, "--", "wget", "-qO-",
                              "http://127.0.0.1:4040/leader", ok=False)
        status = (self.kubectl("exec", name, "-c", container, "--", "cat", STATUS_FILE,
                               ok=False) if status_file else "null")
        if not answer or not status:
            return None
        return json.loads(answer), json.loads(status)

    @staticmethod
    def container_id(pod, container=SIDECAR):
        """The runtime's id of POD's running CONTAINER (a native sidecar is an init container)."""
        st = pod["status"]
        for c in st.get("containerStatuses", []) + st.get("initContainerStatuses", []):
            if c["name"] == container and c.get("containerID") and "running" in c["state"]:
                return c["containerID"].split("://", 1)[1]
        raise Failure(f"{pod['metadata']['name']} has no running container {container}: "
                      f"{json.dumps(st)[:1500]}")

    def task_pid(self, container_id):
        """The host PID of the runtime's task for CONTAINER_ID."""
        for line in run([*self.ctr, "tasks", "ls"]).splitlines()[1:]:
            fields = line.split()
            if fields and fields[0] == container_id:
                return int(fields[1])
        raise Failure(f"the node's containerd runs no task {container_id}")

    def sidecar_pid(self, pod):
        """The host PID of POD's running sidecar process."""
        return self.task_pid(self.container_id(pod))

    def pod_sidecar(self, pod):
        """A PodSidecar of POD for the Observer: its network namespace taken from its sidecar's
        process, or from its app container's in a pod without leasehold (client-go's elector
        inside the app answers /leader there: test_node_migration.py)."""
        names = [c["name"] for c in pod["spec"].get("initContainers", []) +
                 pod["spec"]["containers"]]
        container = SIDECAR if SIDECAR in names else "app"
        pid = self.task_pid(self.container_id(pod, container))
        return PodSidecar(pod["metadata"]["name"], f"/proc/{pid}/ns/net")

    @contextlib.contextmanager
    def cut_from_api_server(self, sidecars):
        """The pods of SIDECARS (PodSidecars) cut from the API server while inside: iptables
        DROPs to and from the kubernetes Service's port 443 in each pod's network namespace
        (the kubelet's probes and the samplers on 127.0.0.1 still reach them). Both ways: with
        only its own packets dropped, the answers of a watch opened before the cut still arrive
        (the API server retransmits what goes unacknowledged)."""
        rules = [["OUTPUT", "-p", "tcp", "-d", API_SERVICE_IP, "--dport", "443", "-j", "DROP"],
                 ["INPUT", "-p", "tcp", "-s", API_SERVICE_IP, "--sport", "443", "-j", "DROP"]]
        # Each namespace through the fd its PodSidecar holds: it outlives the process it was
        # taken from, which the kubelet may replace meanwhile.
        netns = [f"--net=/proc/{os.getpid()}/fd/{s.netns}" for s in sidecars]
        done = []
        try:
            for ns in netns:
                for rule in rules:
                    run(["nsenter", ns, "iptables", "-I", *rule])
                    done.append((ns, rule))
            yield
        finally:
            for ns, rule in done:
                run(["nsenter", ns, "iptables", "-D", *rule])

    def kill(self, pod, container=SIDECAR, signal="SIGKILL"):
        """SIGNAL to CONTAINER's process of POD through the runtime, as a crash would come: the
        kubelet sees the container exit and restarts it (restartPolicy Always)."""
        run([*self.ctr, "tasks", "kill", "--signal", signal, self.container_id(pod, container)])

    def one_leader(self, lease, but=None, selector=None, container="app", status_file=True):
        """(the pod that leads, its /leader answer) once every running pod (of SELECTOR; but the
        one named BUT, being deleted) agrees on it from inside its app CONTAINER, its status
        file says the same, and the Lease LEASE names it; else None. The pods are asked one
        after another: across a handover two of them may each say true at its own moment.
        Overlap is the Observer's to judge; this waits for a state."""
        pods = [p for p in self.pods(selector) if p["metadata"]["name"] != but
                and p["status"].get("phase") == "Running"]
        seen = {p["metadata"]["name"]: self.app_sees(p, container, status_file) for p in pods}
        if not seen or None in seen.values():
            return None
        leaders = [n for n, (a, _) in seen.items() if a.get("leader") is True]
        if len(leaders) != 1:
            return None
        lease_obj = json.loads(self.kubectl("get", "lease", lease, "-o", "json"))
        holder = lease_obj["spec"].get("holderIdentity")
        answer, _ = seen[leaders[0]]
        if answer.get("holder") != holder:
            return None
        for name, (a, st) in seen.items():
            if a.get("holder") != holder or a.get("fencingToken") != answer.get("fencingToken"):
                return None
            if status_file and st.get("leader") != (name == leaders[0]):
                return None  # the file is written just after the answer changes
        return next(p for p in pods if p["metadata"]["name"] == leaders[0]), answer

    def check_published(self, leader, pod_label, service):
        """Waits until `kubectl get pods -l POD_LABEL=true` names only LEADER and the
        EndpointSlice of SERVICE holds only its address (both follow the election)."""
        name = leader["metadata"]["name"]

        def labelled():
            out = self.kubectl("get", "pods", "-l", f"{pod_label}=true", "-o", "name")
            return out.split() == [f"pod/{name}"]
        wait_for(f"`kubectl get pods -l {pod_label}=true` to name only {name}", labelled, 30,
                 interval=0.5)

        def slice_holds_leader():
            slices = json.loads(self.kubectl(
                "get", "endpointslices", "-l", f"kubernetes.io/service-name={service}",
                "-o", "json"))["items"]
            addresses = sorted(a for s in slices for e in (s.get("endpoints") or [])
                               for a in e["addresses"])
            return addresses == [leader["status"]["podIP"]]
        wait_for(f"the Service {service}'s EndpointSlice to hold only {name}'s address",
                 slice_holds_leader, 30, interval=0.5)
