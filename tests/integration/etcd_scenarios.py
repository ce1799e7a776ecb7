#!/usr/bin/env python3
"""The etcd store's scenarios on a real etcd member (leasehold --store etcd; EtcdEnv: one member
over TLS with client certificates required, auth on, each sidecar the least-privilege user lh
whose role covers only the election's prefix).

    etcd_scenarios.py --sidecar BIN --etcd BIN [--list] SCENARIO...   (or `all`)

$ETCD_BIN, when set, replaces --etcd (as in tests/realkube/start.sh). Timings are the library's
scaled D, R, P (leasehold_testing.timings; LEASEHOLD_TEST_SLOWDOWN stretches them); every bound
is derived from them and slack(). Each scenario samples every sidecar's /leader (Observer) and
checks that no two claims overlap and that fencing tokens (the leader key's create revision)
only go up.

The scenarios every store must pass (first leader, kill -9, SIGTERM, SIGSTOP, partition, the
common bad input) are the conformance suite's (tests/conformance, the etcd and etcd34 stores);
these are the etcd store's own.
"""
import argparse
import os
import signal
import sys
import time
import traceback

from leasehold_testing import D, P, R, Observer, check, check_took, log, run_steps, the_leader, \
    wait_for
from leasehold_testing.checks import Failure
from leasehold_testing.etcd_env import (ELECTION_TIMEOUT, EXPIRY_TAKEOVER, EtcdEnv,
                                        EtcdRunReplica, EtcdShardRunReplica, wait_gone)
from leasehold_testing.kube_time import epoch
from leasehold_testing.run_cluster import AT_ONCE, DRAIN_TIMEOUT, RunCluster
from leasehold_testing.shard_run_group import EXITED as SHARD_RUN_EXITED
from leasehold_testing.shard_run_group import MOVED as SHARD_RUN_MOVED
from leasehold_testing.shard_run_group import ShardRunGroup
from leasehold_testing.shard_sampler import (ShardObserver, balance_problem, shards_of,
                                             wait_balanced)
from leasehold_testing.shard_sampler import owners as shard_owners
from leasehold_testing.sidecar import check_logged, keeps_running_not_leading
from leasehold_testing.timings import slack

SCENARIOS = {}

# ELECTION_TIMEOUT (EtcdMember's) and EXPIRY_TAKEOVER (D after the last keep-alive, etcd's 0.5 s
# expiry scan, the deletion's watch event and the next key's range) are
# leasehold_testing.etcd_env's: the chaos run's etcd flavour and the conformance suite's etcd
# store bound their waits by them too.
# The first leader: a lease grant, the campaign's txn and a range, a few round trips on release.
FIRST_LEADER = D + P + slack(3)


def scenario(fn=None, members=1):
    """Registers a scenario; `members`: the size of its etcd cluster."""
    def register(fn):
        fn.members = members
        SCENARIOS[fn.__name__] = fn
        return fn
    return register(fn) if fn else register


def safety(obs):
    terms = obs.check_safety()
    log(f"{len(obs.samples)} samples, terms (incarnation, token): "
        f"{[(t[2], t[3]) for t in terms]}")
    return terms


# ---- run mode on etcd (leasehold run --store etcd; run_cluster.RunCluster, the checks of the
# run-mode scenarios: no two commands at once, each stopped by R after its last confirmed
# keep-alive, nothing of a stopped group survives, no stale-token write) ----------------------
def run_cluster(env, **kw):
    return RunCluster(env, replica=EtcdRunReplica, **kw)


@scenario
def run_basic(env):
    """`leasehold run --store etcd`: one replica runs the command, with the leader key's create
    revision in LEASEHOLD_FENCING_TOKEN and the election in LEASEHOLD_LEASE; the others run
    nothing."""
    with run_cluster(env) as c:
        inst = c.leading_instance()
        start = next(e for e in c.monitor.events if e["event"] == "start")
        keys = env.keys()
        check(start["token"] == keys[0][1], f"LEASEHOLD_FENCING_TOKEN {start['token']} is the "
              f"leader key's create revision: {keys}")
        check(start["identity"] == inst.replica.name, f"LEASEHOLD_IDENTITY {start['identity']}")
        check(start["lease"] == env.lease, f"LEASEHOLD_LEASE {start['lease']}")
        time.sleep(D)
        check(len(c.monitor.all()) == 1, f"one command only: {c.monitor.all()}")
        c.end({r.name: 0 for r in c.replicas})


