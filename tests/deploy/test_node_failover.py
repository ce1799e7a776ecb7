#!/usr/bin/env python3
"""--fast-failover on a single-node cluster with a real kubelet (tests/realkube/start.sh up DIR
--node): the chart installed as a user installs a release (scripts/release.sh of this checkout to
a local registry, as deploy.node_chart), with fastFailover=true and statusFile.enabled=false,
judged from inside the pods (kubectl exec: /leader) and by the samplers and fenced writers in
every pod's network namespace (leasehold_testing.pod_watch: no two claims overlap, tokens only go
up, the fenced store never accepts a lower token). A killed holder's claim ends with its process
(--fast-failover's contract: the app's connection to /leader fails at once), at the first sample
that found nothing listening, not at the validUntil it last answered.

    test_node_failover.py --build-dir DIR --tools DIR [--helm BIN] [--rounds N] [STEP...]
        STEP: kill9 appcrash sharedpid forcedelete kubeletstop runmode (default: kill9, the
        gate's; the others run in the full suite)

install (always): every pod Ready; one leader that every pod's /leader and the Lease agree on;
  the Lease's leasehold.io/holder-process names the leader pod's UID, the container
  `leasehold` and the holder's identity.
kill9     ROUNDS times (default 3): SIGKILL of the leader's sidecar through the node's containerd,
          as an OOM kill or a segfault comes. The kubelet sees the exit and restarts the
          container; the next term (token + 1: exactly one term) begins, in its restarted sidecar
          or another pod's, sooner than D - P after the kill: the Lease could not have expired
          (the killed leader renewed at most P before the kill), so the takeover came on the
          kubelet's word. Prints each round's time, the median and the slowest.
appcrash  the leader pod's app container killed (SIGKILL through containerd), its sidecar alive:
          no new term begins for D - P (the app's exit is nobody's proof), the same leader.
sharedpid the Deployment patched to shareProcessNamespace: true (a process the holder started
          could outlive its container): after the rollout, SIGKILL of the leader's sidecar gets
          no takeover before D - P (a follower says why: `fast failover: no proof yet` naming
          shareProcessNamespace), a new term by D + P + slack; then patched back.
forcedelete `kubectl delete pod --grace-period=0 --force` of the leader: the pod object is gone
          at once while its processes still run until the kubelet stops them; whoever leads
          next did not take over on proof (its `became leader` line says no "before the lease
          expired": a pod gone is no proof; the kubelet's SIGTERM makes the sidecar release).
kubeletstop the node's kubelet paused (SIGSTOP: it reports nothing, as a node cut from the API
          server), then SIGKILL of the leader's sidecar: nobody leads before D - P after the
          kill (the pod still says running), somebody by D + P + slack; then the kubelet
          resumed and the pod Ready again.
runmode   another release in its own namespace with runMode.enabled=true (`leasehold run` as
          the app container's PID 1, runMode.image debian:bookworm-slim, imported): SIGKILL of
          the leader pod's app container (leasehold run and, with it, the command: the kernel
          ends the container's PID namespace) gets the next term sooner than D - P, token + 1,
          no two claims overlapping (samplers in the pods' network namespaces).
Needs root, docker, docker-registry, the release tools and the node's binaries, as
deploy.node_chart."""
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from leasehold_testing import chart_suite, node_release
from leasehold_testing.checks import Failure, check, log, run_steps, wait_for
from leasehold_testing.control_plane import ControlPlane
from leasehold_testing.helm import Helm, HelmError, chart_value
from leasehold_testing.node_cluster import NodeCluster, run
from leasehold_testing.node_release import NodeRelease
from leasehold_testing.oci_registry import OciRegistryError
from leasehold_testing.paths import ROOT
from leasehold_testing.pod_watch import PodWatch
from leasehold_testing.quantities import parse_duration

NAMESPACE = "node-failover"
RELEASE = "ff"
# What a loaded 2-core machine adds to a timing bound (as deploy.node_chart's SLACK).
SLACK = 5.0
GATE_STEPS = ("kill9",)
STEPS = GATE_STEPS + ("appcrash", "sharedpid", "forcedelete", "kubeletstop", "runmode")
RUN_IMAGE = chart_value("runMode.image")
EARLY = "before the lease expired"  # in a `became leader` line taken on the kubelet's word


