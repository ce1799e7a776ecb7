#!/usr/bin/env python3
"""Run mode with shards (`leasehold run --shards 8 -- CMD`, issue 15) with real processes: 3
replicas of one shard group, each running one journaling command
(leasehold_testing/run_mode_command.py) per owned shard; a 4th that joins, SIGTERM of a replica
(drain, then its shards are taken), kill -9 of a replica (all its commands die), SIGSTOP of a
replica for 2D (the watchdog kills its commands by R), commands that crash (--restart on-failure:
restarted in the same term; --restart never: the replica exits with the command's status).

    run_shard_scenarios.py --sidecar BIN (--apiserver BIN | --real) SCENARIO...   (or `all`)

With --real each replica has its own ServiceAccount bound to the Role the chart renders with
shards: 8 (a 403 fails the scenario).

Every scenario checks that every owned shard has exactly one running command with that shard's
environment (LEASEHOLD_SHARD, LEASEHOLD_SHARDS, LEASEHOLD_LEASE = ns/work-i, the shard's
LEASEHOLD_FENCING_TOKEN, LEASEHOLD_IDENTITY), and ends with run mode's checks per shard
(leasehold_testing.run_mode.command_failures: no two commands of one shard at once across
replicas, each stopped by R after its shard's last renewal, nothing of a stopped group
survives, no stale-token write) and shard mode's (ShardObserver: no shard claimed twice in
/shards, tokens up every term). Timings are scaled: D=2s, R=1.5s, P=0.3s; --kill-grace R/3
(500ms), --drain-timeout R + 1.5 s (3s); every bound is derived from them and slack() (the
machine's part), so LEASEHOLD_TEST_SLOWDOWN=F stretches all of it F times for a slower build
(tests/lib/README.md). Each scenario prints what it measured.

Ten independent scenarios of 10-35 lines each (one ctest entry each); the group they share
(ShardRunGroup, with its timings) is in leasehold_testing.shard_run_group, also used by the etcd
scenarios.
"""
import signal
import time

from leasehold_testing import (D, P, R, check, http_request, log, real_options,
                               run_scenarios, wait_for)
from leasehold_testing.shard_run_group import (BALANCED, COMMANDS, DRAIN_TIMEOUT, EXITED,
                                               EXPIRED, MOVED, N, TERM_DELAY, TOLERANCE,
                                               ShardRunGroup, instances_of, started_since)
from leasehold_testing.shard_sampler import wait_balanced
from leasehold_testing.timings import slack

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


@scenario
@real_options(chart_values={"shards": N})
def basic(env):
    """3 replicas x 8 shards: each owned shard runs exactly one command with its shard's
    environment; nothing else runs; it stays so."""
    with ShardRunGroup(env) as g:
        time.sleep(D)  # a whole lease duration: a lapsed term or a restart would show
        g.wait_commands(timeout=slack(1))  # it holds already; the slack is for the reads
        check(len(g.monitor.all()) == N, f"one command per shard, none restarted: "
              f"{g.monitor.all()}")
        g.end([r.name for r in g.replicas])


@scenario
@real_options(chart_values={"shards": N})
def join(env):
    """A 4th replica joins: the shards it takes have their commands stopped (SIGTERM) before the
    newcomer starts its own; only those move."""
    with ShardRunGroup(env) as g:
        before = dict(g.owners)
        old = {i.shard: i for i in g.monitor.running()}
        newcomer = g.add("replica-3")
        g.observer.add(newcomer)
        t0 = time.time()
        newcomer.start(wait=False)
        after = wait_balanced(g.replicas, N, timeout=BALANCED)
        g.wait_commands()
        moved = sorted(i for i in range(N) if before[i] != after[i])
        check(moved and all(after[i] == newcomer.name for i in moved),
              f"the moved shards went to the newcomer: {moved}")
        for shard in moved:
            new = [i for i in instances_of(g, newcomer, {shard})][0]
            o = old[shard]
            # As command_failures: the newcomer's fork time (10 ms ticks, rounded down) after
            # the last moment the old group was seen running.
            check(o.stop is not None and o.last_alive <= new.start + 0.01,
                  f"shard {shard}: {o} stopped before {new} started")
            log(f"shard {shard}: old command SIGTERM {o.term_at - t0:.3f}s after the join, gone "
                f"{o.stop - t0:.3f}s, the newcomer's started {new.start - t0:.3f}s "
                f"(gap {new.start - o.stop:.3f}s)")
        unmoved = [s for s in range(N) if s not in moved]
        check(all(old[s].stop is None for s in unmoved), "the other shards' commands run on")
        g.end([r.name for r in g.replicas])


