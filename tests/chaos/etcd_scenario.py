"""One chaos scenario on a real etcd cluster (tests/chaos/run --store etcd): 3-5 `leasehold
--store etcd` sidecars (EtcdEnv: TLS, client certificates, auth, the least-privilege user lh) on a
fresh cluster of 1 or 3 members, a seeded schedule of faults, the heal, the checks.

Why a subclass of Scenario, not a class of its own: most of a scenario is not the store's business
(the seeded schedule and its generator per scenario, the leader killed at the end in 30%, the
timed actions, the sidecar faults and their restarts, the heal, the liveness and agreement waits,
the exit checks, the result line) and Scenario has it once. What is Lease-shaped is behind four
hooks that this class fills: the process (new_incarnation: an EtcdIncarnation that reaches every
member through proxies of its own slot), the store's record (start_record: none; the Lease
history has no counterpart here, the tokens come from the answers), the API faults (apply,
heal_api: proxies and members instead of the test server's control port) and the checks (check).

Every slot reaches each member through a TcpProxy of its own (a partition cuts exactly that
sidecar); the members talk to each other directly, so the member faults are the processes'
(SIGSTOP, kill -9 and a start on the same data dir, two members stopped: quorum lost).
"""
import json
import random
import signal
import subprocess
import time
from pathlib import Path

from leasehold_testing import D, P, Failure
from leasehold_testing.etcd_env import ELECTION_TIMEOUT, ETCD_EXPIRY_SCAN, EtcdIncarnation
from leasehold_testing.kube_time import epoch
from leasehold_testing.observer import Observer
from leasehold_testing.tcp_proxy import TcpProxy
from leasehold_testing.terms import ROUNDING, check_store, check_terms, sampled_terms
from leasehold_testing.timings import slack
from scenario import RESTART_ALLOWANCE, Scenario

# The sidecar faults are Scenario's; the API faults are a slot's proxies: all of them cut, slowed
# or reset, so one sidecar loses etcd while the others keep it.
ETCD_FAULT_KINDS = {
    "sigstop_short": 3, "sigstop_long": 3, "kill9_restart": 3, "sigterm_restart": 1,
    "latency": 2, "partition": 3, "reset": 1,
}
# With 3 members, one fault of the members at a time (a second one is skipped, and counted so):
# one member paused or killed (the cluster keeps quorum), or two paused (quorum lost).
MEMBER_FAULT_KINDS = {"member_sigstop": 2, "member_kill9": 2, "quorum_loss": 1}
MEMBER_CHOICES = [1, 3]

# The first leader after the heal: a dead holder's lease expires D after its last keep-alive,
# which came before the heal, and etcd's lessor finds it up to ETCD_EXPIRY_SCAN later; the next
# candidate's watch reports the deletion and it reads itself the oldest (a round trip). A
# follower whose proxy was cut until the heal reads again within P of the reset connection. A
# process restarted at the heal authenticates over TLS first (RESTART_ALLOWANCE, the test
# server flavour's, scaled like every other piece of machine time).
ETCD_LIVENESS_BOUND = D + P + ETCD_EXPIRY_SCAN + slack(RESTART_ALLOWANCE)
# After a member fault, the heal waits until every member answers /health (a raft leader, a
# linearizable read). The raft leader elected last may have been elected just before: it
# extended every lease by an election timeout first (lessor.Promote), so a dead holder's lease
# can live D + one election timeout from then.
MEMBER_ALLOWANCE = ELECTION_TIMEOUT


def members_of(seed, k):
    """The cluster size of scenario K of SEED (run builds the cluster before the scenario: the
    draw has a generator of its own, so the schedules do not depend on it)."""
    return random.Random(f"{seed}:{k}:members").choice(MEMBER_CHOICES)