@scenario
def run_kill9(env):
    """kill -9 of the leading supervisor: its command's group dies at once; the next command
    starts once the lease expired on the server, with a higher token."""
    with run_cluster(env) as c:
        first = c.settled_leader()
        t0 = time.time()
        first.replica.kill()
        c.stopped(first, AT_ONCE)
        second = c.leading_instance(after=first, timeout=EXPIRY_TAKEOVER + AT_ONCE)
        log(f"group gone {first.stop - t0:.3f}s after the kill; next command "
            f"{second.start - t0:.3f}s after it")
        check_took(t0, second.start, EXPIRY_TAKEOVER + AT_ONCE, "takeover after the expiry",
                   least=D - P - slack(0.05))
        check(second.token > first.token, f"token went up: {first.token} -> {second.token}")
        c.end()


@scenario
def run_sigterm(env):
    """SIGTERM to the leading supervisor: the command drains (1 s, renewals go on), then the
    lease is revoked and the next command starts at once; leasehold exits 0."""
    with run_cluster(env, command_flags=["--term-delay", "1.0"]) as c:
        first = c.settled_leader()
        t0 = time.time()
        first.replica.signal(signal.SIGTERM)
        c.stopped(first, DRAIN_TIMEOUT + AT_ONCE)
        check(first.stop - t0 >= 1.0, "the drain took the command's time")
        second = c.leading_instance(after=first, timeout=P + AT_ONCE + slack(1))
        log(f"drain {first.stop - t0:.2f}s; next command {second.start - first.stop:.3f}s after "
            "the group was gone")
        check_took(first.stop, second.start, P + AT_ONCE, "revoked: the next did not wait for D")
        check(first.replica.exit_code(timeout=slack(5)) == 0, "leasehold exits 0")
        c.end()


@scenario
def run_sigstop(env):
    """SIGSTOP of the leading supervisor for 2 D: the watchdog kills its command by R; the next
    one starts only after the lease expired; the woken supervisor runs nothing."""
    with run_cluster(env) as c:
        first = c.settled_leader()
        t0 = time.time()
        first.replica.signal(signal.SIGSTOP)
        c.stopped(first, R + AT_ONCE)
        log(f"stopped {first.stop - t0:.3f}s after SIGSTOP of its supervisor (R = {R}s)")
        second = c.leading_instance(after=first, timeout=EXPIRY_TAKEOVER + AT_ONCE)
        check_took(t0, second.start, EXPIRY_TAKEOVER + AT_ONCE, "takeover after the expiry",
                   least=D - P - slack(0.05))
        time.sleep(max(0.0, t0 + 2 * D - time.time()))
        first.replica.signal(signal.SIGCONT)
        wait_for(f"{first.replica.name} to answer after SIGCONT",
                 lambda: first.replica.status() is not None, slack(5))
        time.sleep(2 * P)
        check(first.replica.alive(), "the woken supervisor keeps running")
        check(len(c.monitor.of(first.replica)) == 1, "and started nothing in somebody's term")
        check(second.stop is None, "the new leader's command still runs")
        c.end({r.name: 0 for r in c.replicas})


def keys_count(env, n, timeout):
    wait_for(f"{n} keys under {env.lease}/", lambda: len(env.keys()) == n, timeout)


def check_outside(terms, name, start, end):
    """No leasehold term overlaps [start, end], the time etcdctl candidate `name` led."""
    for t0, t1, who, token in terms:
        check(t1 <= start or t0 >= end, f"{who} (token {token}) claimed [{t0:.3f}, {t1:.3f}] "
              f"while {name} led [{start:.3f}, {end:.3f}]")