@scenario
@real_options(chart_values={"shards": N})
def sigterm(env):
    """SIGTERM of a replica: its commands get SIGTERM while it still renews, exit, then its
    shards are released and the others start their commands; it exits 0."""
    with ShardRunGroup(env) as g:
        leaving = g.replicas[1]
        its, mine = g.its(leaving)
        t0 = time.time()
        leaving.signal(signal.SIGTERM)
        code = leaving.reap(EXITED)
        t_exit = time.time()
        check(code == 0, f"the leaving replica exits 0 (its commands did): {code}")
        rest, after = g.taken_over(leaving, timeout=MOVED)
        check(sorted(i for i in range(N) if after[i] != g.owners[i]) == its,
              f"only its shards {its} moved")
        # Gone before it exited: the slack is for the Monitor to record it.
        wait_for("its commands seen gone", lambda: all(i.stop for i in mine), slack(2))
        for inst in mine:
            check(inst.term_at is not None, f"{inst} got SIGTERM (drained)")
        drains = [i.stop - t0 for i in mine]
        news = [i.start - t0 for i in started_since(g, rest, set(its), t0)]
        log(f"SIGTERM: its {len(mine)} commands gone {min(drains):.3f}-{max(drains):.3f}s after "
            f"the signal, it exited {t_exit - t0:.3f}s, the new owners' commands started "
            f"{min(news):.3f}-{max(news):.3f}s")
        g.check_successors(mine, rest, t0)
        g.end([r.name for r in rest])


@scenario
@real_options(chart_values={"shards": N})
def sigterm_slow_drain(env):
    """SIGTERM of a replica whose commands take TERM_DELAY (2 s, > R) to exit after SIGTERM: the
    renewals go on while they drain (no SIGKILL at R), they exit 0 on their own, and only then
    are their shards released and taken by the others."""
    with ShardRunGroup(env, command_flags=["--term-delay", str(TERM_DELAY)]) as g:
        leaving = g.replicas[0]
        _, mine = g.its(leaving)
        t0 = time.time()
        leaving.signal(signal.SIGTERM)
        code = leaving.reap(EXITED)
        check(code == 0, f"the leaving replica exits 0 (its commands did): {code}")
        rest, _ = g.taken_over(leaving, timeout=MOVED)
        wait_for("its commands seen gone", lambda: all(i.stop for i in mine), slack(2))
        drains = [i.stop - t0 for i in mine]
        check(all(TERM_DELAY <= d <= DRAIN_TIMEOUT for d in drains),
              f"drained for the command's {TERM_DELAY} s, past R = {R}s, not killed: {drains}")
        news = [new.start - t0 for new in g.check_successors(mine, rest, t0)]
        log(f"slow drain: its {len(mine)} commands exited {min(drains):.3f}-{max(drains):.3f}s "
            f"after SIGTERM (R = {R}s, --drain-timeout {DRAIN_TIMEOUT}s), the new owners' "
            f"started {min(news):.3f}-{max(news):.3f}s")
        g.end([r.name for r in rest])