class EtcdScenario(Scenario):
    """Scenario's schedule on a fresh EtcdEnv of 1 or 3 members (members_of).

    zookeeper_scenario.ZooKeeperScenario is this class on a ZooKeeper ensemble: the proxies,
    the member faults, the heal and the checks are the same; what names the store is behind
    the class attributes below and server_version, wait_member, raft_leader, members_status."""
    store_name = "etcd"         # the store's name in notes, results and observations.json
    leader_word = "raft leader"  # the member that decides (etcd's raft leader)

    def __init__(self, env, seed, k, args, workdir):
        self.members = env.members
        self.fault_kinds = dict(ETCD_FAULT_KINDS)
        if len(self.members) == 3:
            self.fault_kinds.update(MEMBER_FAULT_KINDS)
        super().__init__(env, seed, k, args, workdir)
        self.lease = env.lease
        route = random.Random(f"{seed}:{k}:routes")
        # Each slot's endpoint order is its own: a member fault hits some slots' first choice.
        self.routes = [route.sample(range(len(self.members)), len(self.members))
                       for _ in range(self.n)]
        self.proxies = [[TcpProxy(self.members[m].port, name=f"r{slot}-m{m}") for m in order]
                        for slot, order in enumerate(self.routes)]
        self.slot_latency = [{} for _ in range(self.n)]  # slot -> {rule id: (seconds, dir)}
        self.faulted_members = {}  # member -> "stopped" | "killed", while the fault lasts
        self.member_heal = 0.0
        self.version = self.server_version()

    def server_version(self):
        return ".".join(map(str, self.env.server_version()))

    def fault_params(self, kind):
        rng = self.rng
        if kind == "reset":
            return {"target": rng.choices(["leader", "follower", "any"], [6, 2, 2])[0]}
        if kind in ("member_sigstop", "member_kill9", "quorum_loss"):
            # raft: the raft leader (a new raft election, every lease extended); any: maybe a
            # follower (the sidecars whose member it was move on). quorum_loss stops two: the
            # ones that do not lead raft, or any two.
            p = {"member": rng.choice(["raft", "any"]), "pick": rng.random(),
                 "dur": round(rng.uniform(0.5, 3.5) if kind != "quorum_loss"
                              else rng.uniform(0.5, 2.5), 3)}
            # --member-pause-max (the gate): a pause past an election timeout lets a paused raft
            # leader come back to etcd 3.6's stale revocations (tests/chaos/README.md, "On
            # etcd"). Capped after the draw: every other draw of the schedule stays as it was.
            if kind == "member_sigstop" and self.args.member_pause_max is not None:
                p["dur"] = min(p["dur"], self.args.member_pause_max)
            return p
        p = super().fault_params(kind)
        if kind == "latency":
            p = {"target": p["client"] if p["client"] != "all" else "any", "ms": p["ms"],
                 "window": p["window"], "direction": rng.choice(["up", "both"])}
        return p

    @property
    def liveness_bound(self):
        members = any(self.applied.get(k) for k in MEMBER_FAULT_KINDS)
        return ETCD_LIVENESS_BOUND + (MEMBER_ALLOWANCE if members else 0.0)

    def liveness_text(self):
        extra = " + election timeout" if self.liveness_bound > ETCD_LIVENESS_BOUND else ""
        return (f"D + P + etcd's expiry scan {ETCD_EXPIRY_SCAN} + "
                f"{slack(RESTART_ALLOWANCE)} s restart{extra}")

    def describe(self):
        return super().describe() + f" [{len(self.members)} etcd member(s)]"

    # ---- processes ---------------------------------------------------------------------
    def new_incarnation(self, slot, identity):
        return EtcdIncarnation(self.env, slot, identity, self.gens[slot], self.dir,
                               ",".join(p.url for p in self.proxies[slot]), rate=self.rate(slot))

    def start_record(self):
        """Nothing beside the samplers: the history of the election's keys would only repeat
        the tokens the answers carry (a key's create revision)."""

    def stop_record(self):
        pass

    # ---- faults ------------------------------------------------------------------------
    def apply(self, kind, p):
        if kind in ("sigstop_short", "sigstop_long", "kill9_restart", "sigterm_restart"):
            return super().apply(kind, p)
        applied = True
        if kind in ("partition", "latency", "reset"):
            slot = self.pick(p["target"], runnable=False)
            if slot is None or (kind == "partition" and slot in self.partitioned):
                applied = False
            elif kind == "partition":
                self.partitioned.add(slot)
                for proxy in self.proxies[slot]:
                    proxy.partition()
                self.later(p["dur"], lambda: self.heal_partition(slot), f"heal slot {slot}")
                self.note(f"partition slot {slot} for {p['dur']}s")
            elif kind == "latency":
                self.add_latency(slot, p["ms"] / 1000, p["direction"], p["window"])
                self.note(f"latency {p['ms']} ms ({p['direction']}) on slot {slot} for "
                          f"{p['window']}s")
            else:
                n = sum(proxy.reset() for proxy in self.proxies[slot])
                self.note(f"reset the {n} connection(s) of slot {slot}")
        else:
            applied = self.member_fault(kind, p)
        (self.applied if applied else self.skipped)[kind] += 1

    def heal_partition(self, slot):
        if slot in self.partitioned:
            self.partitioned.discard(slot)
            for proxy in self.proxies[slot]:
                proxy.heal()

    def add_latency(self, slot, seconds, direction, window):
        """A delay on the slot's proxies for `window`; rules that overlap: the largest counts.
        A chunk keeps the delay it arrived with, so a keep-alive can land after the rule is gone
        (note_delay_end: the heal waits for it)."""
        self.seq += 1
        rid = f"latency-{self.seq}"
        self.slot_latency[slot][rid] = (seconds, direction)
        self.latency_rules[rid] = seconds
        self.set_latency(slot)

        def remove():
            if rid in self.slot_latency[slot]:
                del self.slot_latency[slot][rid]
                self.set_latency(slot)
                self.note_delay_end(rid)
        self.later(window, remove, f"remove {rid}")

    def set_latency(self, slot):
        rules = self.slot_latency[slot].values()
        up = max([s for s, _ in rules] or [0])
        down = max([s for s, d in rules if d == "both"] or [0])
        for proxy in self.proxies[slot]:
            proxy.set_latency(up, "up")
            proxy.set_latency(down, "down")

    def raft_leader(self):
        """The member leading raft now, or None (asked once, not waited for: every member runs
        when a member fault starts, one fault at a time)."""
        for m in self.members:
            try:
                _, st = self.env.root("maintenance/status", {}, url=m.url)
            except (Failure, OSError):
                continue
            if st.get("leader") and st["leader"] == st.get("header", {}).get("member_id"):
                return m
        return None

    def member_fault(self, kind, p):
        if self.faulted_members:
            return False
        raft = self.raft_leader() if p["member"] == "raft" else None
        others = [m for m in self.members if m is not raft]
        if kind == "quorum_loss":
            victims = others if raft is not None else \
                self.members[:int(p["pick"] * 3)] + self.members[int(p["pick"] * 3) + 1:]
        else:
            victims = [raft if raft is not None else self.members[int(p["pick"] * 3)]]
        names = [m.name for m in victims]
        if kind == "member_kill9":
            m = victims[0]
            m.kill()
            self.faulted_members[m] = "killed"
            self.later(p["dur"], lambda: self.resume_member(m), f"resume {m.name} (start)")
            led = f" ({self.leader_word})" if raft else ""
            self.note(f"kill -9 {self.store_name} {m.name}{led}, start in {p['dur']}s")
        else:
            for m in victims:
                m.signal(signal.SIGSTOP)
                self.faulted_members[m] = "stopped"
                self.later(p["dur"], lambda m=m: self.resume_member(m), f"resume {m.name}")
            lost = " (quorum lost)" if kind == "quorum_loss" else ""
            raft_note = "" if raft is None else f" ({self.leader_word}: {raft.name})"
            self.note(f"SIGSTOP {self.store_name} {names} for {p['dur']}s{lost}{raft_note}")
        return True

    def resume_member(self, m):
        how = self.faulted_members.pop(m, None)
        if how == "stopped":
            m.signal(signal.SIGCONT)
        elif how == "killed":
            m.start()
        if how:
            self.note(f"{self.store_name} {m.name} {'SIGCONT' if how == 'stopped' else 'started'}")

    def heal_api(self):
        """No partition, latency or paused or dead member left; healed once every member
        answers /health (its raft has a leader and serves a linearizable read)."""
        for slot in list(self.partitioned):
            self.heal_partition(slot)
        for slot in range(self.n):
            self.slot_latency[slot] = {}
            self.set_latency(slot)
        for rid in list(self.latency_rules):
            self.note_delay_end(rid)
        for m in list(self.faulted_members):
            self.resume_member(m)
        t = time.time()
        for m in self.members:
            self.wait_member(m)
        self.member_heal = time.time() - t

    def wait_member(self, m):
        """Until the member serves (etcd: /health, a raft leader and a linearizable read)."""
        m.wait_healthy()

    def teardown(self):
        super().teardown()
        self.close_proxies()

    def close_proxies(self):
        """Also after an error (run calls it): the proxies' listeners outlive the scenario."""
        for proxies in self.proxies:
            for proxy in proxies:
                proxy.close()

    def members_status(self, etcdctl):
        """The members as a failed scenario left them (etcdctl endpoint status: raft leader,
        term, revision), for its failures dir."""
        if not etcdctl:
            return "no etcdctl (--etcdctl BIN, $ETCDCTL_BIN)\n"
        d = self.env.dir
        cmd = [etcdctl, "--endpoints", ",".join(m.url for m in self.members),
               "--cacert", str(d / "ca.crt"), "--cert", str(d / "client.crt"),
               "--key", str(d / "client.key"), "--user",
               "root:" + self.env.passwords["root"].read_text().strip(),
               "endpoint", "status", "-w", "table"]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=slack(10))
            return out.stdout + out.stderr
        except (OSError, subprocess.SubprocessError) as e:
            return f"etcdctl endpoint status: {e!r}\n"

    # ---- checks ------------------------------------------------------------------------
    def releases(self):
        """(identity, token) -> when a SIGTERMed process stopped claiming: the send time of its
        last answer leader=true (the Observer's rule: the answer was computed after it was
        sent, and the revoke that followed retracted the claim). Only the last term of a
        process that exited 0 after our SIGTERM."""
        out = {}
        for inc in self.incarnations:
            if inc.ended_by != "term" or inc.proc.returncode != 0:
                continue
            trues = [(t0, st["fencingToken"]) for t0, _, st in inc.samples
                     if st and st.get("leader")]
            if trues:
                t0, token = trues[-1]
                out[(inc.identity, token)] = t0
        return out

    def check(self):
        """Exits (Scenario's check 5); no two claims overlap and tokens go up, as the Observer
        sees them and as promised (validUntil); the fenced store's order."""
        f = self.failures
        self.check_exits()
        rows = [(t0, t1, inc.label, st) for inc in self.incarnations
                for t0, t1, st in inc.samples]
        try:
            Observer.of_samples(rows).check_safety()
        except Failure as e:
            f.append(f"observer: {e}")
        # The Observer ends a claim at the last answer leader=true once its process answers
        # false: after a SIGSTOP past its deadline the woken leader says false, and what it had
        # promised (its validUntil) is then not held against the next leader. The promise counts
        # here, as in the Lease flavours (terms.sampled_terms); only a release retracts it.
        releases = self.releases()
        sterms = sampled_terms(self.incarnations, releases)
        fs, self.gap_sampled, self.overlap_sampled = check_terms(sterms, "samples")
        f += fs
        # A term's end is its largest validUntil: an answer leader=true whose validUntil had
        # passed when it was asked (a woken leader answering from its state before the pause)
        # would claim without extending any term, unseen by the checks above. validUntil is the
        # wall clock plus what is left on the sidecar's own clock: past only if nothing is left.
        for inc in self.incarnations:
            stale = next(((t0, st) for t0, _, st in inc.samples if st and st.get("leader")
                          and epoch(st["validUntil"]) < t0 - ROUNDING), None)
            if stale:
                f.append(f"{inc.label} answered leader=true at {stale[0]:.3f} with validUntil "
                         f"{stale[1]['validUntil']}, already past")
        store = self.store.rows()
        f += check_store(store, [])
        # An accepted token (a key's create revision, one key's alone) belongs to the process
        # the samples saw holding it; a term no sample saw has no holder to compare with.
        holders = {t.token: t.identity for t in sterms}
        for seq, token, writer, identity, _, accepted in store:
            if accepted and holders.get(token, identity) != identity:
                f.append(f"store accepted token {token} from {writer}, but the samples saw "
                         f"{holders[token]} hold it (seq {seq})")
                break
        self.writes_accepted = sum(1 for r in store if r[5])
        self.writes_rejected = sum(1 for r in store if not r[5])
        self.handovers = sum(1 for a, b in zip(sterms, sterms[1:]) if a.identity != b.identity)
        self.sampled_terms = len(sterms)
        # The line's "terms" (no store history here): a claim that lapsed and resumed with the
        # same token is one term, sampled as two.
        self.history_terms = len({(t.who, t.token) for t in sterms})
        self.samples = len(rows)
        if self.args.verbose or f:
            for t in sterms:
                print(f"    {t.who:14s} token {t.token:5d} [{t.start - self.t0:7.3f}, "
                      f"{t.end - self.t0:7.3f}]"
                      + (f" released {t.released_at - self.t0:.3f}" if t.released_at else ""))

    def dump_observations(self, path):
        """The samples and the releases, for `run --recheck PATH` (no store history)."""
        Path(path).write_text(json.dumps({
            "scenario": self.k, "t0": self.t0, "store": self.store_name, "history_gap": True,
            "records": [], "releases": [[i, t, r] for (i, t), r in self.releases().items()],
            "incarnations": [{"label": inc.label, "identity": inc.identity, "rate": inc.rate,
                              "ended_by": inc.ended_by, "samples": inc.samples}
                             for inc in self.incarnations]}))

    def result(self):
        out = super().result()
        out.update({"members": len(self.members), "etcd": self.version,
                    "member_heal_s": round(self.member_heal, 3),
                    "liveness_bound_s": round(self.liveness_bound, 2)})
        return out