@scenario
def etcdctl_mixed(env):
    """`etcdctl elect` candidates among leasehold's on one election (keys in creation order:
    etcdctl-a, replica-0, etcdctl-b, replica-1): the oldest key leads whichever program made
    it; no leasehold sidecar claims while an etcdctl candidate leads, and each names it the
    holder; `etcdctl elect -l` names leasehold's leader."""
    a = env.etcdctl("etcdctl-a", "etcdctl-a")
    a.wait_elected(FIRST_LEADER)
    r0 = env.sidecar("replica-0").start()
    keys_count(env, 2, FIRST_LEADER)
    b = env.etcdctl("etcdctl-b", "etcdctl-b")
    keys_count(env, 3, FIRST_LEADER)
    r1 = env.sidecar("replica-1").start()
    keys_count(env, 4, FIRST_LEADER)
    watcher = env.etcdctl("observer")
    sidecars = [r0, r1]

    def follow(holder, who):
        def ok():
            states = [s.status() for s in who]
            return all(st and not st["leader"] and st["holder"] == holder for st in states)
        wait_for(f"{[s.name for s in who]} to follow {holder}", ok, P + slack(2))

    with Observer(sidecars) as obs:
        watcher.wait_leader("etcdctl-a", slack(5))
        follow("etcdctl-a", sidecars)
        time.sleep(D + P)  # longer than a lease lives: etcdctl-a's session keeps it
        follow("etcdctl-a", sidecars)
        a_elected, a_end = a.elected_at(), time.time()
        check(a.stop(signal.SIGTERM, slack(10)) == 0, "etcdctl-a exits 0 after it resigned")
        check(the_leader(sidecars, P + slack(2)) is r0, "replica-0, the next oldest key, leads")
        log(f"etcdctl-a resigned -> replica-0 leads: {(time.time() - a_end) * 1000:.0f} ms")
        watcher.wait_leader("replica-0", slack(5))
        time.sleep(2 * P)  # a few renewals under the sampler
        check(b.elected_at() is None, "etcdctl-b waits behind replica-0")
        token0 = r0.status()["fencingToken"]

        r0.signal(signal.SIGTERM)
        b_elected = b.wait_elected(P + slack(2))
        check(r0.wait(timeout=slack(10)) == 0, "replica-0 exits 0")
        follow("etcdctl-b", [r1])
        time.sleep(D + P)
        follow("etcdctl-b", [r1])
        watcher.wait_leader("etcdctl-b", slack(5))
        b_end = time.time()
        check(b.stop(signal.SIGTERM, slack(10)) == 0, "etcdctl-b exits 0 after it resigned")
        check(the_leader([r1], P + slack(2)) is r1, "replica-1 leads after etcdctl-b")
        watcher.wait_leader("replica-1", slack(5))
        check(r1.status()["fencingToken"] > token0, "the token went up past etcdctl-b's term")
        time.sleep(2 * P)
    terms = safety(obs)
    check([t[2] for t in terms] == ["replica-0#0", "replica-1#0"],
          f"replica-0, then replica-1 led: {terms}")
    check_outside(terms, "etcdctl-a", a_elected, a_end)
    check_outside(terms, "etcdctl-b", b_elected, b_end)
    log(f"observer saw: {watcher.leaders()}")


def raft_first_sidecars(env, raft, n=3):
    """`n` sidecars started, each with the endpoints in the order: `raft` (an EtcdMember), then
    the others."""
    order = [raft.url] + [m.url for m in env.members if m is not raft]
    sidecars = [env.sidecar(f"replica-{i}", endpoints=",".join(order)) for i in range(n)]
    for s in sidecars:
        s.start()
    return sidecars


