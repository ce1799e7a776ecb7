#!/usr/bin/env python3
"""The chart installed for real, as a user installs a release: `helm install demo
oci://REGISTRY/charts/leasehold --version X` on a single-node cluster with a real kubelet
(tests/realkube/start.sh up DIR --node), then what users do to its pods.

    test_node_chart.py --build-dir DIR --tools DIR [--helm BIN] [STEP...]

First scripts/release.sh publishes this checkout (leasehold_testing.release_run: a clone with
the work tree's changes committed, this build's binaries through --build-dir, amd64 only) to a
local registry with TLS from a test CA (leasehold_testing.oci_registry). The chart is installed
from there with its values as pushed: the image REGISTRY/leasehold:VERSION@sha256:<the index's
digest>, pullPolicy IfNotPresent, which the node's containerd pulls from the registry, verifying
its certificate (the registry's hosts.toml in the node's config_path, tests/realkube/node.sh).
Nothing imports leasehold's image into the node: the test checks that the node holds none
before the install, and after it that every sidecar runs the pinned ref, the kubelet's imageID
has the digest and containerd holds REGISTRY/leasehold@DIGEST. Only the chart's default busybox
and curl images are imported, as stand-ins (tests/realkube/node_images.sh). The chart's
defaults (D=15s R=10s P=2s, 3 replicas) but an app that takes 2 s to stop, plus
podLabel=leasehold.io/leader and the leader Service.

The app side is judged from inside the pods, as an app sees it: `kubectl exec` into each pod's
app container (/leader on 127.0.0.1:4040, the status file on the shared emptyDir), and, from the
install to the end, the samplers of the integration tests in each pod's network namespace
(pod_sampler: /leader every 10 ms; the Observer checks that no two claims overlap and that
tokens only go up) and a fenced writer per pod (the chaos runs' FencedWriter: the store must
never accept a lower token than one it accepted).

install (always): every pod Ready under the kubelet's probes; exactly one pod answers
  leader=true, every pod names the same holder and token, its status file says the same, and
  the Lease's holderIdentity is its identity; `kubectl get pods -l leasehold.io/leader=true`
  names exactly the leader and the leader Service's EndpointSlice holds exactly its pod IP
  (the states are waited for: they follow the election). Each step ends back in that state.
Steps (default: delete crash helmtest ct reinstall, the gate's; the others run in the full suite):
  delete    `kubectl delete pod` of the leader: the kubelet stops the app container, which
            takes APP_DRAIN (2 s) to exit, then the native sidecar, which releases the Lease:
            the sidecar leads through the app's drain, and another pod says leader=true, with a
            higher token, no sooner than APP_DRAIN and sooner than D - P after the delete (a
            takeover on expiry could come no sooner: the deleted leader renewed at most P
            before it);
  crash     the leader's sidecar killed (SIGKILL through the node's containerd): the kubelet
            restarts the container, whose process leads under a new identity or not; nobody
            leads before D - P after the kill (no release: the Lease expires), somebody does by
            D + P + slack, with a higher token, and the pod turns Ready again;
  helmtest  `helm test` runs its pod on the node (its own native sidecar, curl on /leader
            until it names a holder) and it succeeds, with no status written by the test; then
            its pod, ServiceAccount, Role and RoleBinding are deleted (hook-succeeded) and the
            Lease has the same holder and token (the test's Role only reads it);
  ct        chart-testing's `ct install --config tests/deploy/ct.yaml` (ct from
            tests/release/tools/build.sh, in --tools): charts/leasehold from this checkout with
            its defaults but the released image (--helm-extra-set-args), in a namespace of ct's
            own: helm install --wait, kubectl rollout status of the Deployment, `helm test` for
            real, then ct's clean-up (helm uninstall, the namespace deleted and gone); the demo
            release's leader is not disturbed (the next step's settle, the samplers);
  reinstall `helm uninstall --wait`, then `helm install` at once: the chart's pre-delete hook
            (`leasehold scale-down`) took the pods down while their Role existed, so the Lease
            is released (holder empty, leaseTransitions not lower: the fencing token survives),
            no pod and no hook object is left when helm returns; the new release's first
            leader takes the released Lease (token one more) within 2 s of its pods being
            Ready (their Ready condition, whole seconds) and well before D after the
            uninstall; without the hook it waited the D of the dead holder.
  rollout   `kubectl rollout restart`: the leadership changes (at most one per pod) and the time
            with no leader (shorter than D - P: every handover is a release);
  evict     every pod evicted through the Eviction API, one at a time under a
            PodDisruptionBudget of maxUnavailable 1 (as `kubectl drain` of each node): the same;
  memory    1,000 SSE clients (near the sidecar's 1,024 connections) and 4 /leader loops on
            the leader's sidecar from inside its pod for 20 s, with two releases: its
            container's memory cgroup peaks under the chart's limit (32Mi), never restarted;
  probes    the leader's pod cut from the API server (iptables in its network namespace):
            another pod leads after the Lease could expire; the kubelet restarts the cut
            sidecar on /healthz no sooner than D + 20 s after its last renewal; the new process
            stays live and not Ready until the API server is back.
Then `helm uninstall` removes the pods. The times are printed.
Needs root, docker, the node's binaries (tests/realkube/build.sh --node), Debian's
docker-registry and the release tools (tests/release/tools/build.sh).

Over 400 lines: one node and one release for all the steps (each a method of 20-60 lines),
because bringing them up is the costly part (a minute or more)."""
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from leasehold_testing import chart_suite, node_release
from leasehold_testing.checks import Failure, check, log, run_steps, wait_for
from leasehold_testing.control_plane import ControlPlane
from leasehold_testing.helm import Helm, HelmError, chart_value
from leasehold_testing.kube_time import epoch
from leasehold_testing.node_cluster import NodeCluster
from leasehold_testing.node_release import NodeRelease, product_images
from leasehold_testing.oci_registry import OciRegistryError
from leasehold_testing.paths import ROOT
from leasehold_testing.pod_load import PodLoad
from leasehold_testing.pod_watch import PodWatch

