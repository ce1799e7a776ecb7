"""bench/run --only node: issue 24's figures on a single-node cluster with a real kubelet
(tests/realkube/start.sh up DIR --node; tests/realkube/build.sh --node builds it), leasehold's
chart beside a client-go elector in the app container, each as 3 replicas at the chart's
default timings (15s/10s/2s):

  leasehold  helm install of charts/leasehold with the Dockerfile's runtime stage holding the
             sidecar under test (tests/deploy/test_image.build_image, as the node tests), the
             chart's example app (it exits at SIGTERM);
  client-go  a Deployment of bench/clientgo (LeaseLock, ReleaseOnCancel) in debian:bookworm-slim,
             as the app container (leasehold_testing.clientgo_app), under manifests/rbac.yaml.

  leasehold --fast-failover  the same chart with fastFailover=true, statusFile.enabled=false
             (issue 40): crash only, at 15s/10s/2s and at 60s/40s/2s with renewInterval 15s
             (issue 40 §2's timings: crash failover no longer depends on D).

For each, REPS times (10; --quick 3; --smoke 1):
  delete   `kubectl delete pod` of the leader's pod -> the first leader=true answer of another
           pod (arrival), then back to 3 Ready pods and a leader;
  crash    SIGKILL of the electing process (leasehold's sidecar; client-go's app) through the
           node's containerd -> the same; also minus D (the Lease expires D after the last
           renewal, which came at most P before the kill);
and ROLLOUTS times (3; --quick and --smoke 1) `kubectl rollout restart` until the rollout is
done and a leader settled: the new terms and the seconds no pod claimed. Then, with every pod
Ready and a leader, a quiet window (WINDOW_S: 120 s; --quick 30 s; --smoke 10 s): the requests
the contender's pods made (the audit log, by their ServiceAccounts' namespace), Lease writes per
minute, and kube-apiserver's CPU seconds per minute (its /proc; the node's own components run
beside it, so it is a bound, not the contender's alone: the scale section, bench/renew.py,
compares CPU at 300 sidecars).
Every pod's /leader is sampled from inside its network namespace (leasehold_testing.pod_watch,
no fenced writers: this measures); the Observer's overlap check runs at the end of each
contender and a failure fails the bench. Writes results["node"]."""
import json
import time

from leasehold_testing import Failure, log, wait_for
from leasehold_testing.clientgo_app import build_clientgo_image, clientgo_pod, deployment
from leasehold_testing.control_plane import ControlPlane
from leasehold_testing.helm import Helm, chart_value
from leasehold_testing.node_cluster import NodeCluster
from leasehold_testing.paths import ROOT
from leasehold_testing.pod_watch import PodWatch
from scale import Meter
from sections import split_counts
from settings import loadavg, summary

IMAGE = "leasehold:node"
D, R, P = 15.0, 10.0, 2.0  # the chart's defaults (checked against values.yaml below)
REPLICAS = 3
PROFILE = {"full": dict(reps=10, rollouts=3, window_s=120),
           "quick": dict(reps=3, rollouts=1, window_s=30),
           "smoke": dict(reps=1, rollouts=1, window_s=10)}
# Issue 40 §2's timings: a long lease, renewals every 15 s, crash failover on the kubelet's word.
LONG = {"leaseDuration": "60s", "renewDeadline": "40s", "retryPeriod": "2s",
        "renewInterval": "15s"}
WRITES = ("update", "patch")


