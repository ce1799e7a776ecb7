"""One chaos scenario on the test API server (tests/chaos/run runs them): its seeded schedule of
faults, the sidecar processes with their samplers and fenced writers, the faults applied through
the test server's control port, the heal, and the checks on what was seen.

Why one file of ~600 lines: it is one class whose parts share one scenario's state (slots and
incarnations, fault rules in force, actions pending, the Lease history, the verdict), and
real_scenario.py overrides many of them; split, each part would pass that state around.
"""
import heapq
import json
import random
import signal
import time
from collections import Counter
from pathlib import Path

from leasehold_testing import D, P, R, Failure, http_request, wait_for
from leasehold_testing.fenced_store import FencedStore, FencedWriter
from leasehold_testing.incarnation import Incarnation, port_collision
from leasehold_testing.lease_history import LeaseHistory
from leasehold_testing.leader_sampler import Sampler
from leasehold_testing.run_cluster import RUN_FLAGS
from leasehold_testing.run_mode import Monitor, command_failures, journal_command, run_args
from leasehold_testing.shard_sampler import ShardObserver, balance_of, shards_of
from leasehold_testing.terms import (ROUNDING, check_history_tokens, check_store, check_terms,
                                     history_terms, sampled_terms)

# The first leader after the faults stop must come within D + P' + RESTART_ALLOWANCE, where
# P' = (1 + 1.2) P is the longest poll interval: a follower whose watch broke in the outage polls
# every P * (1 + 1.2 U[0,1)) (client-go's JitterUntil factor), so it may first see the final
# record up to 2.2 P after the heal and count its D from there (a watching follower: D + P).
# The allowance is for a killed process restarted at the heal (exec, kubeconfig, TLS) and for
# scheduling on this shared 2-core machine. Stated, not tuned to pass; the summary also counts
# the recoveries slower than the plain D + P.
JITTER = 1.2
RESTART_ALLOWANCE = 0.5
LIVENESS_BOUND = D + (1 + JITTER) * P + RESTART_ALLOWANCE
CONVERGE_EXTRA = 2.0  # followers agree on the holder within this after a leader exists
# --run-mode: every sidecar is `leasehold run [flags] -- run_mode_command.py` (its command keeps
# a grandchild and writes its token to a fenced store of its own). The Monitor polls /proc every
# 20 ms on a shared machine: "stopped by R after the last renewal" allows this much (D - R =
# 0.5 s is the margin that matters for safety, and the no-overlap check has no allowance).
# The run flags are the run-mode scenarios' (leasehold_testing.run_cluster.RUN_FLAGS).
RUN_TOLERANCE = 0.25
# --shards N: the slowest clock of a scenario (x0.95) and the allowance for the chain of moves
# once every view agrees (drop, release, acquire: a few requests each, on a shared machine).
SLOWEST_RATE = 0.95
SHARD_SETTLE = 1.0


def group_watch_wait(fault_seconds):
    """The longest a replica's group watch (kube/LeaseGroupWatch) can wait to retry after the
    heal: after a failure it retries at once, then after a backoff of 0.5 s doubling per
    consecutive failure (30 s at most), reset only by a watch event. Retry k (k >= 1) starts
    at least 0.5 (2^(k-1) - 1) s after the first failure; the last one that can still start
    within the faults arms the largest backoff."""
    wait, start = 0.5, 0.0
    while start + wait <= fault_seconds:
        start += wait
        wait = min(2 * wait, 30.0)
    return wait


def shard_balance_bound(fault_seconds):
    """--shards: from the heal to every shard owned once, floor(N/M) or ceil(N/M) each, every
    live member seeing M members. A replica's view (membership and shard Leases, docs/design.md
    section 9) is only as fresh as its group watch: the failed attempt that arms the longest
    backoff can fail up to the request deadline (R/2) after the heal, and the watch resumes that
    backoff later (group_watch_wait). The re-list then times every Lease that changed unseen from
    now: a killed replica's membership (and its shards) count as live for D more, on the
    observer's clock (D/0.95 for a slow one). A member whose membership expired in the others'
    views during the faults writes it again within max(D/3, P) (<= 1 s on errors), inside that D.
    A process restarted at the heal starts in RESTART_ALLOWANCE and may wait P (a cold start
    that sees no shard held); then the moves (SHARD_SETTLE)."""
    return ((R / 2 + group_watch_wait(fault_seconds) + D) / SLOWEST_RATE + P
            + RESTART_ALLOWANCE + SHARD_SETTLE)