@scenario(members=3)
def member_kill9(env):
    """3 members; every sidecar's first endpoint is the raft leader, which is killed (kill -9):
    the sidecars go on through the other members (endpoint failover), the leader keeps its term
    (its lease lives: a new raft leader keeps the leases), and nobody else claims meanwhile."""
    raft = env.raft_leader()
    sidecars = raft_first_sidecars(env, raft)
    leader = the_leader(sidecars, FIRST_LEADER)
    with Observer(sidecars) as obs:
        token = leader.status()["fencingToken"]
        time.sleep(2 * P)
        t0 = time.time()
        raft.kill()
        log(f"killed {raft.name}, the raft leader and everybody's first endpoint")
        # etcd elects a new raft leader within its election timeout (1 s by default) and keeps
        # every lease; the sidecars' requests to the dead member fail at once (refused) and go
        # to the next endpoint.
        time.sleep(D + P)
        back = the_leader(sidecars, EXPIRY_TAKEOVER)
        log(f"{back.name} leads {time.time() - t0:.2f}s after the kill")
        check(back is leader and back.status()["fencingToken"] == token,
              f"{leader.name} keeps its term (token {token}): {back.name} "
              f"{back.status()}")
        check(all(s.alive() for s in sidecars), "every sidecar runs on")
    terms = safety(obs)
    check(len({t[3] for t in terms}) == 1, f"one term throughout: {terms}")
    gaps = [line for s in sidecars for line in s.log_lines() if line.get("level") == "warn"]
    log(f"warnings: {[g.get('msg') for g in gaps][:10]}")


@scenario(members=3)
def quorum_loss(env):
    """3 members; the two that do not lead etcd's raft are stopped (SIGSTOP) for 2 D, longer than
    R: the leader's keep-alives are answered until the raft leader steps down, then not; it
    stops claiming by R after its last confirmed one, and nobody claims until quorum is back;
    then one leader."""
    # How long after the loss a keep-alive can still be answered: when the member left running
    # is the raft leader, it renews leases until CheckQuorum steps it down, which looks once an
    # election timeout at the followers' activity in the one before: up to two election
    # timeouts (3.4 and 3.6 alike: 3.6's LeaseRenew asks ensureLeadership, which skips the
    # quorum check while the member's raft loop ticks). Safe: a new raft leader extends every
    # lease by an election timeout before it counts down (docs/design.md, "The etcd store").
    # The slack: raft's ticks are a Go ticker of the member's, late on a busy machine (2.14 s
    # once at nice 19 beside the full suite).
    late = 2 * ELECTION_TIMEOUT + slack(0.5)
    # The member left running is the raft leader, every sidecar's first endpoint: the case
    # where keep-alives are answered after the loss.
    raft = env.raft_leader()
    sidecars = raft_first_sidecars(env, raft)
    the_leader(sidecars, FIRST_LEADER)
    with Observer(sidecars) as obs:
        time.sleep(2 * P)
        stopped = [m for m in env.members if m is not raft]
        t0 = time.time()
        for m in stopped:
            m.signal(signal.SIGSTOP)
        log(f"stopped {[m.name for m in stopped]}: no quorum")
        # The last keep-alive answered was sent before t0 (+ late); its claim ends R after.
        wait_for("nobody to claim", lambda: not any(s.leader() for s in sidecars),
                 late + R + slack(1))
        lost = time.time()
        log(f"no claim {lost - t0:.2f}s after quorum was lost (R={R}s; keep-alives may be "
            f"answered up to {late}s after)")
        time.sleep(max(0.0, t0 + 2 * D - time.time()))
        healed = time.time()
        for m in stopped:
            m.signal(signal.SIGCONT)
        # First etcd's own raft election: not leasehold's time, and not bounded by a few
        # election timeouts on 3.4, whose members vote without pre-vote by default: the old raft
        # leader, its log behind, campaigns again and again at ever higher terms, each time
        # deposing the member elected in between, until one of the others times out first
        # (5 s once on 3.4.23 in the full suite: the member elected at term 3 deposed at once).
        env.raft_leader()
        available = time.time()
        # Then a keep-alive and the campaign's range (the leader's lease lived: a new raft leader
        # extends every lease by an election timeout before it counts down).
        back = the_leader(sidecars, EXPIRY_TAKEOVER + slack(2))
        log(f"etcd had a raft leader {available - healed:.2f}s after the heal; {back.name} leads "
            f"{time.time() - available:.2f}s after that (token {back.status()['fencingToken']})")
        time.sleep(2 * P)
    safety(obs)
    # Each answer leader=true to a request sent before quorum came back claimed up to its
    # validUntil: none past the last keep-alive's R. (Not the terms: a claim that resumes with
    # the same token after the heal, its lease having lived, is one term from its acquireTime.)
    for sent, _, who, st in obs.samples:
        if st and st.get("leader") and sent < healed:
            until = epoch(st["validUntil"])
            check(until <= t0 + late + R + slack(0.05),
                  f"{who} (token {st['fencingToken']}) answered at {sent:.3f} leader until "
                  f"{until:.3f}, past the loss of quorum at {t0:.3f} + R")