from leasehold_testing.quantities import memory_bytes, parse_duration

NAMESPACE = "node-chart"
RELEASE = "demo"
POD_LABEL = "leasehold.io/leader"
LEADER_SERVICE = f"{RELEASE}-leader"
# What a loaded 2-core machine adds to a timing bound: the kubelet's reaction to a container's
# exit, a sampler's 10 ms turn, a kubectl call (~0.1 s) and the scheduling of all of them.
SLACK = 5.0
# The app container as the test installs it: the chart's example, but at SIGTERM it takes this
# long to stop (an app finishing its work). A native sidecar stops after the app, so the leader
# leads through it: another pod can lead no sooner than this after the delete.
APP_DRAIN = 2.0
# SSE clients on the leader: close to HttpServer's maxConnections (1,024), which closes more on
# accept, and leaves room for the samplers, the writer, the askers and the releases.
MEMORY_STREAMS = 1000
MEMORY_LOAD_SECONDS = 20.0
CT_CONFIG = ROOT / "tests/deploy/ct.yaml"
APP_COMMAND = ["/bin/sh", "-c", f"trap 'sleep {APP_DRAIN:.0f}; exit 0' TERM; while true; do "
               "wget -qO- http://127.0.0.1:4040/leader || echo 'sidecar not answering'; echo; "
               "sleep 5 & wait $!; done"]


def restarts(pod):
    return next(c["restartCount"] for c in pod["status"]["initContainerStatuses"]
                if c["name"] == "leasehold")


