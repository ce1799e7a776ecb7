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

from leasehold_testing import (D, R, check, check_took, http_request, log, run_scenarios,
                               wait_for)
from leasehold_testing.run_cluster import (AT_ONCE, DRAIN_TIMEOUT, KILL_GRACE, TOLERANCE,
                                           RunCluster)

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


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