@scenario
@real_options(chart_values={"shards": N})
def kill9(env):
    """kill -9 of a replica: all its commands die at once (PR_SET_PDEATHSIG and the watchdog);
    the others take its shards once their Leases expire and start their commands."""
    with ShardRunGroup(env) as g:
        victim = g.replicas[2]
        its, mine = g.its(victim)
        t0 = time.time()
        victim.kill()
        # Killed at once (PR_SET_PDEATHSIG), by R at the latest (the watchdog).
        wait_for("its commands gone", lambda: all(i.stop for i in mine), R + slack(1.5))
        gone = max(i.stop for i in mine) - t0
        rest, _ = g.taken_over(victim, timeout=EXPIRED)
        news = [i.start - t0 for i in started_since(g, rest, set(its), t0)]
        log(f"kill -9: its {len(mine)} commands gone {gone:.3f}s after, the new owners' "
            f"started {min(news):.3f}-{max(news):.3f}s (D = {D}s)")
        # "At once": the machine's time to deliver the signals and see the exits (1 s on
        # release), below R at any slowdown, so the watchdog's kill at R would not pass.
        check(gone < slack(1), f"its commands died at once: {gone:.3f}s")
        # Its last renewal was up to P before the kill (a round late by up to the machine's
        # 0.1 s), the others time D from seeing it.
        check(min(news) >= D - P - slack(0.1),
              f"taken over only after the Leases expired: {news}")
        g.end([r.name for r in rest])


@scenario
@real_options(chart_values={"shards": N})
def sigstop(env):
    """SIGSTOP of a replica for 2D: the watchdog kills its commands by R after their last
    renewal (the supervisor cannot); the others take its shards after D; resumed, it claims
    none of them at once, rejoins, and the group ends balanced with one command per shard."""
    with ShardRunGroup(env) as g:
        frozen = g.replicas[0]
        its, mine = g.its(frozen)
        t0 = time.time()
        frozen.signal(signal.SIGSTOP)
        wait_for("its commands killed by the watchdog", lambda: all(i.stop for i in mine),
                 R + slack(2))
        gone = [i.stop - t0 for i in mine]
        check(max(gone) <= R + TOLERANCE, f"its commands gone by R after the stop: {gone}")
        rest, _ = g.taken_over(frozen, timeout=EXPIRED)
        news = [i.start - t0 for i in started_since(g, rest, set(its), t0)]
        log(f"SIGSTOP: its {len(mine)} commands killed {min(gone):.3f}-{max(gone):.3f}s after "
            f"(R = {R}s), the others' started {min(news):.3f}-{max(news):.3f}s")
        time.sleep(max(0.0, 2 * D - (time.time() - t0)))
        frozen.signal(signal.SIGCONT)
        wait_balanced(g.replicas, N, timeout=BALANCED)
        g.wait_commands()
        g.end([r.name for r in g.replicas])


@scenario
@real_options(chart_values={"shards": N})
def release_request(env):
    """POST /leader/release (shard 0, on its owner): shard 0's command is stopped first (out of
    /shards meanwhile), then the Lease is released; still assigned there, it is taken again
    with a new token and a new command. The other shards' commands run on."""
    with ShardRunGroup(env) as g:
        owner = next(r for r in g.replicas if r.name == g.owners[0])
        old = next(i for i in g.monitor.running() if i.shard == 0)
        others = [i for i in g.monitor.running() if i.shard != 0]
        t0 = time.time()
        code, body = http_request(owner.port, "POST", "/leader/release")
        check(code == 202, f"POST /leader/release: {code} {body}")
        # The new term's command, once its journal record (its token) is in: wait_commands alone
        # can return while shard 0 is between its release and the next term (out of /shards).
        # The old command stopped (by R at the latest), the Lease released and taken again, a
        # python3 start: as for any command.
        new = wait_for("shard 0's command of the new term", lambda: next(
            (i for i in g.monitor.running()
             if i.shard == 0 and i.pid != old.pid and i.token is not None), None), COMMANDS)
        g.wait_commands()
        wait_for(f"{old} seen gone", lambda: old.stop is not None, slack(2))
        check(new.pid != old.pid and new.token > old.token and new.replica is owner,
              f"shard 0 taken again by its owner with a new token: {old} then {new}")
        check(old.term_at is not None and old.last_alive <= new.start + 0.01,
              f"{old} got SIGTERM and was gone before {new} started")
        check(all(i.stop is None for i in others), "the other shards' commands run on")
        log(f"release: shard 0's command SIGTERM {old.term_at - t0:.3f}s after the request, gone "
            f"{old.stop - t0:.3f}s, the new term's started {new.start - t0:.3f}s")
        g.end([r.name for r in g.replicas])