class Scenarios:
    """The steps after the install, each from a state with one leader that every pod agrees on
    and back to it; `leader` and `answer` are that state."""

    def __init__(self, cluster, watch, rel, tools):
        self.cluster, self.watch, self.rel, self.tools = cluster, watch, rel, tools
        self.d, self.p = (parse_duration(chart_value(f"timings.{k}"))
                          for k in ("leaseDuration", "retryPeriod"))
        self.replicas = chart_value("example.replicas")
        self.leader = self.answer = None
        self.install = None  # helm install of the release, as at the start (reinstall)

    def settle(self, what, but=None):
        """Waits for every pod Ready and one leader, published; returns it."""
        wait_for(f"the Deployment back to {self.replicas} Ready pods", self.all_ready, 180,
                 interval=0.5)
        self.leader, self.answer = wait_for(
            f"every pod to agree on the leader {what}", lambda: self.cluster.one_leader(
                RELEASE, but=but), 60, interval=0.5)
        self.cluster.check_published(self.leader, POD_LABEL, LEADER_SERVICE)
        return self.leader["metadata"]["name"]

    def all_ready(self):
        return self.cluster.all_ready(self.replicas)

    def delete(self):
        """kubectl delete pod of the leader: released, so another leads sooner than D - P."""
        d, p = self.d, self.p
        name = self.leader["metadata"]["name"]
        t0 = time.time()
        self.cluster.kubectl("delete", "pod", name, "--wait=false")
        took, first = wait_for("another pod to say leader=true after the leader's deletion",
                               lambda: self.watch.first_true(t0, self.answer["fencingToken"]),
                               d + SLACK, interval=0.1)
        check(first["identity"] != self.answer["identity"],
              f"{name}'s sidecar led again after its delete")
        check(took < d - p, f"the new leader came {took:.1f}s after the delete: not before the "
                            f"Lease could have expired (D - P = {d - p:.0f}s), so not released")
        check(took >= APP_DRAIN, f"the new leader came {took:.2f}s after the delete, before the "
                                 f"app's {APP_DRAIN:.0f} s drain ended: the sidecar was stopped "
                                 "beside the app, not after it")
        wait_for(f"{name} to be gone", lambda: self.cluster.pod(name) is None, 60, interval=0.5)
        new = self.settle("after the delete", but=name)
        check(new != name and self.answer["fencingToken"] == first["fencingToken"],
              f"the pods agree on {new} with token {self.answer['fencingToken']}; the first "
              f"leader after the delete had token {first['fencingToken']}")
        log(f"delete: kubectl delete pod {name}: its sidecar led through the app's "
            f"{APP_DRAIN:.0f} s drain, then released; {new} said leader=true {took:.2f}s after "
            f"the delete (token "
            f"{first['fencingToken']}, D - P = {d - p:.0f}s); back to {self.replicas} Ready "
            f"pods, the label and the EndpointSlice on the new leader")

    def crash(self):
        """SIGKILL of the leader's sidecar through the runtime: nobody leads before the Lease
        could expire; the kubelet restarts the container (a new identity)."""
        d, p = self.d, self.p
        name = self.leader["metadata"]["name"]
        before = restarts(self.leader)
        self.watch.sidecars[name].killed.add(self.answer["identity"])
        t0 = time.time()
        self.cluster.kill(self.leader)
        took, first = wait_for("a leader after the leader's sidecar was killed",
                               lambda: self.watch.first_true(t0, self.answer["fencingToken"]),
                               d + p + SLACK, interval=0.1)
        check(took >= d - p, f"a new term {took:.2f}s after the kill of the leader, which had "
                             f"renewed at most P before it: the Lease (D = {d:.0f}s) had not "
                             "expired")
        check(first["identity"] != self.answer["identity"], "the killed identity answered again")

        def restarted():
            pod = self.cluster.pod(name)
            return restarts(pod) > before and self.cluster.ready(pod) and pod
        pod = wait_for(f"the kubelet to restart {name}'s sidecar and the pod to be Ready again",
                       restarted, 60, interval=0.5)
        new = self.settle("after the crash")
        check(self.answer["fencingToken"] == first["fencingToken"],
              f"the pods agree on token {self.answer['fencingToken']}, the first leader after "
              f"the crash had {first['fencingToken']}")
        whose = "its own restarted sidecar" if new == name else new
        log(f"crash: SIGKILL to {name}'s sidecar: the kubelet restarted it (restarts {before} "
            f"-> {restarts(pod)}); {whose} said leader=true {took:.2f}s after the kill (token "
            f"{first['fencingToken']}; the Lease expires D = {d:.0f}s after the last renewal)")

    def measure(self, what, act):
        """ACT(), then waits for the settled state; logs the terms that began and the seconds
        with no claim in between."""
        t0 = time.time()
        act()
        name = self.settle(f"after {what}")
        t1 = time.time()
        began, leaderless = self.watch.leadership(t0, t1)
        log(f"{what}: {len(began)} new terms (tokens {[t[3] for t in began]}), "
            f"{leaderless:.2f}s with no leader in {t1 - t0:.1f}s; {name} leads")
        return began, leaderless

    def rollout(self):
        """kubectl rollout restart: every pod replaced; each replacement of the leader hands
        over by release, so at most one new term per pod and no wait for an expiry."""
        began, leaderless = self.measure("kubectl rollout restart", lambda: (
            self.cluster.kubectl("rollout", "restart", f"deployment/{RELEASE}"),
            self.cluster.kubectl("rollout", "status", f"deployment/{RELEASE}",
                                 "--timeout=300s", timeout=320)))
        check(1 <= len(began) <= self.replicas,
              f"{len(began)} new terms for {self.replicas} replaced pods")
        check(leaderless < self.d - self.p,
              f"{leaderless:.1f}s without a leader: a handover waited for an expiry")

    def evict(self):
        """Every pod evicted through the Eviction API, one at a time, as `kubectl drain` of
        each node would, under a PodDisruptionBudget of maxUnavailable 1."""
        selector = json.loads(self.cluster.kubectl("get", "deployment", RELEASE, "-o", "json"))[
            "spec"]["selector"]["matchLabels"]
        pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
               "metadata": {"name": RELEASE, "namespace": NAMESPACE},
               "spec": {"maxUnavailable": 1, "selector": {"matchLabels": selector}}}
        self.cluster.kubectl("apply", "-f", "-", input=json.dumps(pdb))

        def evict_all():
            for pod in self.cluster.pods():
                name = pod["metadata"]["name"]
                body = {"apiVersion": "policy/v1", "kind": "Eviction",
                        "metadata": {"name": name, "namespace": NAMESPACE}}
                wait_for(f"the Eviction API to evict {name} (the budget allows one at a time)",
                         lambda: self.cluster.kubectl(
                             "create", "--raw",
                             f"/api/v1/namespaces/{NAMESPACE}/pods/{name}/eviction", "-f", "-",
                             input=json.dumps(body), ok=False) is not None, 120, interval=1)
                wait_for(f"{name} gone and {self.replicas} pods Ready",
                         lambda: self.cluster.pod(name) is None and self.all_ready(), 180,
                         interval=0.5)
        began, leaderless = self.measure("eviction of every pod", evict_all)
        check(1 <= len(began) <= self.replicas,
              f"{len(began)} new terms for {self.replicas} evicted pods")
        check(leaderless < self.d - self.p,
              f"{leaderless:.1f}s without a leader: a handover waited for an expiry")

    def probes(self):
        """The leader's pod loses the API server (iptables DROPs to and from the Service IP's
        port 443 in its network namespace; the kubelet's probes still reach it). Its sidecar
        stops claiming by R and another pod leads once the Lease could expire. README's probes:
        /healthz fails once its last renewal is D + 20 s old while the Lease still names it,
        so the kubelet's liveness probe restarts it, and not sooner; the new process, which has
        never reached the API server, is live and not ready (/readyz needs one answer): the
        kubelet takes the pod out of Ready and leaves it running. The rule removed, it turns
        Ready and the cluster settles."""
        d, p = self.d, self.p
        name = self.leader["metadata"]["name"]
        before = restarts(self.leader)
        spec = next(c for c in self.leader["spec"]["initContainers"] if c["name"] == "leasehold")
        liveness = spec["livenessProbe"]["periodSeconds"] * spec["livenessProbe"][
            "failureThreshold"]
        readiness = spec["readinessProbe"]["periodSeconds"]
        self.watch.sidecars[name].killed.add(self.answer["identity"])  # restarted, not released
        t0 = time.time()
        with self.cluster.cut_from_api_server([self.watch.sidecars[name]]):
            took, first = wait_for("another pod to lead after the leader lost the API server",
                                   lambda: self.watch.first_true(t0, self.answer["fencingToken"]),
                                   d + p + SLACK, interval=0.1)
            check(took >= d - p, f"a new term {took:.2f}s after the cut: before the Lease "
                                 f"(D = {d:.0f}s) could expire")

            def restarted():
                pod = self.cluster.pod(name)
                return restarts(pod) > before and pod
            # /healthz fails at D + 20 s; the probe's failures; then the kubelet's SIGTERM, which
            # the sidecar may take up to the pod's grace period to answer (its release cannot
            # reach the API server).
            grace = self.leader["spec"]["terminationGracePeriodSeconds"]
            pod = wait_for(f"the kubelet to restart {name}'s sidecar on its liveness probe",
                           restarted, d + 20 + liveness + grace + SLACK, interval=1)
            status = next(c for c in pod["status"]["initContainerStatuses"]
                          if c["name"] == "leasehold")
            ended = epoch(status["lastState"]["terminated"]["finishedAt"])
            check(ended - t0 >= d + 20 - p - 1,  # finishedAt is in whole seconds
                  f"the sidecar was restarted {ended - t0:.0f}s after the cut: /healthz failed "
                  f"before its last renewal was D + 20 s = {d + 20:.0f}s old")
            wait_for(f"{name} not Ready (its new sidecar never reached the API server)",
                     lambda: not self.cluster.ready(self.cluster.pod(name)),
                     readiness * 2 + SLACK, interval=0.5)
            time.sleep(liveness + readiness)  # long enough for the liveness probe to act
            pod = self.cluster.pod(name)
            check(restarts(pod) == before + 1 and not self.cluster.ready(pod),
                  f"{name} after {liveness + readiness}s more without the API server: restarts "
                  f"{restarts(pod)} (expected {before + 1}), Ready {self.cluster.ready(pod)}")
        t1 = time.time()
        wait_for(f"{name} Ready again once it reaches the API server",
                 lambda: self.cluster.ready(self.cluster.pod(name)), readiness * 2 + SLACK + 30,
                 interval=0.5)
        self.settle("after the API server came back")
        log(f"probes: {name} cut from the API server: {first['identity']} led {took:.2f}s "
            f"later (token {first['fencingToken']}); the kubelet restarted the cut sidecar "
            f"{ended - t0:.0f}s after the cut (/healthz fails at D + 20 = {d + 20:.0f}s); the "
            f"new one stayed live and not Ready for {liveness + readiness}s; Ready "
            f"{time.time() - t1:.1f}s after the rule was removed")

    def memory(self):
        """The chart's memory limit holds under load: MEMORY_STREAMS SSE clients on the
        leader's /leader/watch (near the sidecar's 1,024 connections) and 4 threads asking
        /leader without pause, from inside its pod, for MEMORY_LOAD_SECONDS, with two releases
        (an event to every stream each); the sidecar container's cgroup never reaches its
        limit and the kubelet never restarts it."""
        name = self.leader["metadata"]["name"]
        before = restarts(self.leader)
        pid = self.cluster.sidecar_pid(self.leader)
        cgroup = memory_cgroup(pid)
        limit = int((cgroup / "memory.limit_in_bytes").read_text())
        want = memory_bytes(chart_value("resources.limits.memory"))
        check(limit == want, f"{name}'s sidecar cgroup limit is {limit}, the chart's {want}")
        (cgroup / "memory.max_usage_in_bytes").write_text("0")  # cgroup v1: resets the peak
        t0 = time.monotonic()
        with PodLoad(self.watch.sidecars[name], MEMORY_STREAMS, askers=4) as load:
            held = load.snapshot()["streams_open"] - load.snapshot()["streams_closed"]
            for other in (False, True):  # its own release, then the next leader's
                target = name
                if other:
                    target = wait_for("a new leader", lambda: self.cluster.one_leader(RELEASE),
                                      60, interval=0.5)[0]["metadata"]["name"]
                self.cluster.kubectl("exec", target, "-c", "app", "--", "wget", "-qO-",
                                     "--post-data=", "http://127.0.0.1:4040/leader/release")
            time.sleep(max(0.0, MEMORY_LOAD_SECONDS - (time.monotonic() - t0)))
            seen = load.stop()
        peak = int((cgroup / "memory.max_usage_in_bytes").read_text())
        failcnt = int((cgroup / "memory.failcnt").read_text())
        hwm = proc_kib(pid, "VmHWM")
        pod = self.cluster.pod(name)
        status = next(c for c in pod["status"]["initContainerStatuses"]
                      if c["name"] == "leasehold")
        check(restarts(pod) == before,
              f"the kubelet restarted {name}'s sidecar under load: {status.get('lastState')}")
        check(peak < limit and failcnt == 0,
              f"the sidecar's cgroup peaked at {peak} of its {limit} bytes limit "
              f"(failcnt {failcnt})")
        check(held > 0 and seen["events"] >= held and seen["answers"] > 0,
              f"the load did not reach the sidecar: {seen}")
        log(f"memory: {seen['streams_open']} SSE streams opened ({held} held), "
            f"{seen['events']} events, {seen['answers']} "
            f"/leader answers in {MEMORY_LOAD_SECONDS:.0f}s, two releases: the container's "
            f"cgroup peaked at {peak / 2**20:.1f} MiB of its {limit / 2**20:.0f} MiB limit "
            f"(process VmHWM {hwm / 1024:.1f} MiB), no restart")

    def lease(self):
        return json.loads(self.cluster.kubectl("get", "lease", RELEASE, "-o", "json"))["spec"]

    def reinstall(self):
        """helm uninstall, then helm install at once: released by the uninstall hook, so the new
        release leads as soon as its pods run, not D later."""
        before = self.lease()
        hook = f"{RELEASE}-scale-down"
        t0 = time.monotonic()
        try:
            self.cluster.helm("uninstall", RELEASE, "--wait", "--timeout", "120s")
        except Failure as e:  # the failed hook's Job is kept (no hook-failed policy): its log
            logs = self.cluster.kubectl("logs", f"job/{hook}", "--all-containers", ok=False)
            raise Failure(f"{e}\njob/{hook}'s log:\n{logs}") from None
        took = time.monotonic() - t0
        after = self.lease()
        # The example's pods (the hook Job's own pod goes after the Job, in the background).
        left = [p["metadata"]["name"] for p in json.loads(self.cluster.kubectl(
            "get", "pods", "-o", "json", "-l", f"app.kubernetes.io/instance={RELEASE},"
            "app.kubernetes.io/name=leasehold"))["items"]]
        check(not left, f"pods left when helm uninstall returned: {left} (the hook waits for "
                        "them to go)")
        check(self.cluster.kubectl("get", "job", hook, ok=False) is None,
              f"job/{hook} left after a successful uninstall (hook-succeeded)")
        check(not after.get("holderIdentity")
              and after.get("leaseTransitions", 0) >= before.get("leaseTransitions", 0),
              f"helm uninstall left the Lease {after} (before it: {before}): not released, or "
              "its token went back")
        t1 = time.time()
        pods = self.install()
        installed = time.time() - t1
        lease = wait_for("the new release's leader on the Lease",
                         lambda: (lambda l: l.get("holderIdentity") and l)(self.lease()), 30,
                         interval=0.2)
        readies = [epoch(next(c["lastTransitionTime"] for c in p["status"]["conditions"]
                              if c["type"] == "Ready")) for p in pods]
        ready = max(readies)
        acquired = epoch(lease["acquireTime"])
        check(lease["leaseTransitions"] == after.get("leaseTransitions", 0) + 1,
              f"the first term after the reinstall has token {lease['leaseTransitions']}, the "
              f"released Lease had {after.get('leaseTransitions')}")
        # ready is in whole seconds (rounded down): up to 1 s of the bound is its rounding.
        check(acquired - ready <= 2.0,
              f"the new leader took the Lease {acquired - ready:.2f}s after the last pod was "
              "Ready: not at once")
        check(acquired - t1 < self.d, f"the new leader came {acquired - t1:.1f}s after helm "
                                      f"install: the Lease was not released (D = {self.d:.0f}s)")
        name = self.settle("after the reinstall")
        log(f"reinstall: helm uninstall --wait took {took:.1f}s (the hook scaled the pods "
            f"down first); the Lease released: holder empty, leaseTransitions "
            f"{before.get('leaseTransitions')} -> {after.get('leaseTransitions')}; helm install "
            f"--wait {installed:.1f}s; {lease['holderIdentity']} acquired it "
            f"{acquired - t1:.2f}s after the install began, {acquired - min(readies):+.2f}s / "
            f"{acquired - ready:+.2f}s from the first / last pod's Ready (whole seconds), token {lease['leaseTransitions']} (D = "
            f"{self.d:.0f}s); {name} leads")

    def helmtest(self):
        lease = self.lease
        before = lease()
        t1 = time.monotonic()
        # Not --logs: a passing test's Pod is deleted at once (hook-succeeded, chart README).
        out = self.cluster.helm("test", RELEASE, "--timeout", "150s")
        check(re.search(r"^Phase:\s+Succeeded$", out, re.M), f"helm test said:\n{out}")
        took = time.monotonic() - t1
        test = f"{RELEASE}-test-leader"
        def gone():
            return not [k for k in ("pod", "serviceaccount", "role", "rolebinding")
                        if self.cluster.kubectl("get", k, test, ok=False) is not None]
        wait_for("helm test's pod, ServiceAccount, Role and RoleBinding to be deleted "
                 "(hook-succeeded)", gone, 60, interval=0.5)
        after = lease()
        check((after.get("holderIdentity"), after.get("leaseTransitions"))
              == (before.get("holderIdentity"), before.get("leaseTransitions")),
              f"helm test moved the Lease: {before} -> {after} (its Role only reads it)")
        log(f"helmtest: helm test passed in {took:.1f}s, its pod on the node; its pod, "
            f"ServiceAccount, Role and RoleBinding deleted after; the Lease still held by "
            f"{after.get('holderIdentity')} (token {after.get('leaseTransitions')})")

    def ct(self):
        """ct install of charts/leasehold beside the demo release, with the released image."""
        published = self.rel.published()
        sets = " ".join((f"--set=image.repository={self.rel.registry.host}/leasehold",
                         f"--set=image.tag={published.version}",
                         f"--set=image.digest={published.index_digest}"))
        argv = [str(self.tools / "ct"), "install", "--config", str(CT_CONFIG), "--debug",
                "--helm-extra-set-args", sets, "--helm-extra-args", "--timeout 180s"]
        helm = self.cluster.helm_runner
        # ct finds helm and kubectl on PATH; helm's state and KUBECONFIG are the test's.
        env = {**helm.env, "PATH": f"{helm.path.parent}:/usr/bin:/bin"}
        t0 = time.monotonic()
        r = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        took = time.monotonic() - t0
        out = r.stdout + r.stderr
        check(r.returncode == 0 and "All charts installed successfully" in out,
              f"ct install exited {r.returncode}:\n{out[-6000:]}")
        m = re.search(r'^Creating namespace "([^"]+)"', out, re.M)
        check(m, f"ct install named no namespace it created:\n{out[-3000:]}")
        ns = m.group(1)
        check(re.search(r"^Phase:\s+Succeeded$", out, re.M)
              and re.search(r"^>>> helm test ", out, re.M), f"ct install ran no passing helm "
              f"test:\n{out[-3000:]}")
        gone = self.cluster.cp.kubectl("get", "namespace", ns, ok=False)
        check(gone.returncode != 0 and "NotFound" in gone.stderr,
              f"ct install left its namespace {ns}: {gone.stdout}{gone.stderr}")
        log(f"ct: ct install of charts/leasehold with {published.version}@"
            f"{published.index_digest[:19]}... in {ns}: helm install --wait, rollout status, "
            f"helm test passed, uninstalled and the namespace deleted, in {took:.1f}s")