FAULT_KINDS = {
    # kind: weight
    "sigstop_short": 3, "sigstop_long": 3, "kill9_restart": 3, "sigterm_restart": 1,
    "latency": 2, "error_5xx": 2, "burst_429": 2, "drop": 2, "malformed": 1, "partition": 3,
    "outage": 2, "watch_cut": 2,
}


def now():
    return time.time()


class Scenario:
    """One scenario on the test API server (faults through its control port)."""
    fault_kinds = FAULT_KINDS
    history_port = None  # the Lease history watch: env.port
    liveness_bound = LIVENESS_BOUND

    def __init__(self, env, seed, k, args, workdir, selftest=False):
        self.env, self.seed, self.k, self.args = env, seed, k, args
        self.selftest = selftest
        self.rng = random.Random(f"{seed}:{k}")
        self.dir = workdir / f"s{k}"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.lease = f"chaos-{k}" + ("-selftest" if selftest else "")
        self.n = self.rng.randint(args.min_replicas, args.max_replicas)
        self.skew = None
        if self.rng.random() < 0.5:
            self.skew = (self.rng.randrange(self.n), self.rng.choice([1.05, 0.95]))
        if selftest:
            # A deliberately unsafe setup the checks must catch: the leader's clock runs at half
            # speed, so it claims R/0.5 = 3 s of real time while the others take over after
            # D = 2 s. Partitioning it must produce overlapping claims.
            self.n, self.skew = 3, (0, 0.5)
        self.slots = [None] * self.n  # current incarnation per slot
        self.incarnations = []
        self.gens = [0] * self.n
        self.samplers, self.writers = [], []
        self.store = FencedStore(self.dir / "fence.db")
        self.writer_rng = random.Random(f"{seed}:{k}:writers")
        self.applied, self.skipped = Counter(), Counter()
        self.actions = []  # (offset, text)
        self.pending = []  # heap of (time, seq, fn, text)
        self.seq = 0
        self.server_stopped = False
        self.deferred = []
        self.rules = set()
        self.partitioned = set()
        self.failures = []
        self.infra = []
        self.latency_rules = {}  # id -> seconds of delay, while the rule exists
        self.quiet_at = 0.0
        self.schedule = self.make_schedule()
        self.t0 = None
        self.monitor = None
        self.shards = getattr(args, "shards", None)
        self.observer = None
        if self.shards:
            # Every sidecar is a member of one shard group (--lease-name chaos-K); /leader
            # answers for shard 0 (Lease chaos-K-0), so the single-Lease checks run on shard 0.
            self.observer = ShardObserver([])
            self.history_lease = f"{self.lease}-0"
        else:
            self.history_lease = self.lease
        if getattr(args, "run_mode", False):
            self.journal = self.dir / "journal.jsonl"
            self.command_store = self.dir / "commands.db"
            FencedStore(self.command_store)  # the tables exist before any command writes
            self.monitor = Monitor(self.incarnations, self.journal)

    # ---- schedule ----------------------------------------------------------------------
    def make_schedule(self):
        rng, out = self.rng, []
        if self.selftest:
            return [(0.5, "partition", {"target": "leader", "dur": 4.0})]
        kinds = list(self.fault_kinds)
        weights = [self.fault_kinds[k] for k in kinds]
        t = rng.uniform(0.1, 0.6)
        while t < self.args.fault_seconds:
            kind = rng.choices(kinds, weights)[0]
            out.append((round(t, 3), kind, self.fault_params(kind)))
            t += rng.expovariate(1 / self.args.mean_gap)
        if rng.random() < 0.3:
            # The leader dies just before the faults stop and is only restarted by the heal:
            # what follows measures the recovery after the faults, from a dead holder.
            out.append((round(self.args.fault_seconds - rng.uniform(0, 0.5), 3),
                        "kill9_restart", {"target": "leader", "delay": 10.0,
                                          "new_identity": rng.random() < 0.5}))
        return out

    def fault_params(self, kind):
        rng = self.rng
        target = rng.choices(["leader", "follower", "any"], [6, 2, 2])[0]
        if kind == "sigstop_short":
            return {"target": target, "dur": round(rng.uniform(0.1, D - 0.3), 3)}
        if kind == "sigstop_long":
            return {"target": target, "dur": round(rng.uniform(D + 0.2, D + 2.5), 3)}
        if kind == "kill9_restart":
            return {"target": target, "delay": round(rng.uniform(0, 1.5), 3),
                    "new_identity": rng.random() < 0.5}
        if kind == "sigterm_restart":
            return {"target": target, "delay": round(rng.uniform(0.1, 1.0), 3)}
        client = rng.choices(["leader", "follower", "all"], [5, 2, 3])[0]
        if kind == "latency":
            return {"client": client, "ms": rng.choice([50, 200, 500, 900, 1400]),
                    "window": round(rng.uniform(0.5, 3), 3)}
        if kind == "error_5xx":
            return {"client": client, "status": rng.choice([500, 503, 504]),
                    "verb": rng.choice(["update", "get", "*"]), "count": rng.randint(1, 12),
                    "probability": rng.choice([1.0, 0.5]), "window": round(rng.uniform(0.5, 3), 3),
                    "retryAfter": rng.choice([0, 1])}
        if kind == "burst_429":
            return {"client": client, "verb": rng.choice(["update", "get", "*"]),
                    "count": rng.randint(1, 12), "retryAfter": rng.choice([0, 0, 1]),
                    "window": round(rng.uniform(0.5, 3), 3)}
        if kind in ("drop", "malformed"):
            return {"client": client, "action": "malformed" if kind == "malformed" else
                    rng.choice(["drop", "drop-after"]), "verb": rng.choice(["update", "*"]),
                    "count": rng.randint(1, 5), "window": round(rng.uniform(0.5, 2), 3)}
        if kind == "partition":
            return {"target": target, "dur": round(rng.uniform(0.3, 4.0), 3)}
        if kind == "outage":
            return {"mode": rng.choice(["hang", "partition", "sigstop"]),
                    "dur": round(rng.uniform(0.5, 3.5), 3)}
        if kind == "watch_cut":
            return {"client": client, "clean": rng.random() < 0.3}
        raise ValueError(kind)

    # ---- processes ---------------------------------------------------------------------
    def identity(self, slot, new):
        return f"s{self.k}-r{slot}" + (f"-g{self.gens[slot]}" if new else "")

    def rate(self, slot):
        return self.skew[1] if self.skew and self.skew[0] == slot else 1.0

    def start_slot(self, slot, new_identity=False):
        old = self.slots[slot]
        identity = self.identity(slot, new_identity) if old else self.identity(slot, False)
        if old is not None and not new_identity:
            identity = old.identity
        inc = self.new_incarnation(slot, identity)
        if self.monitor is not None:
            inc.args = run_args(inc.args, RUN_FLAGS,
                                journal_command(self.journal, self.command_store))
        if self.shards:
            inc.args = [*inc.args, "--shards", str(self.shards)]
        self.gens[slot] += 1
        inc.start()
        self.slots[slot] = inc
        self.incarnations.append(inc)
        s = Sampler(inc)
        s.start()
        self.samplers.append(s)
        if self.observer is not None:
            self.observer.add(inc, follow=False)  # one process: its thread ends with it
        w = FencedWriter(inc, self.store, random.Random(self.writer_rng.random()))
        w.start()
        self.writers.append(w)
        return inc

    def new_incarnation(self, slot, identity):
        """The process of `slot` (not started): the store's kind of Incarnation."""
        return Incarnation(self.env, slot, identity, self.gens[slot], self.lease, self.dir,
                           rate=self.rate(slot))

    def leader_slot(self):
        for i, inc in enumerate(self.slots):
            if inc is not None and inc.alive() and inc.sampled_leader():
                return i
        return None

    def pick(self, target, runnable=True, started=False):
        live = [i for i, inc in enumerate(self.slots)
                if inc is not None and inc.alive() and inc.ended_by is None
                and (not runnable or not inc.stopped) and (not started or inc.latest)]
        if not live:
            return None
        lead = self.leader_slot()
        if target == "leader" and lead in live:
            return lead
        if target == "follower":
            others = [i for i in live if i != lead]
            if others:
                return self.rng.choice(others)
        return self.rng.choice(live)

    def clients(self, which):
        """Sidecar API users (never "*": the Lease watch of this runner is an API client too)."""
        if which == "all":
            return [inc.client for inc in self.slots if inc is not None]
        slot = self.pick("leader" if which == "leader" else "follower", runnable=False)
        return [self.slots[slot].client] if slot is not None else []

    # ---- timed actions -----------------------------------------------------------------
    def later(self, delay, fn, text):
        self.seq += 1
        heapq.heappush(self.pending, (now() + delay, self.seq, fn, text))

    def note(self, text):
        self.actions.append((now() - self.t0, text))

    def control(self, method, path, body=None, ok=(200,)):
        """A control-API call; deferred while the API server is SIGSTOPped (it cannot answer)."""
        if self.server_stopped:
            self.deferred.append((method, path, body, ok))
            return None
        code, text = http_request(self.env.control_port, method, path, body, timeout=5)
        if code not in ok:
            raise Failure(f"control {method} {path}: {code} {text}")
        return json.loads(text) if text and code == 200 else None

    def add_rule(self, rule, window):
        if self.server_stopped:
            return False
        rid = self.control("POST", "/faults", rule)["id"]
        self.rules.add(rid)
        if rule["action"] == "latency":
            self.latency_rules[rid] = rule["ms"] / 1000

        def remove():
            if rid in self.rules:
                self.rules.discard(rid)
                self.control("DELETE", f"/faults/{rid}", ok=(200, 404))
                self.note_delay_end(rid)
        self.later(window, remove, f"remove rule {rid}")
        return True

    def apply(self, kind, p):
        applied = True
        if kind in ("sigstop_short", "sigstop_long"):
            slot = self.pick(p["target"])
            if slot is None:
                applied = False
            else:
                inc = self.slots[slot]
                inc.signal(signal.SIGSTOP)
                inc.stopped = True

                def cont(inc=inc):
                    inc.signal(signal.SIGCONT)
                    inc.stopped = False
                self.later(p["dur"], cont, f"SIGCONT {inc.label}")
                self.note(f"SIGSTOP {inc.label} for {p['dur']}s")
        elif kind == "kill9_restart":
            slot = self.pick(p["target"], runnable=False)
            if slot is None:
                applied = False
            else:
                inc = self.slots[slot]
                inc.kill("kill")
                self.note(f"kill -9 {inc.label}, restart in {p['delay']}s")
                self.later(p["delay"], lambda: self.restart(slot, inc, p["new_identity"]),
                           f"restart slot {slot}")
        elif kind == "sigterm_restart":
            # Only a process that has answered once: before it installs its handler a SIGTERM
            # just ends it (the default action), which tests nothing.
            slot = self.pick(p["target"], started=True)
            if slot is None:
                applied = False
            else:
                inc = self.slots[slot]
                inc.ended_by = "term"
                inc.term_sent_at = now()
                inc.signal(signal.SIGTERM)
                self.note(f"SIGTERM {inc.label}, restart in {p['delay']}s")
                self.later(p["delay"], lambda: self.restart(slot, inc, False, waited=0),
                           f"restart slot {slot}")
        elif kind == "partition":
            slot = self.pick(p["target"], runnable=False)
            if slot is None or self.server_stopped:
                applied = False
            else:
                client = self.slots[slot].client
                if client in self.partitioned:
                    applied = False
                else:
                    self.partitioned.add(client)
                    self.control("POST", f"/partition?client={client}")
                    self.later(p["dur"], lambda: self.heal_partition(client), f"heal {client}")
                    self.note(f"partition {client} for {p['dur']}s")
        elif kind == "outage":
            applied = self.outage(p)
            kind = f"outage_{p['mode']}"
        elif kind == "watch_cut":
            if self.server_stopped:
                applied = False
            else:
                for c in self.clients(p["client"]):
                    q = "" if c == "*" else f"client={c}"
                    q += "&clean=1" if p["clean"] else ""
                    self.control("POST", "/watches/cut" + (f"?{q.lstrip('&')}" if q else ""))
                self.note(f"cut watches {p}")
        else:
            clients = self.clients(p["client"])
            rule = {"latency": {"action": "latency", "ms": p.get("ms")},
                    "error_5xx": {"action": "error", "status": p.get("status"),
                                  "verb": p.get("verb"), "count": p.get("count"),
                                  "probability": p.get("probability"),
                                  "retryAfter": p.get("retryAfter")},
                    "burst_429": {"action": "429", "verb": p.get("verb"), "count": p.get("count"),
                                  "retryAfter": p.get("retryAfter")},
                    }.get(kind) or {"action": p["action"], "verb": p["verb"], "count": p["count"]}
            rule = {k: v for k, v in rule.items() if v is not None}
            if kind == "latency":
                rule["count"] = -1
            applied = False
            for c in clients:
                applied = self.add_rule(dict(rule, client=c), p["window"]) or applied
            if applied:
                self.note(f"{kind} {clients} {rule} for {p['window']}s")
        (self.applied if applied else self.skipped)[kind] += 1

    def outage(self, p):
        mode, dur = p["mode"], p["dur"]
        if self.server_stopped:
            return False
        if mode == "sigstop":
            self.env.server.send_signal(signal.SIGSTOP)
            self.server_stopped = True
            self.later(dur, self.resume_server, "SIGCONT apiserver")
        elif mode == "hang":
            for inc in self.slots:
                if inc is not None:
                    self.add_rule({"action": "hang", "client": inc.client, "count": -1}, dur)
                    self.control("POST", f"/watches/cut?client={inc.client}")
        else:
            clients = [inc.client for inc in self.slots
                       if inc is not None and inc.client not in self.partitioned]
            for c in clients:
                self.partitioned.add(c)
                self.control("POST", f"/partition?client={c}")
                self.later(dur, lambda c=c: self.heal_partition(c), f"heal {c}")
        self.note(f"API outage ({mode}) for {dur}s")
        return True

    def note_delay_end(self, rid):
        """A request delayed by a latency rule is still applied after the rule is gone: the
        faults have not stopped until the last such request may have landed."""
        if rid in self.latency_rules:
            # Delays of matching rules add up: assume the worst, all of them at once.
            self.quiet_at = max(self.quiet_at, now() + sum(self.latency_rules.values()))
            del self.latency_rules[rid]

    def resume_server(self):
        if not self.server_stopped:
            return
        self.env.server.send_signal(signal.SIGCONT)
        self.server_stopped = False
        deferred, self.deferred = self.deferred, []
        for method, path, body, ok in deferred:
            self.control(method, path, body, ok)

    def heal_partition(self, client):
        if client in self.partitioned:
            self.partitioned.discard(client)
            self.control("DELETE", f"/partition?client={client}")

    def restart(self, slot, old, new_identity, waited=None):
        if self.slots[slot] is not old:
            return
        if old.alive():
            if waited is not None and waited < 6.0:  # SIGTERM: releasing, give it time
                self.later(0.25, lambda: self.restart(slot, old, new_identity, waited + 0.25),
                           f"restart slot {slot}")
                return
            if waited is not None:
                self.failures.append(f"{old.label} still running 6 s after SIGTERM")
            old.kill("kill")
        old.reap()
        inc = self.start_slot(slot, new_identity)
        self.note(f"started {inc.label}")

    # ---- the scenario ------------------------------------------------------------------
    def describe(self):
        skew = f", clock x{self.skew[1]} on slot {self.skew[0]}" if self.skew else ""
        kinds = Counter(k for _, k, _ in self.schedule)
        return (f"scenario {self.k}: {self.n} sidecars{skew}, {len(self.schedule)} faults "
                f"({', '.join(f'{k}={v}' for k, v in sorted(kinds.items()))})")

    def first_true_after(self, t):
        best = None
        for inc in self.incarnations:
            for t0, t1, st in inc.samples:
                if t0 >= t and st and st.get("leader"):
                    best = t1 if best is None else min(best, t1)
                    break
        return best

    def agreed(self):
        live = [inc for inc in self.slots if inc is not None and inc.alive()]
        states = [inc.latest for inc in live]
        leaders = [inc for inc, st in zip(live, states) if st and st.get("leader")]
        if len(leaders) != 1:
            return False
        return all(st and st.get("holder") == leaders[0].identity for st in states)

    def start_record(self):
        """The store's own record of the election, beside the samplers: the Lease's history."""
        self.history = LeaseHistory(self.env, self.history_lease, port=self.history_port)
        self.history.start()
        self.history.connected.wait(5)

    def stop_record(self):
        self.history.stop()
        self.history.join(5)

    def liveness_text(self):
        """How the liveness bound is made, for its failure message."""
        return f"D + 2.2 P + {self.liveness_bound - D - 2.2 * P:.1f}"

    def run(self):
        self.start_record()
        self.t0 = now()
        if self.skew:
            self.applied["clock_skew"] += 1
        if self.monitor is not None:
            self.monitor.start()
        if self.observer is not None:
            self.observer.__enter__()
        for slot in range(self.n):
            self.start_slot(slot)
            if self.selftest and slot == 0:  # the slow sidecar leads
                wait_for("slot 0 to lead", lambda: self.leader_slot() == 0, 10)
        deadline = now() + D + P + 5
        while self.leader_slot() is None:
            if now() > deadline:
                raise Failure("no first leader within D + P + 5 s")
            time.sleep(0.02)
        self.note(f"first leader slot {self.leader_slot()}")
        start = now()
        for at, kind, p in self.schedule:
            self.later(at, lambda kind=kind, p=p: self.apply(kind, p), kind)
        # Faults (and their undo actions) until fault_seconds; the heal runs the rest now.
        end = start + self.args.fault_seconds
        while now() < end:
            if not self.pending or self.pending[0][0] > now():
                time.sleep(0.01)
                continue
            heapq.heappop(self.pending)[2]()
        self.heal()
        # The faults have stopped when the heal is done and no request delayed by a latency
        # rule can still land (the test server applies a delayed write even if its client gave
        # up: a write landing after the heal restarts the followers' D).
        self.t_heal = max(now(), self.quiet_at)
        self.heal_delay = self.t_heal - now()
        if self.shards:
            self.wait_balanced()
            time.sleep(0.3)
            self.teardown()
            self.check()
            return
        bound = self.liveness_bound
        while now() < self.t_heal + bound + 0.5 and self.first_true_after(self.t_heal) is None:
            time.sleep(0.02)
        t_leader = self.first_true_after(self.t_heal)
        self.leader_after = None if t_leader is None else t_leader - self.t_heal
        if self.leader_after is None or self.leader_after > bound:
            self.failures.append(f"no leader within {self.liveness_text()} = "
                                 f"{bound:.2f} s after the faults stopped (first: "
                                 f"{self.leader_after})")
        conv_deadline = self.t_heal + bound + CONVERGE_EXTRA
        while now() < conv_deadline and not self.agreed():
            time.sleep(0.02)
        self.converged_after = now() - self.t_heal
        if not self.agreed():
            states = {inc.label: inc.latest for inc in self.slots}
            self.failures.append(f"sidecars did not agree on one leader within "
                                 f"{bound + CONVERGE_EXTRA:.1f} s of the heal: {states}")
        time.sleep(0.3)
        self.teardown()
        self.check()

    def wait_balanced(self):
        """--shards: liveness is balance. Within shard_balance_bound of the heal (once no delayed
        write can land, as for the leader bound) every shard is owned once, by the live
        replicas, floor/ceil each (balance_of on their /shards). Shard 0's
        first owner after the heal (/leader) is recorded, not judged by the single-Lease bound:
        who may take a shard waits for the group's view, which the bound above covers."""
        bound = shard_balance_bound(self.args.fault_seconds)
        live = [inc for inc in self.slots if inc is not None]
        why = "not asked"
        self.balanced_after = None
        while now() < self.t_heal:  # a write held by a latency rule may still land until then
            time.sleep(0.02)
        while now() < self.t_heal + bound:
            why = balance_of({inc.label: shards_of(inc, timeout=0.3) if inc.alive() else None
                              for inc in live}, self.shards)
            if why is None:
                self.balanced_after = now() - self.t_heal
                break
            time.sleep(0.05)
        if self.balanced_after is None:
            self.failures.append(f"shards: not balanced over {len(live)} replicas within "
                                 f"{bound:.2f} s of the heal: {why}")
        t_leader = self.first_true_after(self.t_heal)
        self.leader_after = None if t_leader is None else t_leader - self.t_heal

    def heal(self):
        """Ends every fault now: the API server runs, rules and partitions are gone, every
        process runs; killed or SIGTERMed slots are restarted (after a releasing process exits)."""
        if self.server_stopped:
            self.resume_server()
        pending, self.pending = sorted(self.pending), []
        restarts = []
        for _, _, fn, text in pending:
            if text.startswith("restart"):
                restarts.append(fn)
            elif text.startswith(("SIGCONT", "heal", "remove", "resume")):
                fn()
        self.heal_api()
        for inc in self.slots:
            if inc.stopped:
                inc.signal(signal.SIGCONT)
                inc.stopped = False
        for inc in self.slots:
            if inc.ended_by == "term" and inc.alive():
                try:
                    inc.proc.wait(timeout=6)
                except Exception:
                    self.failures.append(f"{inc.label} still running 6 s after SIGTERM")
                    inc.kill("kill")
        for fn in restarts:
            fn()
        self.pending = []
        for slot, inc in enumerate(self.slots):
            if inc.ended_by is not None:  # safety net: every end schedules a restart
                self.restart(slot, inc, False)
        self.note("healed")

    def heal_api(self):
        """The API side of the heal: no fault rule, no partition left."""
        self.control("DELETE", "/faults")
        self.rules.clear()
        for rid in list(self.latency_rules):
            self.note_delay_end(rid)
        for c in list(self.partitioned):
            self.heal_partition(c)
        for c in self.control("GET", "/partition") or []:
            self.control("DELETE", f"/partition?client={c}")

    def teardown(self):
        for w in self.writers:
            w.stop()
        for inc in self.slots:
            if inc is not None:
                inc.kill("teardown")
        for inc in self.incarnations:
            inc.reap()
        if self.monitor is not None and self.monitor.is_alive():
            # kill -9 of a supervisor ends its command at once (PR_SET_PDEATHSIG, the watchdog)
            deadline = now() + 3
            while now() < deadline and self.monitor.running():
                time.sleep(0.02)
            self.monitor.finish()
        for s in self.samplers:
            s.join(5)
        for w in self.writers:
            w.join(5)
        if self.observer is not None:
            self.observer.__exit__(None, None, None)
        time.sleep(0.2)
        self.stop_record()

    def check_exits(self):
        """5. exits: only the ones we caused; SIGTERM exits 0; the clock hook reported; no
        sanitizer report. Returns {identity: clock rate}."""
        f = self.failures
        rates = {}
        for inc in self.incarnations:
            rates[inc.identity] = inc.rate
            rc = inc.proc.returncode
            if inc.ended_by is None and port_collision(inc):
                self.infra.append(f"{inc.label} could not listen (port taken): not counted")
            elif inc.ended_by is None:
                f.append(f"{inc.label} exited by itself with {rc}")
            elif inc.ended_by == "term" and inc.term_sent_at and rc not in (0, -9) and not (
                    self.monitor is not None and rc == 128 + signal.SIGTERM):
                # run mode exits with its command's status: 143 when the drain's SIGTERM
                # reached the command before it had set its handler
                f.append(f"{inc.label} exited with {rc} after SIGTERM")
            if inc.rate != 1.0 and inc.latest and "TEST HOOK ACTIVE" not in inc.logs():
                f.append(f"{inc.label}: clock rate {inc.rate} requested but the sidecar did "
                         f"not report the test hook (built without it?)")
            for line in inc.logs().splitlines():
                if "AddressSanitizer" in line or "runtime error:" in line:
                    f.append(f"{inc.label}: sanitizer: {line[:200]}")
                    break
        return rates

    def check(self):
        f = self.failures
        records = self.history.records
        rates = self.check_exits()
        hterms = history_terms(records, rates)
        releases = {(t.identity, t.token): t.released_at for t in hterms if t.released_at}
        sterms = sampled_terms(self.incarnations, releases,
                               every_release_retracts=self.every_release_retracts())
        fs, self.gap_sampled, self.overlap_sampled = check_terms(sterms, "samples")
        f += fs
        if self.history.gap:
            f.append("the Lease history has a gap (watch history window): history checks partial")
        fh, self.gap_history, self.overlap_history = check_terms(hterms, "lease history")
        f += fh
        f += check_history_tokens(records)
        # A sampled term must be a term the Lease actually had.
        known = {(t.identity, t.token) for t in hterms}
        for t in sterms:
            if (t.identity, t.token) not in known and not self.history.gap:
                f.append(f"sampled {t} has no term in the Lease history")
        # A released claim is retracted: nothing may say leader=true after the release.
        for inc in self.incarnations:
            if inc.ended_by != "term" and not self.every_release_retracts():
                continue
            for t0, t1, st in inc.samples:
                if st and st.get("leader"):
                    rel = releases.get((inc.identity, st["fencingToken"]))
                    if rel is not None and t0 > rel + ROUNDING:
                        f.append(f"{inc.label} said leader=true at {t0:.3f}, after releasing "
                                 f"at {rel:.3f}")
                        break
        rows = self.store.rows()
        f += check_store(rows, [] if self.history.gap else hterms)
        if self.monitor is not None:
            f += self.check_commands()
        if self.observer is not None:
            f += self.check_shards()
        self.writes_accepted = sum(1 for r in rows if r[5])
        self.writes_rejected = sum(1 for r in rows if not r[5])
        self.handovers = sum(1 for a, b in zip(hterms, hterms[1:]) if a.identity != b.identity)
        self.sampled_terms = len(sterms)
        self.history_terms = len(hterms)
        self.samples = sum(len(inc.samples) for inc in self.incarnations)
        if self.args.verbose or f:
            for t in sorted(hterms + sterms, key=lambda x: x.start):
                print(f"    {t.src:7s} {t.who:14s} token {t.token:3d} "
                      f"[{t.start - self.t0:7.3f}, {t.end - self.t0:7.3f}]"
                      + (f" released {t.released_at - self.t0:.3f}" if t.released_at else ""))
            if self.history.errors:
                print(f"    lease watch errors: {self.history.errors[:5]}")

    def check_shards(self):
        """--shards: over every incarnation's /shards samples, no shard claimed by two processes
        at once and each shard's token up every term (ShardObserver.check_safety)."""
        self.shard_samples = len(self.observer.samples)
        try:
            self.shard_terms = self.observer.check_safety()
        except Failure as e:
            self.shard_terms = sum(len(t) for t in self.observer.terms().values())
            return [f"shards: {e}"]
        return []

    def check_commands(self):
        """--run-mode: the commands of two supervisors never ran at once, each stopped by R after
        its last renewal (R of its own clock for a skewed one), nothing of a stopped group
        survives, no stale token reached the command's fenced store."""
        def claim_bound(inst, claim_end):
            rate = getattr(inst.replica, "rate", 1.0)
            return claim_end - R + R / rate
        instances = self.monitor.all()
        self.command_instances = len(instances)
        return [f"run mode: {x}" for x in
                command_failures(instances, self.command_store, RUN_TOLERANCE, claim_bound)]

    def every_release_retracts(self):
        """Whether any release ends a claim, not only one after our SIGTERM: shard mode (a
        running member releases a shard that moves, after it stopped claiming it) and run mode
        (a supervisor releases once its command's group has exited)."""
        return bool(self.shards) or self.monitor is not None

    def dump_observations(self, path):
        """What the checks saw, for `run --recheck PATH` (e.g. after a checker fix)."""
        Path(path).write_text(json.dumps({
            "scenario": self.k, "t0": self.t0, "history_gap": bool(self.history.gap),
            "every_release_retracts": self.every_release_retracts(),
            "records": self.history.records,
            "incarnations": [{"label": inc.label, "identity": inc.identity, "rate": inc.rate,
                              "ended_by": inc.ended_by, "samples": inc.samples}
                             for inc in self.incarnations],
            # --shards: every /shards sample (name, pid, sent, answered, answer)
            "shard_samples": self.observer.samples if self.observer is not None else []}))

    def result(self):
        return {
            "scenario": self.k, "sidecars": self.n, "skew": self.skew,
            "applied": dict(self.applied), "skipped": dict(self.skipped),
            "handovers": getattr(self, "handovers", 0),
            "sampled_terms": getattr(self, "sampled_terms", 0),
            "history_terms": getattr(self, "history_terms", 0),
            "writes_accepted": getattr(self, "writes_accepted", 0),
            "writes_rejected": getattr(self, "writes_rejected", 0),
            "leader_after_heal": getattr(self, "leader_after", None),
            "delayed_writes_after_heal_s": round(getattr(self, "heal_delay", 0.0), 3),
            "converged_after_heal": getattr(self, "converged_after", None),
            "min_gap_sampled": getattr(self, "gap_sampled", None),
            "min_gap_history": getattr(self, "gap_history", None),
            "max_overlap_sampled": getattr(self, "overlap_sampled", 0.0),
            "max_overlap_history": getattr(self, "overlap_history", 0.0),
            "samples": getattr(self, "samples", 0),
            "command_instances": getattr(self, "command_instances", None),
            "shard_terms": getattr(self, "shard_terms", None),
            "shard_samples": getattr(self, "shard_samples", None),
            "balanced_after_heal": getattr(self, "balanced_after", None),
            "starting_403": getattr(self, "starting_403", 0),
            "failures": self.failures,
            "infra": self.infra,
        }