class Contender:
    """One kind of Deployment in its namespace: how it is installed, its Lease, and the
    container whose process elects."""

    def __init__(self, label, cluster, lease, deployment_name, elector):
        self.label, self.cluster, self.lease = label, cluster, lease
        self.deployment, self.elector = deployment_name, elector

    def holder(self):
        out = self.cluster.kubectl("get", "lease", self.lease, "-o", "json", ok=False)
        return json.loads(out)["spec"].get("holderIdentity") if out else None

    def settled(self, watch):
        """(PodSidecar, answer) once 3 pods are Ready and the Lease's holder says leader=true."""
        if not self.cluster.all_ready(REPLICAS):
            return None
        return watch.leader(self.holder())

    def window(self, watch, seconds):
        """A quiet window with a settled leader: the requests of this namespace's
        ServiceAccounts per minute (Lease requests by verb, the rest by verb:resource), Lease
        writes per minute, kube-apiserver's CPU."""
        wait_for(f"{self.label}: 3 Ready pods and a leader before the window",
                 lambda: self.settled(watch), 240, interval=0.2)
        cp = self.cluster.cp
        offset = cp.audit.size()
        meter = Meter(cp)
        meter.start()
        time.sleep(seconds)
        res = meter.stop()
        time.sleep(0.3)  # the audit log is written as requests finish
        users = f"system:serviceaccount:{self.cluster.namespace}:"
        leases, other = {}, {}
        for user, counts in cp.audit.counters_of(cp.audit.events(offset),
                                                 by_resource=True).items():
            if user.startswith(users):
                lc, rest = split_counts(counts)
                for into, part in ((leases, lc), (other, rest)):
                    for k, n in part.items():
                        into[k] = into.get(k, 0) + n / res["minutes"]
        out = {"window_s": round(res["minutes"] * 60, 1),
               "lease_requests_per_min": {k: round(v, 2) for k, v in sorted(leases.items())},
               "lease_writes_per_min": round(sum(leases.get(v, 0) for v in WRITES), 2),
               "other_requests_per_min": {k: round(v, 2) for k, v in sorted(other.items())},
               "apiserver_cpu_s_per_min": round(res["apiserver"]["cpu_s_per_min"], 3),
               "etcd_puts_per_min": res["etcd"]["puts_per_min"]}
        log(f"node {self.label}: {out['window_s']:.0f} s window: {out['lease_writes_per_min']} "
            f"Lease writes/min, Lease requests {out['lease_requests_per_min']}, other "
            f"{out['other_requests_per_min']}, kube-apiserver {out['apiserver_cpu_s_per_min']} "
            "CPU s/min")
        return out


def measure(contender, watch, prof, fast_failover=False):
    cluster, out = contender.cluster, {"delete": [], "crash": [], "rollout": []}

    def settle(what):
        return wait_for(f"{contender.label}: 3 Ready pods and a leader {what}",
                        lambda: contender.settled(watch), 240, interval=0.2)

    def takeover(what, rep, act):
        """ACT(sidecar, answer) of the settled leader returns what to do to it; the seconds from
        doing it to another pod's first leader=true."""
        sidecar, answer = settle(f"before a {what}")
        do = act(sidecar, answer)
        t0 = time.time()
        do()
        took, _ = wait_for(f"{contender.label}: a new leader after the {what}",
                           lambda: watch.first_true(t0, answer["fencingToken"],
                                                    but=answer["identity"]),
                           D + 2.2 * P + 30, interval=0.01)
        log(f"node {contender.label}: {what} {rep + 1}/{prof['reps']}: {took:.3f} s")
        return took

    def delete(sidecar, _answer):
        return lambda: cluster.kubectl("delete", "pod", sidecar.name, "--wait=false")

    def crash(sidecar, answer):
        # Its claim lasts until its validUntil; with --fast-failover until it dies (its app's
        # connection to /leader fails at once).
        (sidecar.died if fast_failover else sidecar.killed).add(answer["identity"])
        pod = cluster.pod(sidecar.name)
        return lambda: cluster.kill(pod, contender.elector)

    out["crash"] = [takeover("crash", rep, crash) for rep in range(prof["reps"])]
    if fast_failover:  # the crash alone: the rest is as without it
        load = contender.window(watch, prof["window_s"])
        terms, _, _ = watch.check()
        return {"crash_s": summary(out["crash"]), "terms": len(terms), "load": load,
                "raw": out}
    out["delete"] = [takeover("delete", rep, delete) for rep in range(prof["reps"])]
    for rep in range(prof["rollouts"]):
        settle("before a rollout")
        t0 = time.time()
        cluster.kubectl("rollout", "restart", f"deployment/{contender.deployment}")
        cluster.kubectl("rollout", "status", f"deployment/{contender.deployment}",
                        "--timeout=600s", timeout=620)
        settle("after the rollout")
        began, leaderless = watch.leadership(t0, time.time())
        out["rollout"].append({"terms": len(began), "leaderless_s": leaderless,
                               "seconds": time.time() - t0})
        log(f"node {contender.label}: rollout {rep + 1}/{prof['rollouts']}: {len(began)} new "
            f"terms, {leaderless:.2f} s with no leader")
    load = contender.window(watch, prof["window_s"])
    terms, _, _ = watch.check()
    return {"load": load, "delete_s": summary(out["delete"]), "crash_s": summary(out["crash"]),
            "crash_minus_D_s": summary([t - D for t in out["crash"]]),
            "rollout": out["rollout"],
            "rollout_terms": summary([r["terms"] for r in out["rollout"]]),
            "rollout_leaderless_s": summary([r["leaderless_s"] for r in out["rollout"]]),
            "terms": len(terms), "raw": out}