# ---- shards: --shards N on etcd ----------------------------------------------------------
SHARDS = 8
# A start, a join or a SIGTERM's hand-over: no expiry to wait for (P for a cold start); the
# slack is for 3-4 sidecars starting and each move's drop, revoke, grant, join and range on 2
# shared cores.
SHARDS_SETTLED = P + D + slack(7)


def shard_sidecar(env, i):
    return env.sidecar(f"replica-{i}", extra_args=["--shards", str(SHARDS)])


def check_shard_layout(env, sidecars):
    """Every shard's election <lease>/shards/i holds one key, its owner's, whose create revision
    is the token /shards shows; every live replica has one key under <lease>/members/."""
    tokens = {o["shard"]: o["fencingToken"] for s in sidecars for o in shards_of(s)["owned"]}
    for i in range(SHARDS):
        keys = env.keys(f"{env.lease}/shards/{i}/")
        check(len(keys) == 1 and keys[0][1] == tokens.get(i),
              f"shard {i}: keys {keys}, token {tokens.get(i)}")
    members = env.keys(f"{env.lease}/members/")
    check(len(members) == len(sidecars), f"one membership key per replica: {members}")


@scenario
def shards(env):
    """--shards 8: 3 replicas balanced, each shard's election <lease>/shards/i holding only its
    owner's key (create revision = token); a 4th joins: only surplus moves, all to it; SIGTERM of
    a replica: it revokes its leases (no key of it left) and the others take its shards at
    once; kill -9 of another: its shards are taken only once its leases can have expired. Every
    replica's /shards sampled throughout: no shard claimed twice, tokens up every term."""
    group = [shard_sidecar(env, i) for i in range(3)]
    with ShardObserver(list(group)) as obs:
        t0 = time.monotonic()
        for s in group:
            s.start(wait=False)
        before = wait_balanced(group, SHARDS, timeout=SHARDS_SETTLED)
        log(f"3 replicas x {SHARDS} shards balanced {time.monotonic() - t0:.2f}s after start")
        check_shard_layout(env, group)

        newcomer = shard_sidecar(env, 3)
        obs.add(newcomer)
        t0 = time.monotonic()
        newcomer.start(wait=False)
        group.append(newcomer)
        after = wait_balanced(group, SHARDS, timeout=SHARDS_SETTLED)
        moved = sorted(i for i in range(SHARDS) if before[i] != after[i])
        log(f"a 4th joined: balanced {time.monotonic() - t0:.2f}s later, moved {moved}")
        check(moved and all(after[i] == newcomer.name for i in moved),
              f"only surplus moved, all to the newcomer: {moved}")
        check_shard_layout(env, group)

        leaving = group.pop(0)
        its_tokens = {o["fencingToken"] for o in shards_of(leaving)["owned"]}
        t0 = time.monotonic()
        leaving.signal(signal.SIGTERM)
        code = wait_gone(leaving, R + slack(3))
        revisions = {k[1] for k in env.keys()}
        members = env.keys(f"{env.lease}/members/")
        after = wait_balanced(group, SHARDS, timeout=SHARDS_SETTLED)
        took = time.monotonic() - t0
        log(f"SIGTERM: exit {code}, the 3 others balanced {took:.2f}s after the signal")
        check(code == 0, f"the leaving replica exits 0: {code}")
        check(its_tokens and its_tokens.isdisjoint(revisions) and len(members) == len(group),
              f"its shard keys {its_tokens} and membership went with its revoked leases: "
              f"{revisions}, members {members}")

        victim = group.pop(0)
        its = sorted(i for i, o in after.items() if o == victim.name)
        victim.kill()
        t_kill = time.monotonic()
        first = None
        while balance_problem(group, SHARDS) is not None or first is None:
            now = time.monotonic() - t_kill
            claimed, _ = shard_owners(group)
            if first is None and any(claimed.get(i) for i in its):
                first = now
            check(now < EXPIRY_TAKEOVER + SHARDS_SETTLED,
                  f"not balanced {now:.1f}s after the kill: {balance_problem(group, SHARDS)}")
            time.sleep(0.02)
        log(f"kill -9: its shards {its} first claimed by another {first:.2f}s after the kill, "
            f"balanced over 2 at {time.monotonic() - t_kill:.2f}s")
        # Its last keep-alive was up to P before the kill; etcd expires a lease D after it.
        check(first >= D - P - 0.1, f"taken before its leases could expire: {first:.2f}s")
        time.sleep(P)
    terms = obs.check_safety()
    log(f"/shards: {len(obs.samples)} samples, {terms} terms, no shard claimed twice, tokens up "
        "every term")


