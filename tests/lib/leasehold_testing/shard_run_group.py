"""Run mode with shards (`leasehold run --shards 8 -- CMD`): a group of replicas, each running one
journaling command (run_mode_command.py) per owned shard, with the Monitor of run mode and the
ShardObserver of shard mode, on either store (the Kubernetes scenarios in
tests/integration/run_shard_scenarios.py, the etcd ones in etcd_scenarios.py).

Timings are scaled: D=2s, R=1.5s, P=0.3s; --kill-grace R/3 (500ms), --drain-timeout R + 1.5 s
(3s); every bound is derived from them and slack() (the machine's part), so
LEASEHOLD_TEST_SLOWDOWN=F stretches all of it F times for a slower build (tests/lib/README.md).
"""
import signal
import time

from .checks import check, log, wait_for
from .sidecar import Sidecar
from .timings import D, P, R
from .run_mode import Monitor, command_failures, journal_command, run_args
from .shard_sampler import ShardObserver, shards_of, wait_balanced
from .timings import duration_flag, slack

N = 8
# A command gets SIGTERM once its shard's claim is within R/3 of its end (no renewal for 2R/3:
# three rounds of P missed) and SIGKILL at the end; the sidecar wants it below R.
KILL_GRACE = R / 3
# sigterm_slow_drain's command exits this long after SIGTERM: past R by more than the machine's
# slack, so a SIGKILL at R (instead of the drain) would show.
TERM_DELAY = R + slack(0.5)
# On SIGTERM the commands may take this long to exit: that command's delay and the machine's
# time to see its exit, so that it exits on its own.
DRAIN_TIMEOUT = TERM_DELAY + slack(1)
RUN_FLAGS = ["--kill-grace", duration_flag(KILL_GRACE),
             "--drain-timeout", duration_flag(DRAIN_TIMEOUT)]
# "Stopped by R after the last renewal" allows this much: the Monitor polls every 20 ms on a
# machine shared with builds (and 24 commands here). Well inside D - R, the margin that matters.
TOLERANCE = slack(0.3)
# The waits below end as soon as their state holds; these deadlines decide only when it never
# does. After a change that needs no expiry (SIGTERM: its shards released): the others take
# them at once, or, a release that did not land (the request deadline, R/2), once the Lease
# expires (D); P for a cold start. The slack is for the moves (drop, stop the command, release,
# take) on 2 shared cores: 10 s on release, as it was.
MOVED = P + R / 2 + D + slack(7)
# A start, a join or a resume: also 3-4 sidecars and up to 24 Python commands starting, each
# move stopping a command first (up to its kill grace): 15 s on release, as it was.
BALANCED = MOVED + KILL_GRACE + slack(4.5)
# After an expiry (kill -9, SIGSTOP): the last renewal was up to P before the act, the others
# time D from seeing it, a take may wait out a failed request (R/2): 8 s on release (4 D).
EXPIRED = P + R / 2 + D + slack(5)
# One command per owned shard once the owners are settled: an old one is gone by R at the latest
# (the watchdog), the new one is a python3 start (24 at once at a group's start): 10 s on release.
COMMANDS = R + slack(8.5)
# A replica's exit on SIGTERM: its commands' drain, then its membership Lease deleted and its
# shards released (R/2 at most each), with the machine's slack: 13 s on release, as it was.
EXITED = DRAIN_TIMEOUT + R + slack(8.5)

class ShardRunReplica(Sidecar):
    """`leasehold run --shards 8 [the Sidecar's flags] [run flags] -- run_mode_command.py` on the
    test API server or the real kube-apiserver: group "work", shard i is the Lease work-i."""

    def __init__(self, env, name, command, run_flags=()):
        super().__init__(env, name, extra_args=["--shards", str(N)], lease="work")
        self.args = run_args(self.args, [*RUN_FLAGS, *run_flags], command)

    @staticmethod
    def lock(env, shard):
        """Shard i's LEASEHOLD_LEASE."""
        return f"{env.namespace}/work-{shard}"