# bench/run's server for this section (settings.SectionServer).
NODE_SERVER = "single-node cluster (tests/realkube/start.sh up DIR --node)"


def run_node(sidecar_binary, profile, results):
    prof = PROFILE[profile]
    timings = {k: chart_value(f"timings.{k}") for k in ("leaseDuration", "renewDeadline",
                                                         "retryPeriod")}
    if timings != {"leaseDuration": "15s", "renewDeadline": "10s", "retryPeriod": "2s"} or \
            chart_value("example.replicas") != REPLICAS:
        raise Failure(f"the chart's defaults changed ({timings}, example.replicas "
                      f"{chart_value('example.replicas')}): bench/node.py measures 15s/10s/2s "
                      "with 3 replicas")
    from leasehold_testing.image_build import build_image  # the deploy tests' one
    build_image(IMAGE, sidecar_binary)
    build_clientgo_image()
    res = results["node"] = {"timings": "15s/10s/2s", "replicas": REPLICAS, **prof,
                             "loadavg_start": loadavg()}
    t0 = time.monotonic()
    with ControlPlane(node=True) as cp:
        res["cluster_up_s"] = round(time.monotonic() - t0, 1)
        lh = NodeCluster(cp, "bench-leasehold", Helm(None, cp.admin_kubeconfig))
        lh.import_images(IMAGE, chart_value("example.app.image"),
                         "leasehold-clientgo:node")
        contender = Contender("leasehold", lh, "demo", "demo", "leasehold")
        lh.install_chart("demo", f"docker.io/library/{IMAGE}")
        with PodWatch(lh) as watch:
            res["leasehold"] = measure(contender, watch, prof)
        lh.helm("uninstall", "demo", "--wait", "--timeout", "120s")

        ff = NodeCluster(cp, "bench-fast-failover", Helm(None, cp.admin_kubeconfig))
        ff.install_chart("fast", f"docker.io/library/{IMAGE}", "--set", "fastFailover=true",
                         "--set", "statusFile.enabled=false")
        with PodWatch(ff) as watch:
            res["fast-failover"] = measure(Contender("leasehold --fast-failover", ff, "fast",
                                                     "fast", "leasehold"), watch, prof,
                                           fast_failover=True)
        ff.helm("uninstall", "fast", "--wait", "--timeout", "120s")

        lg = NodeCluster(cp, "bench-fast-long", Helm(None, cp.admin_kubeconfig))
        lg.install_chart("long", f"docker.io/library/{IMAGE}", "--set", "fastFailover=true",
                         "--set", "statusFile.enabled=false",
                         *[a for k, v in LONG.items() for a in ("--set", f"timings.{k}={v}")])
        with PodWatch(lg) as watch:
            res["fast-failover-long"] = measure(
                Contender("leasehold --fast-failover 60s/40s/2s, I 15s", lg, "long", "long",
                          "leasehold"), watch, prof, fast_failover=True)
        res["fast-failover-long"]["timings"] = LONG
        lg.helm("uninstall", "long", "--wait", "--timeout", "120s")

        ns = "bench-clientgo"
        cg = NodeCluster(cp, ns)
        cp.kubectl("create", "namespace", ns)
        cp.kubectl("apply", "-f", "-", input=(ROOT / "manifests/rbac.yaml").read_text().replace(
            "namespace: default", f"namespace: {ns}"))
        cg.kubectl("apply", "-f", "-", input=json.dumps(deployment(
            "clientgo", ns, clientgo_pod("leasehold", D, R, P), REPLICAS)))
        with PodWatch(cg) as watch:
            res["client-go"] = measure(Contender("client-go", cg, "leasehold", "clientgo", "app"),
                                       watch, prof)
    res["loadavg_end"] = loadavg()


