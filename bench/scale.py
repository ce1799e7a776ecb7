"""bench/run --only scale: what hundreds of sidecars cost the real control plane (issue 16).

Points (leases x replicas per Lease): replicas on one Lease 3, 10, 30, 100, and 1, 10, 30 Leases
x 10 replicas (--quick: 1 and 3 replicas, 1 and 2 Leases x 3). Each point runs leasehold (watch)
and then the baseline (real client-go), one after the other, at 15s/10s/2s over the same fixed
window. Between points every process is killed and the Leases are deleted, so each point starts
from no Lease. One ServiceAccount (chart Role, TokenRequest token) per slot (Lease k, replica i),
made once and reused by every point and both implementations.

Per point: Lease API requests per minute by verb (audit log; leader, followers, per Lease),
kube-apiserver and etcd CPU seconds per minute and RSS (/proc of their pids), etcd's read and
write counts (its /metrics), total sidecar RSS and CPU (/proc), time from the first exec until
every Lease has a holder, the sidecars' requests from the first exec until the window. An idle
window (no sidecars) first gives the control plane's own background (bench/run starts
kube-apiserver with --etcd-count-metric-poll-period=0 for this section: its per-minute count of
every resource type is ~100 etcd reads at once). At the largest point, with it still running,
crash failover (kill -9) and SIGTERM handover of one more Lease (3 replicas, scaled timings D=2s
R=1.5s P=0.3s, like the failover section), and the same series with nothing else running, for
both implementations.

Every loop is bounded in count and time; every process is killed when the point ends and, on
any exception or signal, by the envs' exit (RealServer.__exit__).

Why ~410 lines in one file: one section, in two parts only it and renew.py use (the control
plane's own counters, the section's loop: bench/run --only renew runs it with other
contenders); its report and the --quick output check are scale_report.py, its pictures
plots.py."""
import os
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from leasehold_testing import AuditLog, Failure, log
from leasehold_testing.metrics import parse
from leasehold_testing.proc import cpu_ticks, rss_kb
from sections import mode_name, split_counts, takeover_entry, takeover_series
from servers import make_sidecar, short
from settings import DEFAULT_ARGS, MODES, VERBS, loadavg, summary

LEASE_PATH = "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}"
P_DEFAULT = 2.0  # the retry period of DEFAULT_ARGS: 60/P renewals per minute per Lease
TICK = os.sysconf("SC_CLK_TCK")


def points_of(prof):
    """[(leases, replicas per Lease)] in order, each once: the replica series on one Lease, then
    the Lease series."""
    out = [(1, n) for n in prof["replicas"]]
    out += [(n, prof["per_lease"]) for n in prof["leases"] if (n, prof["per_lease"]) not in out]
    return out


# ----------------------------------------------------------------------------------------------
# What the kernel and etcd say about the control plane
#
# etcd's reads are its Range calls (grpc_server_handled_total{grpc_method="Range"}): a GET that
# kube-apiserver does not answer from its watch cache. Its writes are Txn calls (every
# kube-apiserver create/update is a Txn holding a Put; etcd_mvcc_put_total counts the Puts).
# etcd_mvcc_range_total also counts the reads inside each Txn, so it is kept, not used. etcd
# cannot say which resource a read was for, and kube-apiserver reads other resources now and
# then on its own (bursts of ~25 Ranges seen in 10 s with no sidecar request): kube-apiserver's
# etcd_requests_total{resource="leases"} says which reads were for Leases.


def etcd_counts(url):
    """etcd's counters: every etcd_mvcc_*_total series, and gRPC calls by method."""
    with urllib.request.urlopen(url + "/metrics", timeout=5) as r:
        m = parse(r.read().decode())
    out = {}
    for k, v in m.items():
        name = k.partition("{")[0]
        if name.startswith("etcd_mvcc_") and name.endswith("_total"):
            out[k] = v
        elif name == "grpc_server_handled_total":
            method = k.split('grpc_method="', 1)[1].split('"', 1)[0] if "grpc_method" in k else "?"
            out[f"grpc:{method}"] = out.get(f"grpc:{method}", 0) + v
    return out