def restarts(pod, container="leasehold"):
    st = pod["status"]
    return next(c["restartCount"] for c in st.get("initContainerStatuses", []) +
                st.get("containerStatuses", []) if c["name"] == container)


class Scenarios:
    def __init__(self, cp, cluster, watch, rounds, rel):
        self.cp, self.cluster, self.watch, self.rounds, self.rel = cp, cluster, watch, rounds, rel
        self.d, self.p = (parse_duration(chart_value(f"timings.{k}"))
                          for k in ("leaseDuration", "retryPeriod"))
        self.replicas = chart_value("example.replicas")
        self.leader = self.answer = None

    def settle(self, what):
        wait_for(f"the Deployment back to {self.replicas} Ready pods",
                 lambda: self.cluster.all_ready(self.replicas), 180, interval=0.5)
        self.leader, self.answer = wait_for(
            f"every pod to agree on the leader {what}",
            lambda: self.cluster.one_leader(RELEASE, status_file=False), 60, interval=0.5)
        return self.leader["metadata"]["name"]

    def lease(self):
        return json.loads(self.cluster.kubectl("get", "lease", RELEASE, "-o", "json"))

    def check_recorded(self):
        """The holder's annotation names its pod's UID, its container and its identity."""
        got = self.lease()["metadata"].get("annotations", {}).get("leasehold.io/holder-process")
        want = f"{self.leader['metadata']['uid']}/leasehold/{self.answer['identity']}"
        check(got == want, f"leasehold.io/holder-process is {got!r}, want {want!r}")

    def kill_leader(self):
        """SIGKILL to the leader's sidecar; (the kill's time, the killed pod's name, its
        restart count before)."""
        name = self.leader["metadata"]["name"]
        before = restarts(self.leader)
        # --fast-failover's contract: a claim ends with its process (the app's /leader or
        # /leader/watch connection fails at once), not at the validUntil it last answered.
        self.watch.sidecars[name].died.add(self.answer["identity"])
        t0 = time.time()
        self.cluster.kill(self.leader)
        return t0, name, before

    def restarted(self, name, before):
        def ready_again():
            pod = self.cluster.pod(name)
            return pod and restarts(pod) > before and self.cluster.ready(pod) and pod
        wait_for(f"the kubelet to restart {name}'s sidecar and the pod to be Ready again",
                 ready_again, 60, interval=0.5)

    def kill9(self):
        d, p = self.d, self.p
        times = []
        for i in range(self.rounds):
            self.settle(f"before round {i + 1}")
            self.check_recorded()
            token = self.answer["fencingToken"]
            t0, name, before = self.kill_leader()
            took, first = wait_for("a leader after the leader's sidecar was killed",
                                   lambda: self.watch.first_true(t0, token), d + p + SLACK,
                                   interval=0.05)
            check(took < d - p, f"round {i + 1}: the next term began {took:.2f}s after the "
                                f"kill: no sooner than the Lease could expire (D - P = "
                                f"{d - p:.0f}s), so not on the kubelet's word")
            check(first["fencingToken"] == token + 1,
                  f"round {i + 1}: the first term after the kill has token "
                  f"{first['fencingToken']}, want {token + 1}")
            self.restarted(name, before)
            whose = "its own restarted sidecar" if first["name"] == name else first["name"]
            log(f"kill9 round {i + 1}: SIGKILL to {name}'s sidecar: {whose} said leader=true "
                f"{took:.2f}s later (token {token} -> {first['fencingToken']})")
            times.append(took)
        log(f"kill9: {len(times)} kills, the next leader after {sorted(round(t, 2) for t in times)}"
            f" s: median {statistics.median(times):.2f}s, slowest {max(times):.2f}s (D = "
            f"{d:.0f}s, D - P = {d - p:.0f}s)")

    def appcrash(self):
        d, p = self.d, self.p
        name = self.leader["metadata"]["name"]
        token = self.answer["fencingToken"]
        before = restarts(self.leader, "app")
        t0 = time.time()
        self.cluster.kill(self.leader, container="app")
        time.sleep(d - p)
        check(self.watch.first_true(t0, token) is None,
              f"a new term after the app container of {name} was killed, its sidecar alive")
        pod = self.cluster.pod(name)
        check(restarts(pod, "app") > before, f"{name}'s app container was not restarted")
        check(self.lease()["spec"]["holderIdentity"] == self.answer["identity"],
              "the Lease moved after an app crash")
        log(f"appcrash: SIGKILL to {name}'s app container: no new term for D - P = "
            f"{d - p:.0f}s, {self.answer['identity']} still leads (token {token})")

    def patch_shared(self, shared):
        self.cluster.kubectl("patch", "deployment", RELEASE, "--type=merge", "-p", json.dumps(
            {"spec": {"template": {"spec": {"shareProcessNamespace": shared}}}}))
        self.cluster.kubectl("rollout", "status", f"deployment/{RELEASE}", "--timeout=300s",
                             timeout=320)
        wait_for("the old pods gone", lambda: len(self.cluster.pods()) == self.replicas, 120,
                 interval=0.5)

    def sharedpid(self):
        d, p = self.d, self.p
        self.patch_shared(True)
        self.settle("with shareProcessNamespace")
        token = self.answer["fencingToken"]
        t0, name, before = self.kill_leader()
        took, first = wait_for("a leader after the leader's sidecar was killed",
                               lambda: self.watch.first_true(t0, token), d + p + SLACK,
                               interval=0.1)
        check(took >= d - p, f"the next term began {took:.2f}s after the kill in a pod with "
                             "shareProcessNamespace: a takeover before the Lease could expire")
        said = [n for n in (p_["metadata"]["name"] for p_ in self.cluster.pods())
                if n != name and "shareProcessNamespace" in (self.cluster.kubectl(
                    "logs", n, "-c", "leasehold", ok=False) or "")]
        check(said, "no follower said why the kill was no proof (shareProcessNamespace)")
        self.restarted(name, before)
        log(f"sharedpid: SIGKILL to {name}'s sidecar with shareProcessNamespace: the next term "
            f"{took:.2f}s later (token {first['fencingToken']}; D = {d:.0f}s), on expiry; "
            f"{', '.join(said)} logged why")
        self.patch_shared(False)


    def became_leader_lines(self, pod):
        out = self.cluster.kubectl("logs", pod, "-c", "leasehold", ok=False) or ""
        return [line for line in out.splitlines() if "became leader" in line]

    def forcedelete(self):
        d, p = self.d, self.p
        name = self.leader["metadata"]["name"]
        token = self.answer["fencingToken"]
        t0 = time.time()
        self.cluster.kubectl("delete", "pod", name, "--grace-period=0", "--force", "--wait=false")
        took, first = wait_for("a leader after the leader's forced delete",
                               lambda: self.watch.first_true(t0, token), d + p + SLACK,
                               interval=0.1)
        lines = self.became_leader_lines(first["name"])
        check(lines and EARLY not in lines[-1],
              f"{first['name']} took over on proof after a forced delete: {lines[-1:]}")
        new = self.settle("after the forced delete")
        log(f"forcedelete: kubectl delete --force of {name}: {first['name']} led {took:.2f}s "
            f"later (token {first['fencingToken']}), not on proof ({lines[-1][-160:]}); "
            f"{new} leads")

    def kubeletstop(self):
        d, p = self.d, self.p
        token = self.answer["fencingToken"]
        self.cp.pause("node/kubelet")
        try:
            t0, name, before = self.kill_leader()
            took, first = wait_for("a leader after the kill, the kubelet paused",
                                   lambda: self.watch.first_true(t0, token), d + p + SLACK,
                                   interval=0.1)
            check(took >= d - p, f"the next term began {took:.2f}s after the kill while the "
                                 "kubelet reported nothing: before the Lease could expire")
        finally:
            self.cp.resume("node/kubelet")
        self.restarted(name, before)
        log(f"kubeletstop: the kubelet paused, SIGKILL to {name}'s sidecar: {first['name']} "
            f"led {took:.2f}s later, on expiry (D = {d:.0f}s, token {first['fencingToken']})")

    def runmode(self):
        d, p = self.d, self.p
        run(["bash", ROOT / "scripts/make-base-images.sh"], timeout=1200)  # RUN_IMAGE
        cluster = NodeCluster(self.cp, f"{NAMESPACE}-run", self.cluster.helm_runner)
        cluster.import_images(RUN_IMAGE)
        cluster.install_released_chart(
            "ffrun", self.rel.registry, self.rel.published().chart_version, "--set",
            "runMode.enabled=true", "--set", "fastFailover=true", "--set",
            "statusFile.enabled=false", "--set", "tests.enabled=false")
        with PodWatch(cluster) as watch:
            def settled():
                holder = json.loads(cluster.kubectl("get", "lease", "ffrun", "-o", "json"))[
                    "spec"].get("holderIdentity")
                return cluster.all_ready(self.replicas) and watch.leader(holder)
            sidecar, answer = wait_for("a run-mode leader", settled, 120, interval=0.2)
            token = answer["fencingToken"]
            sidecar.died.add(answer["identity"])
            t0 = time.time()
            cluster.kill(cluster.pod(sidecar.name), container="app")
            took, first = wait_for("a leader after leasehold run was killed",
                                   lambda: watch.first_true(t0, token), d + p + SLACK,
                                   interval=0.05)
            check(took < d - p, f"the next term began {took:.2f}s after the kill of leasehold "
                                f"run: no sooner than the Lease could expire (D - P = "
                                f"{d - p:.0f}s)")
            check(first["fencingToken"] == token + 1,
                  f"token {token} -> {first['fencingToken']}")
            log(watch.check_and_say())
        cluster.helm("uninstall", "ffrun", "--wait", "--timeout", "120s")
        log(f"runmode: SIGKILL to leasehold run in {sidecar.name}'s app container: "
            f"{first['name']} said leader=true {took:.2f}s later (token {token} -> "
            f"{first['fencingToken']})")