class ShardRunGroup:
    """The replicas, the journal, one fenced store per shard, the Monitor, the ShardObserver."""

    def __init__(self, env, m=3, run_flags=(), command_flags=(), replica=ShardRunReplica):
        """`replica`: the class of a replica (ShardRunReplica; etcd_env's EtcdShardRunReplica),
        built as replica(env, name, command, run_flags), whose lock(env, i) is shard i's
        LEASEHOLD_LEASE."""
        self.env = env
        self.replica = replica
        self.run_flags = run_flags
        self.journal = env.dir / "journal.jsonl"
        self.store_path = env.dir / "fenced.db"
        # A fenced write every 2P/3 (0.2 s on release): more than one per renewal round, so a
        # stale term would write inside any overlap, at a lighter load than one Lease's 50 ms
        # (24 commands here).
        self.command = journal_command(self.journal, self.store_path, "--write-interval",
                                       str(round(2 * P / 3, 3)), *command_flags)
        self.replicas = []
        self.monitor = Monitor(self.replicas, self.journal)
        for i in range(m):
            self.add(f"replica-{i}")
        self.observer = ShardObserver(self.replicas)

    def add(self, name):
        r = self.replica(self.env, name, self.command, self.run_flags)
        self.env.sidecars.append(r)
        self.replicas.append(r)
        return r

    def __enter__(self):
        self.monitor.start()
        self.observer.__enter__()
        t0 = time.monotonic()
        for r in self.replicas:
            r.start(wait=False)
        self.owners = wait_balanced(self.replicas, N, timeout=BALANCED)
        self.wait_commands()
        log(f"{len(self.replicas)} replicas x {N} shards balanced, one command per owned shard, "
            f"{time.monotonic() - t0:.2f}s after start")
        return self

    def __exit__(self, *exc):
        self.observer.__exit__(*exc)
        if self.monitor.is_alive():
            self.monitor.finish()

    def live(self):
        return [r for r in self.replicas if r.alive()]

    def command_problem(self, replicas):
        """None when every shard owned by `replicas` (their /shards) has exactly one running
        command, started by that replica with that shard's environment and token, and no other
        command runs; else what is wrong."""
        owned = {}
        for r in replicas:
            st = shards_of(r)
            if st is None:
                return f"no /shards from {r.name}"
            for o in st["owned"]:
                owned[o["shard"]] = (r, o["fencingToken"])
        running = [i for i in self.monitor.running()]
        if any(i.record is None for i in running):
            return "a command without its journal record yet"
        per_shard = {}
        for i in running:
            per_shard.setdefault(i.shard, []).append(i)
        for shard in range(N):
            have = per_shard.get(shard, [])
            if shard not in owned:
                if have:
                    return f"shard {shard} not owned but runs {have}"
                continue
            r, token = owned[shard]
            if len(have) != 1:
                return f"shard {shard} (owned by {r.name}) runs {have}"
            rec = have[0].record
            want = {"shard": shard, "shards": N, "token": token, "identity": r.name,
                    "lease": self.replica.lock(self.env, shard)}
            got = {k: rec.get(k) for k in want}
            if got != want or have[0].replica is not r:
                return f"shard {shard}: command {have[0]} with {got}, expected {want}"
        return None

    def wait_commands(self, replicas=None, timeout=COMMANDS):
        replicas = replicas or self.live()
        last = {}

        def ok():
            last["why"] = self.command_problem(replicas)
            return last["why"] is None
        try:
            wait_for("one command per owned shard", ok, timeout)
        except Exception:
            check(False, f"commands not as owned after {timeout}s: {last.get('why')}")

    def its(self, replica):
        """The shards `replica` owned once the group was balanced, and its commands running now
        (not those it stopped before: a shard may have moved while the group formed)."""
        return owned_by(self.owners, replica.name), [i for i in self.monitor.running()
                                                     if i.replica is replica]

    def taken_over(self, gone, timeout):
        """The replicas other than `gone` and their owners, once they are balanced with one
        command per owned shard."""
        rest = [r for r in self.replicas if r is not gone]
        after = wait_balanced(rest, N, timeout=timeout)
        self.wait_commands(rest)
        return rest, after

    def check_successors(self, stopped, rest, t0):
        """For each command in `stopped` (a moved shard's): the first command of its shard that
        `rest` started from wall time t0 on started only once it was gone. Returns those."""
        news = []
        for old in stopped:
            new = started_since(self, rest, {old.shard}, t0)[0]
            check(old.last_alive <= new.start + 0.01,
                  f"shard {old.shard}: {new} started before {old} was gone")
            news.append(new)
        return news

    def end(self, expect_zero):
        """SIGTERM to every live replica; those in `expect_zero` must exit 0; then the checks."""
        for r in self.replicas:
            if r.alive():
                r.signal(signal.SIGCONT)
                r.signal(signal.SIGTERM)
        codes = {r.name: r.reap(EXITED) for r in self.replicas if r.proc}
        log("exit codes:", codes)
        for name in expect_zero:
            check(codes.get(name) == 0, f"{name} exited {codes.get(name)}, expected 0")
        time.sleep(slack(0.1))  # the samplers' requests in flight answered
        self.observer.__exit__(None, None, None)
        self.monitor.finish()
        failures = command_failures(self.monitor.all(), self.store_path, TOLERANCE)
        check(not failures, "; ".join(failures))
        terms = self.observer.check_safety()
        log(f"/shards: {len(self.observer.samples)} samples, {terms} terms, no shard claimed "
            "twice, tokens up every term")
        shards_run = sorted({i.shard for i in self.monitor.all() if i.shard is not None})
        check(shards_run == list(range(N)), f"every shard ran a command: {shards_run}")


def instances_of(group, replica, shards=None):
    return [i for i in group.monitor.of(replica) if shards is None or i.shard in shards]


def started_since(group, replicas, shards, t0):
    """The commands of `shards` that `replicas` started from wall time t0 on, first started
    first: not the short-lived ones a loaded machine may show while the group formed (their
    fork times are rounded down to 10 ms ticks, hence the 20 ms)."""
    return sorted((i for r in replicas for i in instances_of(group, r, shards)
                   if i.start >= t0 - 0.02), key=lambda i: i.start)


def owned_by(owners, name):
    return sorted(i for i, o in owners.items() if o == name)