@scenario(members=3)
def shards_member_kill9(env):
    """3 members; 3 replicas x 8 shards, every replica's first endpoint the raft leader, which is
    killed (kill -9): the replicas go on through the other members, no shard moves and every
    owner keeps its token (a new raft leader keeps the leases); /shards sampled throughout."""
    raft = env.raft_leader()
    order = [raft.url] + [m.url for m in env.members if m is not raft]
    group = [env.sidecar(f"replica-{i}", endpoints=",".join(order),
                         extra_args=["--shards", str(SHARDS)]) for i in range(3)]
    with ShardObserver(list(group)) as obs:
        for s in group:
            s.start(wait=False)
        wait_balanced(group, SHARDS, timeout=SHARDS_SETTLED)
        tokens = {(s.name, o["shard"], o["fencingToken"]) for s in group
                  for o in shards_of(s)["owned"]}
        time.sleep(2 * P)
        t0 = time.monotonic()
        raft.kill()
        log(f"killed {raft.name}, the raft leader and everybody's first endpoint")
        time.sleep(D + P)
        wait_balanced(group, SHARDS, timeout=EXPIRY_TAKEOVER + SHARDS_SETTLED)
        after = {(s.name, o["shard"], o["fencingToken"]) for s in group
                 for o in shards_of(s)["owned"]}
        log(f"balanced again {time.monotonic() - t0:.2f}s after the kill")
        check(after == tokens, f"no shard moved, every token kept: {sorted(tokens ^ after)}")
        check(all(s.alive() for s in group), "every replica runs on")
    terms = obs.check_safety()
    log(f"/shards: {len(obs.samples)} samples, {terms} terms, no shard claimed twice")


@scenario
def run_shards(env):
    """`leasehold run --store etcd --shards 8`: 3 replicas, one command per owned shard with
    LEASEHOLD_LEASE <lease>/shards/i and its token; SIGTERM of a replica: its commands drain, it
    exits 0, the others take its shards and start theirs only once the old ones are gone; run
    mode's checks (no two commands of a shard at once, stopped by R, fenced writes) and shard
    mode's."""
    with ShardRunGroup(env, replica=EtcdShardRunReplica) as g:
        leaving = g.replicas[1]
        its, mine = g.its(leaving)
        t0 = time.time()
        leaving.signal(signal.SIGTERM)
        code = leaving.reap(SHARD_RUN_EXITED)
        check(code == 0, f"the leaving replica exits 0 (its commands did): {code}")
        rest, after = g.taken_over(leaving, timeout=SHARD_RUN_MOVED)
        wait_for("its commands seen gone", lambda: all(i.stop for i in mine), slack(2))
        for old in mine:
            check(old.term_at is not None, f"{old} got SIGTERM (drained)")
        g.check_successors(mine, rest, t0)
        log(f"SIGTERM: its shards {its} taken over, one command per owned shard "
            f"{time.time() - t0:.2f}s after the signal")
        g.end([r.name for r in rest])


