"""One chaos scenario on a real ZooKeeper ensemble (tests/chaos/run --store zookeeper): 3-5
`leasehold --store zookeeper` sidecars on a fresh ZooKeeperEnv (Debian's 3.8.0) of 1 or 3
members, a seeded schedule of faults, the heal, the checks.

Why a subclass of EtcdScenario: everything but the store's name is the same there. Each slot
reaches each member through a TcpProxy of its own, in an order of its own, so a partition, a
latency or a reset hits exactly one sidecar (its whole connect string); the members talk to each
other directly, so the member faults are the processes' (SIGSTOP, kill -9 and a start on the
same data dir, two stopped: quorum lost); the checks are the same samples-only ones (the Observer,
the promises of terms.sampled_terms, no stale validUntil, the fenced store), the tokens being
the leader node's czxid. What differs: the process (a ZooKeeperIncarnation), the member the
schedule's "raft" means (the ensemble's leader, `srvr`), what the heal waits for (every member
serving), the SIGSTOP lengths (the session timeout, not D, is what a paused process must outlast)
and the liveness bound (a dead holder's session expiry, below).
"""
from leasehold_testing import D, P, R
from leasehold_testing.kube_time import epoch
from leasehold_testing.timings import slack
from leasehold_testing.zookeeper_env import SERVER_LAG, TICK, ZooKeeperIncarnation, four_letter
from etcd_scenario import EtcdScenario
from scenario import RESTART_ALLOWANCE

# The session timeout every sidecar asks for and gets (config::zkSessionTimeoutOf: D, or the
# floor R + L + max(I, P) when longer; L = SERVER_LAG, the --zk-server-lag ZooKeeperSidecar
# passes; I <= P here). With the scaled timings the floor wins: 1.5 + 0.5 + 0.3 = 2.3 s.
SESSION = max(D, R + SERVER_LAG + P)
# ZkSession's reconnect backoff doubles up to this (ZkSession::Options::maxBackoff): a sidecar
# whose every server failed during a partition tries again at most this long after the heal.
RECONNECT_BACKOFF_MAX = 2.0
# The first leader after the heal. A dead (or still paused) holder's session was last heard of
# before the heal; the ensemble's leader expires it SESSION later, rounded up to its next tick
# (ZooKeeper's ExpiryQueue). After a member fault the ensemble's leader elected last was elected
# before the heal (the heal waits until every member serves) and gave every session a full
# SESSION from its election: also before the heal. A live holder or next candidate cut off until
# the heal connects again within the backoff, in parallel. Then the next candidate's exists-watch
# fires and it reads the children (P: a watch event and a round trip); a process restarted at
# the heal starts in RESTART_ALLOWANCE, as in the other flavours.
ZK_LIVENESS_BOUND = max(SESSION + TICK, RECONNECT_BACKOFF_MAX) + P + slack(RESTART_ALLOWANCE)