@scenario
@real_options(chart_values={"shards": N})
def exit_on_loss_rebalance(env):
    """--exit-on-loss: a shard moved away by rebalancing (a 4th replica joins) is released, not
    lost: every replica keeps running (and exits 0 on SIGTERM)."""
    with ShardRunGroup(env, run_flags=["--exit-on-loss"]) as g:
        newcomer = g.add("replica-3")
        g.observer.add(newcomer)
        newcomer.start(wait=False)
        wait_balanced(g.replicas, N, timeout=BALANCED)
        g.wait_commands()
        time.sleep(slack(1))  # a replica that took a release for a loss would have exited
        check(all(r.alive() for r in g.replicas),
              f"no replica exited: {[(r.name, r.proc.poll()) for r in g.replicas]}")
        g.end([r.name for r in g.replicas])


# The commands that crash do so once the group has formed and every command has been seen
# (ShardRunGroup waits for that; about 1 s from the first command here): the machine's time
# (2 s on release; crash_exits 1.5 s, its replicas exit at the first crash).
CRASH_AFTER = slack(2)
CRASH_EXIT_AFTER = slack(1.5)
# The supervisor's first restart backoff: the product's constant (supervise::Supervisor), not
# one of the timings, so it does not stretch.
RESTART_BACKOFF = 1.0


@scenario
@real_options(chart_values={"shards": N})
def crash_restart(env):
    """--restart on-failure: a shard's command that crashes is started again in the same term
    (same token, after the 1 s backoff) by the same replica; the group stays as it was."""
    with ShardRunGroup(env, run_flags=["--restart", "on-failure"],
                       command_flags=["--crash-after", str(CRASH_AFTER)]) as g:
        owners = dict(g.owners)

        def restarted():
            # Each run's journal record in (its token), not just its process.
            return all(len([i for i in g.monitor.all() if i.shard == s and i.token is not None])
                       >= 2 for s in range(N))
        # Each crashes CRASH_AFTER after its start and is started again after the backoff: the
        # rest is the machine's (24 python3 starts, 7 s on release).
        wait_for("every shard's command restarted", restarted,
                 CRASH_AFTER + RESTART_BACKOFF + slack(7))
        for s in range(N):
            runs = [i for i in g.monitor.all() if i.shard == s and i.token is not None]
            check(all(i.replica.name == owners[s] and i.token == runs[0].token for i in runs),
                  f"shard {s}: restarted by its owner in the same term: {runs}")
            # The backoff less the fork time's 10 ms tick and the Monitor's 20 ms poll (a lower
            # bound: a slower machine only makes the gap longer).
            check(runs[1].start - runs[0].stop >= RESTART_BACKOFF - 0.1,
                  f"shard {s}: after the backoff: {runs}")
        g.end([])


@scenario
@real_options(chart_values={"shards": N})
def crash_exits(env):
    """--restart never: the first command that ends on its own ends its replica, with that
    command's status (7), after draining its other commands and releasing every shard."""
    with ShardRunGroup(env, command_flags=["--crash-after", str(CRASH_EXIT_AFTER)]) as g:
        codes = {r.name: r.reap(EXITED) for r in g.replicas}
        log("exit codes:", codes)
        check(all(c == 7 for c in codes.values()), f"every replica exits 7: {codes}")
        g.end([])


if __name__ == "__main__":
    raise SystemExit(run_scenarios(SCENARIOS))