@scenario
def bad_input(env):
    """A wrong CA, a user without permission on the prefix, a stray key, no password file: a
    clear message naming the flag or the cause, exit 2 or a logged warning, never a crash. (The
    unreachable endpoint and bad flags common to every store: tests/conformance, bad_input.)"""
    # How long a problem takes to show: a request deadline (R/2 in the product) and a retry P.
    shows = R + P + slack(2)
    s = env.sidecar("wrong-ca", cacert=env.dir / "other-ca.crt").start()
    keeps_running_not_leading(s, ["TLS"], shows)

    env.add_user("nobody", prefix="other/")
    s = env.sidecar("no-permission", user="nobody").start()
    keeps_running_not_leading(s, ["permission denied"], shows)
    problem = (s.status() or {}).get("problem", "")
    check("permission denied" in problem, f"/leader must name the refusal: {s.status()}")

    missing = env.dir / "missing.password"
    s = env.sidecar("no-password-file", password_file=missing)
    s.start(wait=False)
    rc = wait_gone(s, slack(10))
    out = s.logs()
    check(rc == 2, f"exit 2 for a missing password file, got {rc}: {out[-500:]}")
    check("--etcd-password-file" in out and str(missing) in out,
          f"the message names --etcd-password-file and the path: {out[-500:]}")
    log(f"no-password-file: exit {rc}: {out.strip().splitlines()[-1][:300]}")

    for c in list(env.sidecars):
        c.kill()
        c.reap()
    # A key without a lease under the election's prefix (put by root) would lead forever.
    stray = f"{env.lease}/stray"
    env.put(stray, "not a candidate")
    sidecars = [env.sidecar(f"replica-{i}") for i in range(2)]
    with Observer(sidecars) as obs:
        for c in sidecars:
            c.start()
        for c in sidecars:
            line = check_logged(c, [stray, "--lease-name"], shows)
        log(f"stray key: {line[:300]}")
        time.sleep(D + P)  # long enough for a lease to expire: still nobody may lead
        states = [c.status() for c in sidecars]
        check(all(c.alive() for c in sidecars), "the sidecars keep running")
        check(not any(st["leader"] for st in states), f"nobody leads over a stray key: {states}")
    check(not obs.terms(), f"nobody claimed leadership: {obs.terms()}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sidecar", required=True)
    ap.add_argument("--etcd", help="the etcd binary (build/realkube/bin/etcd); $ETCD_BIN wins")
    ap.add_argument("--etcdctl", help="the etcdctl binary (build/etcdctl/etcdctl, "
                    "tests/etcdctl/build.sh); $ETCDCTL_BIN wins")
    ap.add_argument("--expect-version", metavar="X.Y",
                    help="fail unless the etcd binary is this release (the etcd34 entries: "
                    "$ETCD_BIN must not turn them into a test of another)")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    if args.list:
        for name, fn in SCENARIOS.items():
            print(f"{name}\t{(fn.__doc__ or '').strip().splitlines()[0]}")
        return 0
    etcd = os.environ.get("ETCD_BIN") or args.etcd
    if not etcd or not os.access(etcd, os.X_OK):
        ap.error(f"no etcd binary at {etcd!r}: build it with tests/realkube/build.sh (or set "
                 "$ETCD_BIN)")
    etcdctl = os.environ.get("ETCDCTL_BIN") or args.etcdctl
    unknown = [n for n in args.names if n != "all" and n not in SCENARIOS]
    if unknown:
        ap.error(f"unknown scenario(s) {unknown}; --list shows them")
    names = list(SCENARIOS) if args.names in ([], ["all"]) else args.names

    def run_one(name):
        try:
            members = SCENARIOS[name].members
            with EtcdEnv(args.sidecar, etcd, members=members, etcdctl_bin=etcdctl) as env:
                version = ".".join(map(str, env.server_version()))
                log(f"etcd {version}, {members} member(s)")
                if args.expect_version:
                    check(version.startswith(args.expect_version + "."),
                          f"{etcd} is etcd {version}, not {args.expect_version}")
                SCENARIOS[name](env)
        except Failure:
            raise
        except Exception:
            traceback.print_exc()
            raise
    return run_steps(names, run_one, errors=(Failure, Exception))


if __name__ == "__main__":
    sys.exit(main())
