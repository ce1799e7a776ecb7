"""The node flavour of tests/chaos/run (`--node`): pod faults on the single-node cluster with a
real kubelet (tests/realkube/start.sh up DIR --node), against the chart installed as a user
installs a release (scripts/release.sh to a local registry, as deploy.node_failover) with
fastFailover=true, statusFile.enabled=false and scaled timings (D=6s R=4s P=1s), 3 replicas.

One installation serves every scenario. Per scenario, from its own generator (seed S, index K):
2-4 faults over --fault-seconds (default 12), each one of NODE_FAULT_KINDS:
  kill_leader   SIGKILL of the leader's sidecar through the node's containerd (an OOM kill):
                the kubelet sees the exit, reports it and restarts the container
  kill_other    SIGKILL of a follower's sidecar
  kill_app      SIGKILL of a pod's app container (the leader's one time in two): nobody's proof
  force_delete  `kubectl delete pod --grace-period=0 --force` (the leader's two times in three):
                the pod object is gone at once, its processes run until the kubelet stops them
  delete        `kubectl delete pod` (SIGTERM through the kubelet: a release)
  kubelet_pause the node's kubelet SIGSTOPped for 0.5-2 D (it reports nothing, as a node cut
                from the API server), the leader's sidecar SIGKILLed inside the pause two times
                in three
Then the heal: the kubelet resumed, and before the next scenario, pods whose sidecar restarted
twice are deleted (the Deployment replaces them) so that the kubelet's crash-loop back-off
stays at its first steps.

Samplers and a fenced writer in every pod's network namespace (leasehold_testing.pod_watch,
from the scenario's start to its end). Checks per scenario:
  1. no two claims overlap (a SIGKILLed sidecar's claim ends at the first request that found
     nobody listening: --fast-failover's contract), tokens go up with every term;
  2. the fenced store accepted no token lower than one it had seen;
  3. a leader's sidecar killed while the kubelet was paused: no new term sooner than D - P after
     the kill (the Lease could not have expired) unless the kubelet was resumed first (then its
     report is proof): the kubelet's silence is never proof;
  4. once the faults stop and a sidecar answers, a leader within D + 2 P + slack.
Also measured: the next leader after each kill_leader with the kubelet running (fast failover
under chaos: p50, p99, max in the summary)."""
import json
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from leasehold_testing.checks import Failure, wait_for
from leasehold_testing.control_plane import ControlPlane
from leasehold_testing.helm import Helm, chart_value
from leasehold_testing.node_cluster import NodeCluster
from leasehold_testing.node_release import NodeRelease
from leasehold_testing.pod_watch import PodWatch

NAMESPACE = "node-chaos"
RELEASE = "chaos"
TIMINGS = {"leaseDuration": 6.0, "renewDeadline": 4.0, "retryPeriod": 1.0}
D, P = TIMINGS["leaseDuration"], TIMINGS["retryPeriod"]
NODE_FAULT_KINDS = ("kill_leader", "kill_other", "kill_app", "force_delete", "delete",
                    "kubelet_pause")
# What a loaded 2-core machine and the kubelet's restart of a container add to a bound (as the
# node tests' SLACK).
SLACK = 5.0
LIVENESS_BOUND = D + 2 * P + SLACK
# A pod whose sidecar restarted this often is replaced before the next scenario: the kubelet
# waits 10 s before a second restart, 20 s before a third, and so on.
RESTARTS_TO_REPLACE = 2


def add_arguments(ap):
    """`--node`'s own arguments (node_release's: what releases this checkout)."""
    ap.add_argument("--node", action="store_true",
                    help="pod faults on the single-node cluster with a real kubelet, the chart "
                         "released from --build-dir with fastFailover=true (node_scenario.py)")
    ap.add_argument("--build-dir", type=Path, help="--node: the directory holding the CMake "
                    "build `release` (scripts/release.sh --build-dir)")
    ap.add_argument("--tools", type=Path, help="--node: crane, syft, cosign "
                    "(tests/release/tools/build.sh)")
    ap.add_argument("--helm", type=Path, help="--node: the helm binary (default: "
                    "build/realkube/bin/helm)")


def sidecar_restarts(pod):
    st = pod["status"]
    return next((c["restartCount"] for c in st.get("initContainerStatuses", [])
                 if c["name"] == "leasehold"), 0)


