#!/usr/bin/env python3
"""Run mode with real processes: 3 `leasehold run` replicas whose command
(leasehold_testing/run_mode_command.py) records its start in a shared journal, writes its token to a fenced SQLite
store every 50 ms and keeps a grandchild (`sh -c 'sleep 1000 & wait'`), through the faults of
issue 13: kill -9, SIGSTOP for 2D and a partition of the leading supervisor, SIGTERM (drain),
POST /leader/release, the command crashing (with and without --restart on-failure), a command
that ignores SIGTERM, a second signal, --exit-on-loss.

    run_scenarios.py --sidecar BIN (--apiserver BIN | --real) SCENARIO...   (or `all`, --list)

Every scenario ends with the checks of leasehold_testing.run_mode over every command instance
its Monitor saw (no two at once, each stopped by R after its last renewal + TOLERANCE, nothing
of a stopped group survives, no stale-token write), plus its own checks (exit codes as issue 13
specifies, timings of SIGTERM/SIGKILL). The chaos runner's run-mode flavour shares them.
Timings are scaled: D=2s, R=1.5s, P=0.3s; --kill-grace 500ms, --drain-timeout 3s.
"""
import json
import os
import signal
import time

from leasehold_testing import (D, P, R, Failure, Sidecar, check, check_took, http_request, log,
                               run_scenarios, wait_for)
from leasehold_testing.fenced_store import FencedStore
from leasehold_testing.run_mode import (Monitor, claims, command_failures, journal_command,
                                        run_args)
from leasehold_testing.timings import slack

KILL_GRACE, DRAIN_TIMEOUT = 0.5, 3.0
RUN_FLAGS = ["--kill-grace", "500ms", "--drain-timeout", "3s"]
# The Monitor polls every 20 ms on a machine shared with builds: "stopped by R" allows this much.
# The bound that matters for safety, D after the last renewal, is D - R = 0.5 s later still.
TOLERANCE = slack(0.25)
# What a signal takes to act and be seen: the supervisor's reaction (PR_SET_PDEATHSIG, its
# signal handler), the Monitor's next poll, a loaded machine. The bounds below that say "at once"
# allow this much; the others add it to the timing they check (kill grace, drain timeout, backoff).
AT_ONCE = slack(0.5)

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


class RunReplica(Sidecar):
    """A `leasehold run [the Sidecar's flags] [run flags] -- python3 run_mode_command.py ...`
    process; --log-level debug so that every renewal is in its log."""

    def __init__(self, env, name, command, run_flags):
        super().__init__(env, name)
        self.args = run_args(self.args, run_flags, command)

    def claims(self):
        return claims(self)

    def exit_code(self, timeout=10):
        """The process's exit status once it has ended (waits up to `timeout`)."""
        return self.reap(timeout)