def label(series, name):
    """The value of label `name` in a series such as 'x_total{a="1",b="2"}' ("" if none)."""
    if f'{name}="' not in series:
        return ""
    return series.split(f'{name}="', 1)[1].split('"', 1)[0]


def apiserver_counts(plane):
    """kube-apiserver's own counters for Leases and pods (renew.py's pod watches): the etcd
    requests it made for them by operation ("leases/etcd:get": etcd_requests_total; get, list
    and getCurrentResourceVersion are reads) and the requests it served by verb
    ("leases/api:PUT": apiserver_request_total)."""
    code, text = plane.api("GET", "/metrics", ok=None)
    if code != 200 or not isinstance(text, str):
        raise Failure(f"kube-apiserver /metrics: {code}")
    out = {}
    for k, v in parse(text).items():
        name = k.partition("{")[0]
        resource = label(k, "resource")
        if name in ("etcd_requests_total", "apiserver_request_total") and \
                resource in ("leases", "pods") and not label(k, "subresource"):
            key = (f"{resource}/etcd:{label(k, 'operation')}" if name == "etcd_requests_total"
                   else f"{resource}/api:{label(k, 'verb')}")
            out[key] = out.get(key, 0) + v
    return out


ETCD_READS = ("etcd:get", "etcd:list", "etcd:getCurrentResourceVersion")


class Meter:
    """CPU (ticks), RSS and etcd counters of the control plane and a set of pids over a window."""

    def __init__(self, plane, pids=()):
        self.plane = plane
        self.pids = list(pids)
        self.api_pid, self.etcd_pid = plane.pid("apiserver"), plane.pid("etcd")
        self.etcd_url = plane.vars["ETCD_URL"]

    def start(self):
        self.t0 = time.monotonic()
        self.api0, self.etcd0 = cpu_ticks(self.api_pid), cpu_ticks(self.etcd_pid)
        self.side0 = {p: cpu_ticks(p) for p in self.pids}
        self.counts0 = etcd_counts(self.etcd_url)
        self.api_counts0 = apiserver_counts(self.plane)

    def stop(self):
        minutes = (time.monotonic() - self.t0) / 60.0
        api, etcd = cpu_ticks(self.api_pid), cpu_ticks(self.etcd_pid)
        counts = etcd_counts(self.etcd_url)
        api_counts = apiserver_counts(self.plane)
        side = {}
        for p in self.pids:
            try:
                side[p] = cpu_ticks(p)
            except OSError:
                pass
        per_min = {k: (v - self.counts0.get(k, 0)) / minutes for k, v in counts.items()}
        api_min = {k: (v - self.api_counts0.get(k, 0)) / minutes for k, v in api_counts.items()}
        sidecar_rss = [rss_kb(p) for p in self.pids]

        def etcd_reads(resource):
            return sum(api_min.get(f"{resource}/{k}", 0) for k in ETCD_READS)
        return {
            "minutes": minutes, "loadavg": loadavg(),
            "apiserver": {"cpu_s_per_min": (api - self.api0) / TICK / minutes,
                          "rss_kB": rss_kb(self.api_pid),
                          "lease_etcd_reads_per_min": etcd_reads("leases"),
                          "pod_etcd_reads_per_min": etcd_reads("pods"),
                          "counters_per_min": {k: round(v, 2)
                                               for k, v in sorted(api_min.items()) if v}},
            "etcd": {"cpu_s_per_min": (etcd - self.etcd0) / TICK / minutes,
                     "rss_kB": rss_kb(self.etcd_pid),
                     "reads_per_min": per_min.get("grpc:Range"),
                     "txns_per_min": per_min.get("grpc:Txn"),
                     "puts_per_min": per_min.get("etcd_mvcc_put_total"),
                     "mvcc_ranges_per_min": per_min.get("etcd_mvcc_range_total"),
                     "counters_per_min": {k: round(v, 2) for k, v in sorted(per_min.items())}},
            "sidecars": {"n": len(self.pids), "alive": len(side),
                         "cpu_s_per_min": sum(side[p] - self.side0[p] for p in side)
                         / TICK / minutes,
                         "rss_kB": sum(r for r in sidecar_rss if r),
                         "rss_kB_each_mean": (sum(r for r in sidecar_rss if r) / len(self.pids))
                         if self.pids else None},
        }