def main():
    ap = chart_suite.parser()
    node_release.add_arguments(ap)
    ap.add_argument("--rounds", type=int, default=3, help="kill9's kills (default 3)")
    args = chart_suite.parse_names(ap, STEPS, "step")
    steps = args.steps or list(GATE_STEPS)
    with tempfile.TemporaryDirectory(prefix="leasehold-node-failover-") as tmp:
        tmp = Path(tmp)
        with NodeRelease(tmp / "release", args.build_dir, args.tools,
                         Helm(args.helm).path) as rel, ControlPlane(node=True) as cp:
            cluster = NodeCluster(cp, NAMESPACE, Helm(args.helm, cp.admin_kubeconfig))
            cluster.import_images(chart_value("example.app.image"))
            t1 = time.monotonic()
            pods = cluster.install_released_chart(
                RELEASE, rel.registry, rel.published().chart_version, "--set",
                "fastFailover=true", "--set", "statusFile.enabled=false", "--set",
                "tests.enabled=false")
            log(f"install: helm install with fastFailover=true: {len(pods)} pods Ready in "
                f"{time.monotonic() - t1:.1f}s")
            with PodWatch(cluster, tmp / "fence.db") as watch:
                scenarios = Scenarios(cp, cluster, watch, args.rounds, rel)
                name = scenarios.settle("after the install")
                scenarios.check_recorded()
                log(f"install: {name} leads (token {scenarios.answer['fencingToken']}); the "
                    "Lease's leasehold.io/holder-process names its pod UID and container")
                rc = run_steps(steps, lambda step: (scenarios.settle(f"before {step}"),
                                                    getattr(scenarios, step)()),
                               (Failure, HelmError))
            log(watch.check_and_say())
            cluster.helm("uninstall", RELEASE, "--wait", "--timeout", "120s")
            return rc


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (Failure, OciRegistryError) as e:
        print(f"FAIL: {e}", file=sys.stderr)
        sys.exit(1)