class RunCluster:
    """3 replicas of `leasehold run`, the journal, the fenced store, the Monitor."""

    def __init__(self, env, n=3, run_flags=(), command_flags=()):
        self.env = env
        self.journal = env.dir / "journal.jsonl"
        self.store_path = env.dir / "fenced.db"
        FencedStore(self.store_path)  # creates the tables before any command writes
        command = journal_command(self.journal, self.store_path, *command_flags)
        self.replicas = [RunReplica(env, f"replica-{i}", command, [*RUN_FLAGS, *run_flags])
                         for i in range(n)]
        env.sidecars.extend(self.replicas)
        self.monitor = Monitor(self.replicas, self.journal)

    def __enter__(self):
        self.monitor.start()
        for r in self.replicas:
            r.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        if self.monitor.is_alive():
            self.monitor.finish()

    def leading_instance(self, timeout=D + P + 5, after=None):
        """The one running instance, once its journal record is in; with `after`, the first
        instance that started after it, running or already ended: the caller may have waited on
        `after`'s replica for longer than the next command runs (under ASan the leak check at
        exit holds a replica's exit back by over a second, and the crash scenario's command
        crashes 1 s after it starts). No two overlap: the Monitor's checks at the end say so."""
        def one():
            if after is not None:
                later = [i for i in self.monitor.all() if i.token is not None
                         and i.pid != after.pid and i.start > after.start]
                return later[0] if later else None
            running = [i for i in self.monitor.running() if i.token is not None]
            return running[0] if len(running) == 1 else None
        try:
            return wait_for("one running command", one, timeout)
        except Failure as e:
            # What the Monitor saw and whether it kept up: the cause of session 19's ASan
            # failure of `crash` (tests/README.md's flake table) is still open.
            raise Failure(f"{e}; {self.monitor.describe()}") from None

    def settled_leader(self, seconds=1.0):
        """The leading instance once it has run `seconds` more (its renewals under way): what a
        scenario then disturbs."""
        inst = self.leading_instance()
        time.sleep(seconds)
        return inst

    def stopped(self, inst, timeout):
        wait_for(f"{inst} to stop", lambda: inst.stop is not None, timeout)
        return inst

    def end(self, expected_codes=None):
        """SIGTERM to every live replica, their exit codes (checked against `expected_codes`,
        name -> code, for those given), then the common checks."""
        for r in self.replicas:
            if r.alive():
                r.signal(signal.SIGCONT)
                r.signal(signal.SIGTERM)
        codes = {r.name: r.exit_code(timeout=DRAIN_TIMEOUT + 10) for r in self.replicas}
        time.sleep(0.1)
        self.monitor.finish()
        log("exit codes:", codes)
        for name, code in (expected_codes or {}).items():
            check(codes[name] == code, f"{name} exited {codes[name]}, expected {code}")
        self.check_safety()
        return codes

    # ---- the checks every scenario ends with -------------------------------------------------
    def check_safety(self):
        instances = self.monitor.all()
        log("instances:", instances)
        failures = command_failures(instances, self.store_path, TOLERANCE)
        check(not failures, "; ".join(failures))


def release(replica):
    code, body = http_request(replica.port, "POST", "/leader/release")
    check(code == 202, f"POST /leader/release: {code} {body}")
    return json.loads(body)


@scenario
def basic(env):
    """One replica runs the command with its term in the environment; the others run nothing."""
    with RunCluster(env) as c:
        inst = c.leading_instance()
        start = next(e for e in c.monitor.events if e["event"] == "start")
        lease = env.lease()
        check(start["token"] == lease["spec"].get("leaseTransitions", 0),
              f"LEASEHOLD_FENCING_TOKEN {start['token']} is the term's: {lease['spec']}")
        check(start["identity"] == inst.replica.name == lease["spec"]["holderIdentity"],
              f"LEASEHOLD_IDENTITY {start['identity']} is the holder's")
        check(start["lease"] == f"{env.namespace}/demo", f"LEASEHOLD_LEASE {start['lease']}")
        check(os.getpgid(inst.pid) == inst.pid, "the command leads a process group of its own")
        time.sleep(3)
        check(len(c.monitor.all()) == 1, f"one command only: {c.monitor.all()}")
        check(inst.replica.status()["leader"], "its supervisor leads")
        c.end({r.name: 0 for r in c.replicas})


@scenario
def kill9(env):
    """kill -9 of the leading supervisor: its whole group dies at once (PR_SET_PDEATHSIG and the
    watchdog); the next command starts after D with a higher token."""
    with RunCluster(env) as c:
        first = c.settled_leader()
        t0 = time.time()
        first.replica.kill()
        c.stopped(first, 2)
        log(f"the group was gone {first.stop - t0:.3f}s after kill -9 of its supervisor")
        check_took(t0, first.stop, 2 * AT_ONCE, "the command dies with its supervisor")
        second = c.leading_instance(after=first)
        check(second.token > first.token, f"a new term: {first.token} -> {second.token}")
        log(f"next command after {second.start - t0:.2f}s (D = {D}s)")
        c.end({first.replica.name: -9})