def memory_cgroup(pid):
    """The cgroup v1 memory folder of PID (this machine's cgroup v1; the node's kubelet uses
    cgroupfs)."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            return Path("/sys/fs/cgroup/memory") / path.lstrip("/")
    raise Failure(f"process {pid} is in no memory cgroup")


def proc_kib(pid, field):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise Failure(f"/proc/{pid}/status has no {field}")


GATE_STEPS = ("delete", "crash", "helmtest", "ct", "reinstall")
STEPS = GATE_STEPS + ("rollout", "evict", "memory", "probes")


def main():
    ap = chart_suite.parser()
    node_release.add_arguments(ap)
    args = chart_suite.parse_names(ap, STEPS, "step")
    steps = args.steps or list(GATE_STEPS)
    with tempfile.TemporaryDirectory(prefix="leasehold-node-chart-") as tmp:
        tmp = Path(tmp)
        # The release while the cluster comes up: neither needs the other until the install.
        with NodeRelease(tmp / "release", args.build_dir, args.tools,
                         Helm(args.helm).path) as rel:
            t0 = time.monotonic()
            with ControlPlane(node=True) as cp:
                log(f"single-node cluster up in {time.monotonic() - t0:.1f}s "
                    f"(the node {cp.env.get('NODE_UP_SECONDS')} s of it)")
                return on_the_node(cp, args, steps, tmp, rel)


def on_the_node(cp, args, steps, tmp, rel):
    cluster = NodeCluster(cp, NAMESPACE, Helm(args.helm, cp.admin_kubeconfig))
    images = [chart_value("example.app.image"), chart_value("tests.image")]
    t1 = time.monotonic()
    cluster.import_images(*images)
    log(f"images in the node: {', '.join(images)} ({time.monotonic() - t1:.0f}s); "
        "leasehold's comes from the registry")
    check(not product_images(cluster), f"a leasehold image in the node before the install: "
          f"{product_images(cluster)}")
    published = rel.published()

    def install():
        return cluster.install_released_chart(
            RELEASE, rel.registry, published.chart_version, "--set", f"podLabel={POD_LABEL}",
            "--set", "leaderService.enabled=true",
            "--set-json", f"example.app.command={json.dumps(APP_COMMAND)}")
    t1 = time.monotonic()
    pods = install()
    log(f"install: helm install oci://{rel.registry.host}/charts/leasehold --version "
        f"{published.chart_version} --wait: {len(pods)} pods Ready in "
        f"{time.monotonic() - t1:.1f}s")
    rel.check_pulled(cluster, pods)

    with PodWatch(cluster, tmp / "fence.db") as watch:
        scenarios = Scenarios(cluster, watch, rel, args.tools)
        scenarios.install = install
        name = scenarios.settle("after the install")
        log(f"install: {name} leads ({scenarios.answer['holder']}, token "
            f"{scenarios.answer['fencingToken']}) as every pod's /leader and status file "
            f"and the Lease say; -l {POD_LABEL}=true names it and the Service "
            f"{LEADER_SERVICE}'s EndpointSlice holds its address only")
        rc = run_steps(steps, lambda step: (scenarios.settle(f"before {step}"),
                                            getattr(scenarios, step)()),
                       (Failure, HelmError))
    log(watch.check_and_say())
    cluster.helm("uninstall", RELEASE, "--wait", "--timeout", "120s")
    wait_for("the pods to be gone after helm uninstall", lambda: not cluster.pods(), 60,
             interval=0.5)
    log("uninstall: helm uninstall removed every pod")
    return rc


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (Failure, OciRegistryError) as e:  # the registry's: it could not start
        print(f"FAIL: {e}", file=sys.stderr)
        sys.exit(1)