# ----------------------------------------------------------------------------------------------
# The section


class Scale:
    """The section's steps; renew.py's Renew is one with other contenders than MODES."""

    chart_values = None  # the chart's values of every slot's Role (renew.py: fastFailover)
    prefix = "scale"     # of the Lease names
    describe = staticmethod(mode_name)

    def __init__(self, server, prof):
        self.server = server
        self.plane = server.plane
        self.prof = prof
        self.points = points_of(prof)
        self.max_leases = max(n for n, _ in self.points)
        self.envs = []         # env of Lease slot k
        self.kubeconfigs = {}  # (k, i) -> kubeconfig path

    def lease_name(self, k):
        return f"{self.prefix}-{k}"

    def setup(self):
        """An env (namespace, chart Role) per Lease slot and a user per replica slot, made in 4
        threads (one env each at a time: RealEnv's token maps are not shared between threads)."""
        need = {}
        for leases, n in self.points:
            for k in range(leases):
                need[k] = max(need.get(k, 0), n)
        t0 = time.monotonic()

        def one(k):
            env = self.server.env_for(self.lease_name(k), self.chart_values)
            return k, env, [self.server.kubeconfig(env, f"r{i}") for i in range(need[k])]
        with ThreadPoolExecutor(4) as pool:
            done = sorted(pool.map(one, sorted(need)), key=lambda x: x[0])
        for k, env, kcs in done:
            self.envs.append(env)
            for i, kc in enumerate(kcs):
                self.kubeconfigs[(k, i)] = kc
        log(f"{self.prefix}: {len(self.envs)} namespaces and {len(self.kubeconfigs)} "
            f"ServiceAccounts with tokens in {time.monotonic() - t0:.1f} s")
        return time.monotonic() - t0

    def holders(self, leases):
        """{k: (holderIdentity, leaseTransitions)} of the first `leases` slots, from one LIST of
        every Lease (kept-alive connection; served from the watch cache)."""
        body = self.server.get("/apis/coordination.k8s.io/v1/leases?resourceVersion=0", "scale")
        by_ns = {e.namespace: k for k, e in enumerate(self.envs[:leases])}
        out = {}
        for item in body.get("items", []):
            k = by_ns.get(item["metadata"]["namespace"])
            if k is not None and item["metadata"]["name"] == self.lease_name(k):
                spec = item.get("spec", {})
                out[k] = (spec.get("holderIdentity") or "", spec.get("leaseTransitions", 0))
        return out

    def delete_leases(self, leases):
        """A fresh start for the next point: each Lease deleted and, where the chart makes it
        (its Role has no create), made again empty as the chart would."""
        for k in range(leases):
            env = self.envs[k]
            self.plane.api("DELETE", LEASE_PATH.format(ns=env.namespace, name=self.lease_name(k)),
                           ok=(200, 404))
            for doc in getattr(env, "rendered", []):
                if doc["kind"] == "Lease":
                    env.create(doc)

    def idle(self):
        """The control plane with no sidecars: its own background over the idle window."""
        log(f"{self.prefix}: idle control plane, {self.prof['idle_s']} s")
        m = Meter(self.plane)
        m.start()
        time.sleep(self.prof["idle_s"])
        return m.stop()

    def point(self, mode, leases, n, takeovers=False):
        names = [[f"{short(mode)}{leases}x{n}-{k}-{i}" for i in range(n)] for k in range(leases)]
        who = {}  # identity -> (k, i)
        sidecars = []
        for k in range(leases):
            for i in range(n):
                s = self.sidecar(mode, k, i, names[k][i])
                sidecars.append(s)
                who[s.name] = (k, i)
        log(f"{self.prefix}: {self.describe(mode)}, {leases} Lease(s) x {n} = {len(sidecars)} "
            "sidecars")
        try:
            return self._measure(mode, leases, n, sidecars, who, takeovers)
        finally:
            for s in sidecars:
                if s.alive():
                    s.proc.kill()
            for s in sidecars:
                s.reap()
            self.delete_leases(leases)

    def sidecar(self, mode, k, i, name):
        """Replica i of Lease slot k, as that slot's user, at 15s/10s/2s (renew.py: others)."""
        return make_sidecar(self.server, self.envs[k], name, self.lease_name(k), DEFAULT_ARGS,
                            mode, kubeconfig=self.kubeconfigs[(k, i)])

    def slot_counts(self, events, who):
        """{"verb:resource": n} of the requests among `events` by the slots in `who`."""
        users = {self.envs[k].client_name(f"r{i}") for k, i in who.values()}
        out = {}
        for user, counts in AuditLog.counters_of(events, by_resource=True).items():
            if user in users:
                for key, c in counts.items():
                    out[key] = out.get(key, 0) + c
        return out

    def _measure(self, mode, leases, n, sidecars, who, takeovers):
        P = self.prof
        offset0 = self.plane.audit.size()
        t0 = time.monotonic()
        for s in sidecars:
            s.start(wait=False)
        spawn_s = time.monotonic() - t0
        led = {}
        deadline = t0 + P["startup_timeout_s"]
        while len(led) < leases and time.monotonic() < deadline:
            for k, (holder, _) in self.holders(leases).items():
                if k not in led and holder in who and who[holder][0] == k:
                    led[k] = time.monotonic() - t0
            time.sleep(0.05)
        if len(led) < leases:
            raise Failure(f"scale {mode} {leases}x{n}: {leases - len(led)} Lease(s) without a "
                          f"holder {P['startup_timeout_s']} s after the start")
        startup = max(led.values())
        log(f"  every Lease led {startup:.2f} s after the first exec ({spawn_s:.2f} s to exec "
            "them all)")
        time.sleep(P["settle_s"])  # followers have their watch open / their poll rhythm
        dead = [s.name for s in sidecars if not s.alive()]
        if dead:
            raise Failure(f"scale {mode} {leases}x{n}: exited before the window: {dead[:5]}")
        before = self.holders(leases)
        offset = self.plane.audit.size()
        startup_counts = self.slot_counts(self.plane.audit.events(offset0), who)
        meter = Meter(self.plane, [s.proc.pid for s in sidecars])
        meter.start()
        time.sleep(P["window_s"])
        res = meter.stop()
        after = self.holders(leases)
        time.sleep(0.3)  # the audit log is written as requests finish
        counters = AuditLog.counters_of(self.plane.audit.events(offset), by_resource=True)
        dead = [s.name for s in sidecars if not s.alive()]
        if dead:  # e.g. a `pkill` from someone else on a shared machine: counts would be wrong
            raise Failure(f"scale {mode} {leases}x{n}: exited during the window: {dead[:5]}")
        minutes = res["minutes"]
        by_verb, other = {}, {}
        leader_v, follower_v, per_lease = {}, {}, []
        gets_by_followers = 0
        for k in range(leases):
            env = self.envs[k]
            holder = after.get(k, ("", 0))[0]
            lease_total = 0
            for s in sidecars:
                if who[s.name][0] != k:
                    continue
                leases_c, rest = split_counts(counters.get(env.client_name(
                    f"r{who[s.name][1]}"), {}))
                for v, c in leases_c.items():
                    by_verb[v] = by_verb.get(v, 0) + c / minutes
                    into = leader_v if s.name == holder else follower_v
                    into[v] = into.get(v, 0) + c / minutes
                    lease_total += c
                    if s.name != holder and v in ("get", "list"):
                        gets_by_followers += c
                for key, c in rest.items():
                    other[key] = other.get(key, 0) + c / minutes
            per_lease.append(lease_total / minutes)
        changed = [k for k in range(leases) if before.get(k) != after.get(k)]
        res.update({
            "mode": mode, "leases": leases, "replicas_per_lease": n, "sidecar_count": len(sidecars),
            "window_s": round(minutes * 60, 1), "spawn_s": spawn_s,
            "startup_all_led_s": startup, "startup_led_s": summary(list(led.values())),
            "lease_requests_per_min": {v: by_verb[v] for v in VERBS if v in by_verb},
            "lease_requests_per_min_total": sum(by_verb.values()),
            "per_lease_per_min": sum(per_lease) / leases,
            "per_lease_per_min_max": max(per_lease),
            "per_lease_ratio_to_60_over_P": (sum(per_lease) / leases) / (60.0 / P_DEFAULT),
            "leader_per_min_mean": {v: c / leases for v, c in leader_v.items()},
            "follower_per_min_mean": {v: c / max(1, leases * (n - 1))
                                      for v, c in follower_v.items()},
            "follower_get_list_in_window": gets_by_followers,
            "other_requests_per_min": other,
            "requests_before_window": startup_counts,
            "leader_changed_leases": changed,
        })
        log(f"  {res['lease_requests_per_min_total']:.1f} Lease requests/min "
            f"({', '.join(f'{v} {c:.1f}' for v, c in res['lease_requests_per_min'].items())}), "
            f"{res['per_lease_per_min']:.1f} per Lease; kube-apiserver "
            f"{res['apiserver']['cpu_s_per_min']:.2f} CPU s/min, "
            f"{res['apiserver']['rss_kB'] / 1024:.0f} MB; etcd "
            f"{res['etcd']['cpu_s_per_min']:.2f} CPU s/min, reads "
            f"{res['etcd']['reads_per_min']:.1f}/min, writes "
            f"{res['etcd']['txns_per_min']:.1f}/min; "
            f"sidecars {res['sidecars']['rss_kB'] / 1024:.0f} MB, "
            f"{res['sidecars']['cpu_s_per_min']:.2f} CPU s/min"
            + (f"; leader changed in {len(changed)} Lease(s)" if changed else ""))
        if takeovers:
            res["takeover_loaded"] = self.takeovers(mode, "-loaded")
        return res

    def takeovers(self, mode, tag):
        out = {}
        for kind in ("kill", "term"):
            log(f"  {kind}: {self.prof['reps']} repetitions, {mode_name(mode)}, 3 replicas of "
                f"one more Lease{' beside the running point' if tag == '-loaded' else ', alone'}")
            entry = takeover_entry(takeover_series(self.server, mode, kind, self.prof["reps"],
                                                   tag), kind)
            t = entry["t"]
            log(f"    t p50 {t['p50'] * 1000:.1f} ms, p90 {t['p90'] * 1000:.1f} ms, max "
                f"{t['max'] * 1000:.1f} ms")
            out[kind] = entry
        return out


def run_scale(server, prof, results):
    """The section; results["scale"] = {settings, setup_s, idle, points: [..], takeover_quiet}."""
    if not getattr(server, "real", False):
        raise Failure("scale: needs the real kube-apiserver (--server real)")
    sc = prof["scale"]
    scale = Scale(server, sc)
    biggest = max(scale.points, key=lambda p: p[0] * p[1])
    log(f"scale: points {', '.join(f'{a}x{b}' for a, b in scale.points)} (Leases x replicas), "
        f"{sc['window_s']} s windows at 15s/10s/2s, {', '.join(MODES)}; takeovers at "
        f"{biggest[0]}x{biggest[1]}, {sc['reps']} repetitions")
    out = {"settings": dict(sc, points=scale.points, modes=list(MODES)), "points": []}
    results["scale"] = out
    out["setup_s"] = scale.setup()
    out["idle"] = scale.idle()
    out["takeover_quiet"] = {mode: scale.takeovers(mode, "-quiet") for mode in MODES}
    for leases, n in scale.points:
        for mode in MODES:
            out["points"].append(scale.point(mode, leases, n, takeovers=(leases, n) == biggest))