@scenario
def sigstop(env):
    """SIGSTOP of the leading supervisor for 2D: the watchdog kills its command by R; the next
    one starts only after D; the woken supervisor runs nothing."""
    with RunCluster(env) as c:
        first = c.settled_leader()
        t0 = time.time()
        first.replica.signal(signal.SIGSTOP)
        c.stopped(first, R + 2)
        log(f"stopped {first.stop - t0:.3f}s after SIGSTOP of its supervisor (R = {R}s)")
        second = c.leading_instance(after=first)
        time.sleep(max(0.0, t0 + 2 * D - time.time()))
        first.replica.signal(signal.SIGCONT)
        time.sleep(1.5)
        check(first.replica.alive(), "the woken supervisor keeps running")
        check(len(c.monitor.of(first.replica)) == 1, "and started nothing in somebody's term")
        check(second.stop is None, "the new leader's command still runs")
        c.end({r.name: 0 for r in c.replicas})


@scenario
def partition(env):
    """The leading supervisor cut off from the API: SIGTERM at R - kill-grace, its group gone by
    R; the next command after D."""
    with RunCluster(env) as c:
        first = c.settled_leader()
        env.partition(first.replica.name)
        c.stopped(first, R + 2)
        check(first.term_at is not None, "the command got SIGTERM first")
        claim_end = max(end for token, end in first.replica.claims() if token == first.token)
        log(f"SIGTERM {claim_end - first.term_at:.3f}s before the claim ended "
            f"(kill-grace {KILL_GRACE}s), stopped {claim_end - first.stop:.3f}s before it")
        check(claim_end - first.term_at >= KILL_GRACE - TOLERANCE,
              "SIGTERM came kill-grace before the deadline")
        second = c.leading_instance(after=first)
        check(second.replica is not first.replica, "another replica took over")
        env.heal(first.replica.name)
        c.end({r.name: 0 for r in c.replicas})


@scenario
def sigterm_drain(env):
    """SIGTERM to the leading supervisor: the command gets SIGTERM and takes 1 s while renewals
    go on; the Lease is released only after it exited; leasehold exits with its status (0)."""
    with RunCluster(env, command_flags=["--term-delay", "1.0"]) as c:
        first = c.settled_leader()
        t0 = time.time()
        first.replica.signal(signal.SIGTERM)
        c.stopped(first, DRAIN_TIMEOUT + 2)
        check(first.term_at is not None and first.term_at - t0 < AT_ONCE, "SIGTERM forwarded")
        check(first.stop - t0 >= 1.0, "the drain took the command's time")
        renewed_after = [end for token, end in first.replica.claims()
                         if token == first.token and end - R > t0 + 0.1]
        check(renewed_after, "renewals went on during the drain")
        second = c.leading_instance(after=first, timeout=D + 3)
        log(f"drain {first.stop - t0:.2f}s; next command {second.start - first.stop:.3f}s after "
            "the group was gone")
        check_took(first.stop, second.start, D,
                   "released after the drain: the next replica did not wait for D")
        check(first.replica.exit_code() == 0, "leasehold exits with the command's status")
        c.end()


@scenario
def release_request(env):
    """POST /leader/release: the command stops first (SIGTERM), then the Lease moves at once; the
    released supervisor stays, running nothing."""
    with RunCluster(env) as c:
        first = c.settled_leader()
        t0 = time.time()
        answer = release(first.replica)
        check(answer["wasLeader"], f"{answer}")
        c.stopped(first, KILL_GRACE + 2)
        check(first.term_at is not None, "SIGTERM first")
        second = c.leading_instance(after=first)
        log(f"stopped {first.stop - t0:.3f}s after the request; next command "
            f"{second.start - first.stop:.3f}s later")
        check_took(first.stop, second.start, D, "released after the stop, taken at once")
        time.sleep(1)
        check(first.replica.alive(), "the released replica keeps running")
        check(len(c.monitor.of(first.replica)) == 1, "without a command")
        c.end({r.name: 0 for r in c.replicas})


@scenario
def crash(env):
    """The command crashes (exit 7) with --restart never: its supervisor releases and exits 7;
    the next replica's command starts at once (and crashes the same way)."""
    with RunCluster(env, command_flags=["--crash-after", "1.0", "--crash-code", "7"]) as c:
        first = c.leading_instance()
        check(first.replica.exit_code(timeout=5) == 7, "leasehold exits with the command's status")
        second = c.leading_instance(after=first)
        log(f"next command {second.start - first.stop:.3f}s after the crash")
        check_took(first.stop, second.start, D, "released: no wait for D")
        check(second.replica.exit_code(timeout=5) == 7, "the next one too")
        third = c.leading_instance(after=second)
        check(third.replica.exit_code(timeout=5) == 7, "and the last one")
        c.end({r.name: 7 for r in c.replicas})