def node_markdown(N):
    from report import fmt_ms  # here: report imports this module
    L, C = N["leasehold"], N["client-go"]

    def pair(key, scale=1000, unit=" ms", digits=0):
        return [f"{x[key]['p50'] * scale:.{digits}f} / {x[key]['p99'] * scale:.{digits}f}{unit}"
                for x in (L, C)]

    def rollouts(x):
        return (f"{', '.join(str(r['terms']) for r in x['rollout'])} new terms; "
                f"{', '.join(fmt_ms(r['leaderless_s']) for r in x['rollout'])} leaderless")
    rows = [
        (f"kubectl delete pod of the leader -> another pod's /leader true, p50 / p99 "
         f"({N['reps']} each)", *pair("delete_s")),
        ("SIGKILL of the electing process -> another pod's /leader true, p50 / p99",
         *pair("crash_s", 1, " s", 2)),
        ("the same minus D (the Lease expires D after the last renewal, at most P before the "
         "kill)", *pair("crash_minus_D_s")),
    ]
    if "fast-failover" in N:
        F = N["fast-failover"]["crash_s"]
        rows.append(("SIGKILL of the leader's sidecar with --fast-failover (the kubelet's "
                     "word: its container exited) -> the next /leader true, p50 / p99",
                     f"{F['p50']:.2f} / {F['p99']:.2f} s", "(no such mode)"))
    rows += [
        (f"kubectl rollout restart of {N['replicas']} replicas ({N['rollouts']} each): "
         "leadership changes, time with no pod claiming", rollouts(L), rollouts(C)),
    ]
    md = [f"## On a real node (issue 24): {N['replicas']} pods on a single-node cluster, "
          f"{N['timings']}, cluster up in {N['cluster_up_s']:.0f} s", "",
          "| measure | leasehold (chart, native sidecar) | client-go (elector in the app) |",
          "|---|---|---|"]
    md += ["| " + " | ".join(r) + " |" for r in rows]
    ff, fl = N.get("fast-failover"), N.get("fast-failover-long")
    loads = [(name, x) for name, x in (
        ("leasehold 15s/10s/2s", L), ("leasehold --fast-failover 15s/10s/2s", ff),
        ("leasehold --fast-failover 60s/40s/2s, renew interval 15s", fl),
        ("client-go 15s/10s/2s", C)) if x and "load" in x]
    if loads:
        md += ["", f"A quiet window of {loads[0][1]['load']['window_s']:.0f} s each, one Lease, "
               f"{N['replicas']} pods (the audit log; kube-apiserver's CPU includes the node's "
               "own components):", "",
               "| contender | SIGKILL -> next leader p50 / p99 | Lease writes/min | Lease "
               "requests/min | pod requests/min | kube-apiserver CPU s/min |",
               "|---|---|---|---|---|---|"]
        for name, x in loads:
            ld = x["load"]
            pods = sum(v for k, v in ld["other_requests_per_min"].items()
                       if k.endswith(":pods"))
            md.append(f"| {name} | {x['crash_s']['p50']:.2f} / {x['crash_s']['p99']:.2f} s | "
                      f"{ld['lease_writes_per_min']:.1f} | "
                      f"{sum(ld['lease_requests_per_min'].values()):.1f} | {pods:.1f} | "
                      f"{ld['apiserver_cpu_s_per_min']:.2f} |")
    md += ["", f"Samplers in every pod's network namespace: {L['terms']} leasehold terms"
           + (f", {ff['terms']} with --fast-failover" if ff else "")
           + (f", {fl['terms']} with --fast-failover at 60s/40s/2s" if fl else "")
           + f" and {C['terms']} client-go terms, no two claims overlapping in any."]
    return "\n".join(md)
