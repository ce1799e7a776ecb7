"""One chaos scenario on the real kube-apiserver and etcd: Scenario's schedule and checks with
the faults a real control plane can have (tests/chaos/run --real)."""
import random
import threading
from collections import Counter

from leasehold_testing import wait_for
from scenario import LIVENESS_BOUND, Scenario

# --real: the faults the real control plane can have. The HTTP-level ones (5xx, 429, malformed
# bodies, answers dropped after the write) need the test server; a TCP proxy per sidecar user
# gives partitions, latency and resets instead, and the control plane itself is paused and
# restarted. The plane is HA (two kube-apiservers on one etcd): each sidecar slot is routed to
# one of them at random, and the apiserver faults hit one apiserver at a time, so the Lease
# history (an admin watch through a proxy of its own, moved off an apiserver before it is
# faulted) never misses a version.
REAL_FAULT_KINDS = {
    "sigstop_short": 3, "sigstop_long": 3, "kill9_restart": 3, "sigterm_restart": 1,
    "latency": 2, "partition": 3, "watch_cut": 2, "outage": 2, "apiserver": 2, "etcd": 1,
}
# After an apiserver or etcd restart the sidecars' connections come back through TLS handshakes,
# token authentication and the watch caches of a real server: allowance on top of the bound.
REAL_ALLOWANCE = 0.5
APISERVER_MODES = ["sigstop", "restart_term", "restart_kill"]
ETCD_MODES = ["sigstop", "restart"]