@scenario
def crash_restart(env):
    """--restart on-failure: the crashed command starts again in the same term with the same
    token after 1 s, then 2 s; nobody else runs it."""
    with RunCluster(env, run_flags=["--restart", "on-failure"],
                    command_flags=["--crash-after", "0.3", "--crash-code", "1"]) as c:
        first = c.leading_instance()
        wait_for("three runs", lambda: len(c.monitor.of(first.replica)) >= 3, 8)
        runs = c.monitor.of(first.replica)[:3]
        wait_for("journal records", lambda: all(r.token is not None for r in runs), 2)
        check(all(r.token == first.token for r in runs), f"the same token: {runs}")
        waits = [b.start - a.stop for a, b in zip(runs, runs[1:])]
        log(f"restarted after {', '.join(f'{w:.2f}s' for w in waits)}")
        check(0.9 <= waits[0] <= 1 + AT_ONCE and 1.9 <= waits[1] <= 2 + AT_ONCE,
              "backoff 1 s, then 2 s")
        check(all(i.replica is first.replica for i in c.monitor.all()), "nobody else ran it")
        c.end({r.name: 0 for r in c.replicas})


@scenario
def ignores_sigterm(env):
    """A command that ignores SIGTERM: SIGKILL at --kill-grace after POST /leader/release, at
    --drain-timeout after SIGTERM to leasehold (which exits 137, the command's status)."""
    with RunCluster(env, command_flags=["--ignore-term"]) as c:
        first = c.settled_leader(0.5)
        t0 = time.time()
        release(first.replica)
        c.stopped(first, KILL_GRACE + 2)
        log(f"release: SIGKILL took it {first.stop - t0:.3f}s after the request "
            f"(kill-grace {KILL_GRACE}s)")
        check_took(t0, first.stop, KILL_GRACE + AT_ONCE, "SIGKILL at the grace",
                   least=KILL_GRACE - 0.15)
        second = c.leading_instance(after=first)
        time.sleep(0.5)
        t1 = time.time()
        second.replica.signal(signal.SIGTERM)
        c.stopped(second, DRAIN_TIMEOUT + 2)
        log(f"drain: SIGKILL took it {second.stop - t1:.3f}s after SIGTERM "
            f"(drain-timeout {DRAIN_TIMEOUT}s)")
        check_took(t1, second.stop, DRAIN_TIMEOUT + 0.3 + AT_ONCE,
                   "SIGKILL at the drain timeout", least=DRAIN_TIMEOUT - 0.2)
        check(second.replica.exit_code() == 128 + 9, "leasehold exits 137")
        c.end()


@scenario
def second_signal(env):
    """A second SIGTERM during the drain: SIGKILL to the group at once, release, exit 137."""
    with RunCluster(env, command_flags=["--ignore-term"]) as c:
        first = c.settled_leader(0.5)
        first.replica.signal(signal.SIGTERM)
        time.sleep(0.5)
        check(first.stop is None, "still draining")
        t0 = time.time()
        first.replica.signal(signal.SIGTERM)
        c.stopped(first, 2)
        log(f"killed {first.stop - t0:.3f}s after the second signal")
        check_took(t0, first.stop, AT_ONCE, "SIGKILL at once")
        check(first.replica.exit_code() == 137, "exit 137")
        second = c.leading_instance(after=first)
        check_took(first.stop, second.start, D, "released on the way out")
        c.end()


@scenario
def exit_on_loss(env):
    """--exit-on-loss: a partitioned leader stops its command by R and exits 3."""
    with RunCluster(env, run_flags=["--exit-on-loss"]) as c:
        first = c.settled_leader()
        env.partition(first.replica.name)
        c.stopped(first, R + 2)
        check(first.replica.exit_code(timeout=R + 5) == 3, "exit 3 after the lost term")
        c.leading_instance(after=first)
        env.heal(first.replica.name)
        c.end()


if __name__ == "__main__":
    raise SystemExit(run_scenarios(SCENARIOS))