class NodeScenario:
    """Scenario K of seed S on the running installation (cluster, cp)."""

    def __init__(self, cp, cluster, seed, k, fault_seconds, workdir):
        self.cp, self.cluster, self.k = cp, cluster, k
        self.rng = random.Random(f"{seed}:{k}:node")
        self.fault_seconds = fault_seconds
        self.dir = Path(workdir) / f"s{k}"
        self.dir.mkdir(parents=True, exist_ok=True)
        n = self.rng.randint(2, 4)
        self.schedule = sorted((round(self.rng.uniform(0, fault_seconds), 3),
                                self.rng.choice(NODE_FAULT_KINDS)) for _ in range(n))
        self.actions = []   # (offset, what was done)
        self.applied, self.skipped = {}, {}
        self.failures = []
        self.paused_kills = []  # (kill time, token then, kubelet resume time)
        self.fault_times = []   # when each applied fault began
        self.paused_takeovers = []  # (next term after a paused kill, kubelet resumed after) s
        self.leader_kills = []  # (kill time, token then) of kill_leader
        self.failovers = []     # seconds from a kill_leader to the next term (measured_failovers)
        self.watch = None
        self.t0 = None
        self.res = {}

    def describe(self):
        return f"node scenario {self.k} ({', '.join(k for _, k in self.schedule)})"

    def note(self, text):
        self.actions.append((round(time.time() - self.t0, 3), text))

    # --- the state of the Deployment ---

    def replace_crashlooping(self):
        """Graceful deletes of pods whose sidecar restarted RESTARTS_TO_REPLACE times."""
        for pod in self.cluster.pods():
            if sidecar_restarts(pod) >= RESTARTS_TO_REPLACE:
                self.cluster.kubectl("delete", "pod", pod["metadata"]["name"], "--wait=false",
                                     ok=False)

    def settle(self):
        replicas = chart_value("example.replicas")
        wait_for(f"{replicas} Ready pods", lambda: self.cluster.all_ready(replicas), 240,
                 interval=0.5)
        wait_for("every pod to agree on one leader",
                 lambda: self.cluster.one_leader(RELEASE, status_file=False), 60, interval=0.5)

    def holder(self):
        """(holderIdentity, leaseTransitions) of the Lease."""
        spec = json.loads(self.cluster.kubectl("get", "lease", RELEASE, "-o", "json"))["spec"]
        return spec.get("holderIdentity") or "", spec.get("leaseTransitions", 0)

    def running_pods(self):
        return [p for p in self.cluster.pods() if p["status"].get("phase") == "Running"]

    def leader_pod(self):
        """The pod whose sidecar the Lease names, as the samplers last heard it, or None."""
        holder, _ = self.holder()
        name = next((n for n, s in self.watch.sidecars.items() if s.identity == holder), None)
        return name and self.cluster.pod(name)

    def token_now(self):
        with self.watch.observer.lock:
            tokens = [st["fencingToken"] for _, _, _, st in self.watch.observer.samples
                      if st and st.get("leader")]
        return max(tokens, default=0)

    # --- the faults ---

    def kill_sidecar(self, pod, what):
        """SIGKILL of POD's sidecar; its identity's claim ends with it (fast failover's
        contract). True when it was done."""
        name = pod["metadata"]["name"]
        sidecar = self.watch.sidecars.get(name)
        try:
            if sidecar is not None and sidecar.identity:
                sidecar.died.add(sidecar.identity)
            self.cluster.kill(pod)
        except Failure as e:  # not running (restarting, or its pod going away)
            self.note(f"{what}: {name}: skipped ({str(e)[:120]})")
            return False
        self.note(f"{what}: SIGKILL to {name}'s sidecar")
        return True

    def fault(self, kind):
        pods = self.running_pods()
        leader = self.leader_pod()
        others = [p for p in pods if not leader or
                  p["metadata"]["name"] != leader["metadata"]["name"]]
        if kind == "kill_leader":
            if not leader:
                return False
            token, t = self.token_now(), time.time()
            if not self.kill_sidecar(leader, kind):
                return False
            self.leader_kills.append((t, token))
            return True
        if kind == "kill_other":
            return bool(others) and self.kill_sidecar(self.rng.choice(others), kind)
        if kind == "kill_app":
            pod = leader if leader and self.rng.random() < 0.5 else (
                self.rng.choice(pods) if pods else None)
            if not pod:
                return False
            try:
                self.cluster.kill(pod, container="app")
            except Failure:
                return False
            self.note(f"kill_app: SIGKILL to {pod['metadata']['name']}'s app container")
            return True
        if kind in ("force_delete", "delete"):
            pod = leader if leader and kind == "force_delete" and self.rng.random() < 2 / 3 \
                else (self.rng.choice(pods) if pods else None)
            if not pod:
                return False
            name = pod["metadata"]["name"]
            extra = ["--grace-period=0", "--force"] if kind == "force_delete" else []
            self.cluster.kubectl("delete", "pod", name, "--wait=false", *extra, ok=False)
            self.note(f"{kind}: {name}")
            return True
        if kind == "kubelet_pause":
            return self.kubelet_pause()
        raise ValueError(kind)

    def kubelet_pause(self):
        length = self.rng.uniform(0.5, 2.0) * D
        kill_at = self.rng.uniform(0.1, 0.5) * length if self.rng.random() < 2 / 3 else None
        self.cp.pause("node/kubelet")
        began = time.time()
        self.note(f"kubelet_pause: the kubelet SIGSTOPped for {length:.1f}s")
        killed = None
        try:
            if kill_at is not None:
                time.sleep(kill_at)
                leader = self.leader_pod()
                token, t = self.token_now(), time.time()
                if leader and self.kill_sidecar(leader, "kubelet_pause"):
                    killed = (t, token)
            time.sleep(max(0.0, began + length - time.time()))
        finally:
            self.cp.resume("node/kubelet")
            resumed = time.time()
            self.note("kubelet_pause: the kubelet resumed")
        if killed:
            self.paused_kills.append((*killed, resumed))
        return True

    # --- the scenario ---

    def run(self):
        self.t0 = time.time()
        self.replace_crashlooping()
        self.settle()
        with PodWatch(self.cluster, self.dir / "fence.db",
                      seed=self.rng.randrange(10**9)) as watch:
            self.watch = watch
            replicas = chart_value("example.replicas")
            wait_for("the samplers in every pod", lambda: len(watch.sidecars) >= replicas, 30,
                     interval=0.2)
            start = time.time()
            self.t0 = start
            for at, kind in self.schedule:
                time.sleep(max(0.0, start + at - time.time()))
                began = time.time()
                if self.fault(kind):
                    self.applied[kind] = self.applied.get(kind, 0) + 1
                    self.fault_times.append(began)
                else:
                    self.skipped[kind] = self.skipped.get(kind, 0) + 1
            time.sleep(max(0.0, start + self.fault_seconds - time.time()))
            healed = time.time()
            self.note("heal")
            self.check_liveness(healed)
            self.measure_failovers()
            self.check_paused_kills()
            try:
                terms, accepted, rejected = watch.check()
            except Failure as e:
                self.failures.append(str(e))
                terms, accepted, rejected = watch.observer.terms(), None, None
            self.res.update(terms=len(terms), writes_accepted=accepted or 0,
                            writes_rejected=rejected or 0,
                            samples=len(watch.observer.samples), min_gap=min_gap(terms))
        self.watch = None

    def measure_failovers(self):
        """The next term after each kill_leader that no other fault followed before that term
        began (fast failover under chaos; a fault in between, a paused kubelet or another kill,
        makes the time something else's)."""
        for t_kill, token in self.leader_kills:
            found = self.watch.first_true(t_kill, token)
            if found is None:
                continue
            took = found[0]
            if any(t_kill < t <= t_kill + took for t in self.fault_times):
                continue
            self.failovers.append(took)
            self.note(f"kill_leader at +{t_kill - self.t0:.2f}s: the next term {took:.2f}s "
                      "after the kill")

    def check_liveness(self, healed):
        """A leader within LIVENESS_BOUND of the first answer of any sidecar after the heal (a
        scenario may end with every sidecar killed and waiting for its restart)."""
        def answered():
            with self.watch.observer.lock:
                return min((t1 for t0, t1, _, st in self.watch.observer.samples
                            if t0 >= healed and st and "exited" not in st), default=None)
        try:
            first = wait_for("a sidecar answering after the heal", answered, 120, interval=0.1)
            took, _ = wait_for("a leader after the heal",
                               lambda: self.watch.first_true(healed, 0), first - healed +
                               LIVENESS_BOUND, interval=0.05)
        except Failure as e:
            self.failures.append(f"liveness: {e}")
            self.res["leader_after_heal"] = None
            return
        self.res["leader_after_heal"] = took
        self.res["sidecar_after_heal"] = first - healed

    def check_paused_kills(self):
        """Check 3: the kubelet's silence is no proof."""
        for t_kill, token, resumed in self.paused_kills:
            found = self.watch.first_true(t_kill, token)
            if found is None:
                continue
            took, st = found
            least = min(resumed - t_kill, D - P)
            self.paused_takeovers.append((round(took, 3), round(resumed - t_kill, 3)))
            if took < least - 0.05:
                self.failures.append(
                    f"early takeover: the leader's sidecar was killed while the kubelet was "
                    f"paused (+{t_kill - self.t0:.2f}s, token {token}); {st.get('identity')} "
                    f"led {took:.2f}s later with token {st['fencingToken']}, before D - P = "
                    f"{D - P:.0f}s and before the kubelet resumed ({resumed - t_kill:.2f}s)")

    def result(self):
        return {"scenario": self.k, "schedule": self.schedule, "applied": self.applied,
                "skipped": self.skipped, "failures": self.failures,
                "history_terms": self.res.get("terms", 0), "handovers": 0,
                "writes_accepted": self.res.get("writes_accepted", 0),
                "writes_rejected": self.res.get("writes_rejected", 0),
                "samples": self.res.get("samples", 0),
                "leader_after_heal": self.res.get("leader_after_heal"),
                "min_gap_sampled": self.res.get("min_gap"), "min_gap_history": None,
                "max_overlap_sampled": None, "max_overlap_history": None,
                "failovers_s": [round(x, 3) for x in self.failovers],
                "paused_kills": len(self.paused_kills),
                "paused_kill_next_term_s": self.paused_takeovers}