class ZooKeeperScenario(EtcdScenario):
    """EtcdScenario's schedule and checks on a fresh ZooKeeperEnv of 1 or 3 members."""
    store_name = "zookeeper"
    leader_word = "ensemble leader"

    def __init__(self, env, seed, k, args, workdir):
        super().__init__(env, seed, k, args, workdir)
        self.leader_ends = []  # (time, "kill" | "term", incarnation): a leader we ended

    def server_version(self):
        return self.env.server_version()

    def fault_params(self, kind):
        p = super().fault_params(kind)
        if kind == "sigstop_long":
            # Past the session's expiry (SESSION + a tick), not D's: a pause between D and that
            # is a short one here. One draw, as in Scenario, so the schedule's later draws stay.
            p["dur"] = round(SESSION + TICK + 0.2 + (p["dur"] - (D + 0.2)) / 2.3 * 2.1, 3)
        return p

    @property
    def liveness_bound(self):
        return ZK_LIVENESS_BOUND

    def liveness_text(self):
        return (f"max(session {SESSION} + tick {TICK}, reconnect backoff "
                f"{RECONNECT_BACKOFF_MAX}) + P + {slack(RESTART_ALLOWANCE)} s restart")

    def describe(self):
        return super().describe().replace("etcd member(s)", "ZooKeeper member(s)")

    # ---- processes ---------------------------------------------------------------------
    def new_incarnation(self, slot, identity):
        servers = ",".join(f"127.0.0.1:{p.port}" for p in self.proxies[slot]) + self.env.chroot
        return ZooKeeperIncarnation(self.env, slot, identity, self.gens[slot], self.dir, servers,
                                    rate=self.rate(slot))

    # ---- faults ------------------------------------------------------------------------
    def apply(self, kind, p):
        """As EtcdScenario's; a leader killed or SIGTERMed is remembered, for the takeover
        times (takeovers)."""
        lead = self.leader_slot()
        inc = self.slots[lead] if lead is not None else None
        before = inc.ended_by if inc is not None else None
        super().apply(kind, p)
        if inc is not None and before is None and inc.ended_by in ("kill", "term"):
            self.leader_ends.append((inc.term_sent_at if inc.ended_by == "term" else
                                     self.last_action_time(), inc.ended_by, inc))

    def last_action_time(self):
        return self.t0 + self.actions[-1][0] if self.actions else None

    def raft_leader(self):
        """The ensemble's leader (`srvr`: Mode leader; the standalone member of one), or None."""
        return self.env.leader_member()

    def wait_member(self, m):
        m.wait_serving()

    def members_status(self, _etcdctl=None):
        """Every member's `srvr` (mode, zxid, connections) as a failed scenario left them."""
        return "".join(f"----- {m.name} (127.0.0.1:{m.port}) -----\n"
                       f"{four_letter(m.port, 'srvr') or '(no answer)'}\n" for m in self.members)

    # ---- measurements ------------------------------------------------------------------
    def takeovers(self):
        """[(kind, seconds, clean)]: from each healthy leader we killed (kill -9) or SIGTERMed
        to the first answer leader=true of another process; clean when no other fault
        (nor the heal) came in between, only the restart of the slot, so that the time is the
        store's alone."""
        out = []
        for t, why, old in self.leader_ends:
            # Only a healthy leader: its last answer before we ended it said leader=true with a
            # validUntil at least R - P - 0.1 s ahead (a renewal answered within P and a round
            # trip). The schedule's "leader" is its sampler's last answer, which a paused or
            # cut-off process outlives (seed 20261208 scenario 2: the "leader" killed at +5.48
            # had been SIGSTOPped at +2.13, its last validUntil 3.1 s past; another had led
            # since +4.45), and a claim about to lapse anyway is no crash's takeover either.
            if t is None:
                continue
            last = [st for t0, _, st in old.samples if t0 < t and st]
            if self.args.verbose:
                ahead = epoch(last[-1]["validUntil"]) - t if last and last[-1].get("leader") \
                    else None
                said = "not leader" if ahead is None else \
                    f"leader, validUntil ahead by {ahead:.3f} s"
                print(f"    {why} {old.label} at +{t - self.t0:.3f}: its last answer {said}")
            if not last or not last[-1].get("leader") or epoch(
                    last[-1].get("validUntil") or "1970-01-01T00:00:00Z") < t + R - P - 0.1:
                continue
            first = None
            for inc in self.incarnations:
                if inc is old:
                    continue
                for t0, t1, st in inc.samples:
                    if t0 >= t and st and st.get("leader"):
                        first = t1 if first is None else min(first, t1)
                        break
            if first is not None:
                clean = not any(t - self.t0 < off < first - self.t0 and
                                not text.startswith("started") for off, text in self.actions)
                out.append((why, round(first - t, 3), clean))
        return out

    def result(self):
        out = super().result()
        out.pop("etcd", None)
        out["zookeeper"] = self.version
        out["session_s"] = SESSION
        took = self.takeovers() if self.t0 else []
        # Every takeover (takeovers), and the clean ones (no other fault in between) apart.
        out["takeover_after_kill_s"] = [s for why, s, _ in took if why == "kill"]
        out["takeover_after_term_s"] = [s for why, s, _ in took if why == "term"]
        out["clean_takeover_after_kill_s"] = [s for why, s, c in took if why == "kill" and c]
        out["clean_takeover_after_term_s"] = [s for why, s, c in took if why == "term" and c]
        return out