class RealScenario(Scenario):
    """The same schedule on the real kube-apiserver and etcd (RealEnv on a shared HA
    ControlPlane): sidecar faults as on the test server, API faults through the proxies and the
    control plane's processes."""
    fault_kinds = REAL_FAULT_KINDS
    liveness_bound = LIVENESS_BOUND + REAL_ALLOWANCE

    def __init__(self, env, seed, k, args, workdir, history_proxy):
        super().__init__(env, seed, k, args, workdir)
        self.plane = env.plane
        self.history_proxy = history_proxy
        self.history_port = history_proxy.port
        route_rng = random.Random(f"{seed}:{k}:routes")
        self.routes = [route_rng.choice(self.plane.apiservers()) for _ in range(self.n)]
        for slot, component in enumerate(self.routes):
            env.route(f"replica-{slot}", component)
        self.latency = {}       # user -> {rule id: seconds}
        self.faulted = set()    # components paused or down right now
        self.workers = []       # threads restarting a component

    def describe(self):
        split = Counter(self.routes)
        return super().describe() + f" [{', '.join(f'{c}: {n}' for c, n in sorted(split.items()))}]"

    def fault_params(self, kind):
        rng = self.rng
        if kind == "outage":
            return {"dur": round(rng.uniform(0.5, 3.5), 3)}
        if kind == "apiserver":
            return {"which": rng.choice(["apiserver", "apiserver2"]),
                    "mode": rng.choice(APISERVER_MODES), "dur": round(rng.uniform(0.5, 3.5), 3)}
        if kind == "etcd":
            return {"mode": rng.choice(ETCD_MODES), "dur": round(rng.uniform(0.5, 3.5), 3)}
        p = super().fault_params(kind)
        if kind == "latency":
            p["direction"] = rng.choice(["up", "both"])
        return p

    def users(self, which):
        if which == "all":
            return [f"replica-{slot}" for slot, inc in enumerate(self.slots) if inc is not None]
        slot = self.pick("leader" if which == "leader" else "follower", runnable=False)
        return [f"replica-{slot}"] if slot is not None else []

    def apply(self, kind, p):
        if kind in ("sigstop_short", "sigstop_long", "kill9_restart", "sigterm_restart"):
            return super().apply(kind, p)
        applied = True
        if kind == "partition":
            slot = self.pick(p["target"], runnable=False)
            user = f"replica-{slot}"
            if slot is None or user in self.partitioned:
                applied = False
            else:
                self.partition(user, p["dur"])
                self.note(f"partition {user} for {p['dur']}s")
        elif kind == "outage":
            users = [u for u in self.users("all") if u not in self.partitioned]
            for u in users:
                self.partition(u, p["dur"])
            self.note(f"API outage (every proxy partitioned) for {p['dur']}s")
        elif kind == "latency":
            users = self.users(p["client"])
            for u in users:
                self.add_latency(u, p["ms"] / 1000, p["direction"], p["window"])
            applied = bool(users)
            if applied:
                self.note(f"latency {p['ms']} ms ({p['direction']}) on {users} for "
                          f"{p['window']}s")
        elif kind == "watch_cut":
            users = self.users(p["client"])
            for u in users:
                self.env.cut_watches(u)
            applied = bool(users)
            self.note(f"reset every connection of {users}")
        elif kind == "apiserver":
            applied = self.apiserver_fault(p)
            kind = f"apiserver_{p['mode']}"
        elif kind == "etcd":
            applied = self.etcd_fault(p)
            kind = f"etcd_{p['mode']}"
        (self.applied if applied else self.skipped)[kind] += 1

    def partition(self, user, dur):
        self.partitioned.add(user)
        self.env.partition(user)
        self.later(dur, lambda: self.heal_partition(user), f"heal {user}")

    def heal_partition(self, user):
        if user in self.partitioned:
            self.partitioned.discard(user)
            self.env.heal(user)

    def add_latency(self, user, seconds, direction, window):
        self.seq += 1
        rid = f"latency-{self.seq}"
        self.latency.setdefault(user, {})[rid] = (seconds, direction)
        self.latency_rules[rid] = seconds
        self.set_latency(user)

        def remove():
            if rid in self.latency.get(user, {}):
                del self.latency[user][rid]
                self.set_latency(user)
                self.note_delay_end(rid)
        self.later(window, remove, f"remove latency {rid}")

    def set_latency(self, user):
        """The largest delay of the rules in force, per direction (0 when none)."""
        rules = self.latency.get(user, {}).values()
        up = max([s for s, _ in rules] or [0])
        down = max([s for s, d in rules if d == "both"] or [0])
        self.env.set_latency(user, up, "up")
        self.env.set_latency(user, down, "down")

    def move_history_off(self, component):
        if self.history_proxy.upstream_port == self.plane.ports[component]:
            other = next(c for c in self.plane.apiservers() if c != component)
            self.history_proxy.retarget(self.plane.ports[other])
            self.history_proxy.reset()  # the watch resumes on the other apiserver

    def apiserver_fault(self, p):
        which = p["which"]
        if any(c.startswith("apiserver") for c in self.faulted):
            return False  # one apiserver at a time: the Lease history needs the other
        self.move_history_off(which)
        self.faulted.add(which)
        if p["mode"] == "sigstop":
            self.plane.pause(which)
            self.later(p["dur"], lambda: self.resume(which), f"resume {which}")
            self.note(f"SIGSTOP {which} for {p['dur']}s")
        else:
            sig = "TERM" if p["mode"] == "restart_term" else "KILL"
            self.work(which, lambda: self.plane.restart(which, sig))
            self.note(f"restart {which} ({sig})")
        return True

    def etcd_fault(self, p):
        if "etcd" in self.faulted:
            return False
        self.faulted.add("etcd")
        if p["mode"] == "sigstop":
            self.plane.pause("etcd")
            self.later(p["dur"], lambda: self.resume("etcd"), "resume etcd")
            self.note(f"SIGSTOP etcd for {p['dur']}s")
        else:
            self.plane.stop("etcd")
            self.later(p["dur"], lambda: self.work("etcd", lambda: self.plane.start("etcd")),
                       "resume etcd (start)")
            self.note(f"kill -9 etcd, start again in {p['dur']}s")
        return True

    def resume(self, component):
        if component in self.plane.paused:
            self.plane.resume(component)
        self.faulted.discard(component)

    def work(self, component, fn):
        """Runs a blocking start.sh call (a restart takes seconds) beside the schedule."""
        def run():
            try:
                fn()
            except Exception as e:  # noqa: BLE001 - reported as a failure of the scenario
                self.failures.append(f"{component}: {e}")
            finally:
                self.faulted.discard(component)
        t = threading.Thread(target=run, daemon=True)
        t.start()
        self.workers.append(t)

    def heal_api(self):
        for user in list(self.partitioned):
            self.heal_partition(user)
        for user in list(self.latency):
            self.latency[user] = {}
            self.set_latency(user)
        for rid in list(self.latency_rules):
            self.note_delay_end(rid)
        for c in list(self.plane.paused):
            self.resume(c)
        for t in self.workers:
            t.join(120)
        self.workers = []
        if "etcd" in self.faulted or not (self.plane.dir / "etcd.pid").exists():
            self.plane.start("etcd")  # stopped, and its start was not due yet
        self.faulted.clear()
        # Healed = every apiserver writes again (its /readyz can say ok a little before its
        # storage client has reconnected to a restarted etcd).
        for c in self.plane.apiservers():
            wait_for(f"{c} to accept writes", lambda c=c: self.writes(c), 90,
                     interval=0.1)

    def writes(self, component):
        try:
            return self.plane.api("POST", f"/api/v1/namespaces/{self.env.namespace}/configmaps",
                                  {"metadata": {"generateName": "heal-probe-"}}, ok=None,
                                  component=component, timeout=5)[0] == 201
        except OSError:
            return False