def min_gap(terms):
    """The smallest time from the end of a claim to the start of another identity's."""
    gaps = [b[0] - a[1] for a, b in zip(terms, terms[1:]) if a[2] != b[2]]
    return round(min(gaps), 3) if gaps else None


def percentile(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))] if s else None


def run_node(args, seed, indices, say):
    """Every scenario of INDICES on one installation; (results, failed scenario indices).
    SAY(scenario, result) prints a scenario's line."""
    results, failed = [], []
    with tempfile.TemporaryDirectory(prefix="leasehold-node-chaos-") as tmp:
        tmp = Path(tmp)
        with NodeRelease(tmp / "release", args.build_dir, args.tools,
                         Helm(args.helm).path) as rel, ControlPlane(node=True) as cp:
            cluster = NodeCluster(cp, NAMESPACE, Helm(args.helm, cp.admin_kubeconfig))
            cluster.import_images(chart_value("example.app.image"))
            sets = [f"timings.{k}={v:g}s" for k, v in TIMINGS.items()]
            cluster.install_released_chart(
                RELEASE, rel.registry, rel.published().chart_version,
                *[a for s in ["fastFailover=true", "statusFile.enabled=false",
                              "tests.enabled=false", *sets] for a in ("--set", s)])
            for k in indices:
                if args.minutes and time.monotonic() - args.started > args.minutes * 60:
                    break
                sc = NodeScenario(cp, cluster, seed, k, args.fault_seconds, tmp / "scenarios")
                t = time.monotonic()
                try:
                    sc.run()
                except Exception as e:  # an infrastructure error is a failure too
                    sc.failures.append(f"error: {e!r}")
                    if "node/kubelet" in cp.paused:
                        cp.resume("node/kubelet")
                res = sc.result()
                res["seconds"] = round(time.monotonic() - t, 2)
                results.append(res)
                say(sc, res)
                if res["failures"]:
                    failed.append(k)
                    dest = Path(args.failures_dir) / f"seed{seed}-node-s{k}"
                    shutil.rmtree(dest, ignore_errors=True)
                    shutil.copytree(sc.dir, dest)
                    (dest / "observations.json").write_text(json.dumps(
                        {"actions": sc.actions, "schedule": sc.schedule}, indent=1))
                    for pod in cluster.pods():
                        name = pod["metadata"]["name"]
                        for prev in ("", "--previous"):
                            out = cluster.kubectl("logs", name, "-c", "leasehold",
                                                  *([prev] if prev else []), ok=False)
                            if out:
                                (dest / f"{name}{prev or ''}.log").write_text(out)
                    if not args.keep_going:
                        break
                shutil.rmtree(sc.dir, ignore_errors=True)
            cluster.helm("uninstall", RELEASE, "--wait", "--timeout", "120s")
    return results, failed


def node_summary(results):
    """The node flavour's own part of the summary: fast failover under chaos, paused kills."""
    times = [x for r in results for x in r["failovers_s"]]
    return {
        "server": "real kube-apiserver + etcd, a real kubelet (one node)",
        "timings": {k: f"{v:g}s" for k, v in TIMINGS.items()},
        "bound_s": LIVENESS_BOUND,
        "kill_leader_next_term_s": {
            "n": len(times), "p50": round(statistics.median(times), 3) if times else None,
            "p99": percentile(times, 0.99), "max": max(times, default=None)},
        "recoveries_slower_than_D_plus_P": sum(1 for r in results if r["leader_after_heal"]
                                               and r["leader_after_heal"] > D + P),
        "kills_while_kubelet_paused": sum(r["paused_kills"] for r in results),
        # (the next term, the kubelet's resume) in seconds after each such kill: the first is
        # never below min(the second, D - P)
        "paused_kill_next_term_and_resume_s": [x for r in results
                                               for x in r["paused_kill_next_term_s"]],
        "early_takeovers": sum(1 for r in results for f in r["failures"]
                               if f.startswith("early takeover")),
    }

