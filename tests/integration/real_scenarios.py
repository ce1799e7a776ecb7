#!/usr/bin/env python3
"""Scenarios that only the real control plane can run (tests/realkube; ctest label `real`):

    real_scenarios.py --sidecar BIN --real SCENARIO...   (or `all`, or --list)

ha_split                two kube-apiservers on one etcd, the sidecars split across them: kill -9
                        of the leader, a SIGTERM handover, a partition of the leader's apiserver
                        (every proxy to it) and kill -9 of the leader's apiserver
sigterm_during_renewal  latency on the leader's proxy holds a renewal in flight when SIGTERM
                        arrives: the release must still land (after the renewal) and another
                        replica take over at once, never after D (kubernetes/kubernetes#131867 is
                        this bug in client-go)
apiserver_restart       kube-apiserver restarted (SIGTERM, then kill -9) under a steady leader:
                        no leadership change, same token; the followers follow again
etcd_pause              etcd SIGSTOPped for longer than R: the leader stops claiming by R after
                        its last renewal, nobody leads, one leader again after SIGCONT
rbac_is_enforced        the 403 check can fail: --pod-label without the chart's pods rule is
                        refused (and seen in the audit log)

Same harness as scenarios.py: RealEnv (each sidecar its own ServiceAccount with the chart's Role,
its own TCP proxy), Observer.check_safety on every run, and the Lease's history (a watch as admin,
leasehold_testing.lease_history) where the scenario is about what the server applied.

A little over 400 lines: five independent scenarios of 40-100 lines each (ctest groups them in
two entries, each on one control plane); the shared code is in leasehold_testing.
"""
import os
import random
import signal
import sys
import time

from leasehold_testing import (D, P, R, Failure, Observer, TcpProxy, check, log, real_options,
                               run_scenarios, the_leader, wait_for)
from leasehold_testing.kube_time import epoch
from leasehold_testing.lease_history import history_checks, start_history, stop_history

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


def apiserver_of(env, sidecar):
    return env.routes.get(sidecar.name, "apiserver")


def step_down(sidecar, timeout, last_valid):
    """Polls /leader until it says false; returns (when that request was sent, the last
    validUntil it gave, or `last_valid`, the one before the fault). A leader cut off from the
    API stops claiming at its last renewal + R (= validUntil; the Observer checks that no
    answer says otherwise)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        t = time.time()
        st = sidecar.status()
        if st and st.get("leader"):
            last_valid = epoch(st["validUntil"])
        elif st:
            return t, last_valid
        time.sleep(0.005)
    raise Failure(f"{sidecar.name} still claims {timeout}s after it was cut off")


@scenario
@real_options(real_only=True, ha=True)
def ha_split(env):
    """Sidecars split across two kube-apiservers (HA): kill -9, SIGTERM handover, a partition
    and kill -9 of the leader's apiserver; the others take over through the other one."""
    plane = env.plane
    names = [f"replica-{i}" for i in range(4)]
    for i, n in enumerate(names):
        env.route(n, "apiserver" if i % 2 == 0 else "apiserver2")
    # The history watch goes through a proxy of its own, moved to the surviving apiserver
    # before one is killed (its watch cache has the versions the watch resumes from).
    hist_proxy = TcpProxy(plane.ports["apiserver2"], name="history")
    history = start_history(env, port=hist_proxy.port)
    sidecars = [env.sidecar(n) for n in names]
    for s in sidecars:
        s.start()
    leader = the_leader(sidecars, timeout=D + P + 5)
    log(f"leader {leader.name} on {apiserver_of(env, leader)}; "
        f"{', '.join(f'{s.name}@{apiserver_of(env, s)}' for s in sidecars)}")
    moved = set()
    try:
        with Observer(sidecars) as obs:
            # 1. kill -9 of the leader: a replica takes over after D, whichever apiserver.
            time.sleep(1)
            token = leader.status()["fencingToken"]
            t0 = time.monotonic()
            leader.signal(signal.SIGKILL)
            leader.wait(5)
            new = the_leader([s for s in sidecars if s is not leader], timeout=D + P + 5)
            took = time.monotonic() - t0
            log(f"kill -9 {leader.name}@{apiserver_of(env, leader)}: {new.name}@"
                f"{apiserver_of(env, new)} leads after {took:.3f}s (D={D}s)")
            check(took >= D - P - 0.05, f"nobody may take over before D: {took:.3f}s")
            check(new.status()["fencingToken"] > token, "token went up")
            moved.add((apiserver_of(env, leader), apiserver_of(env, new)))
            leader.start()  # a new incarnation, same ServiceAccount and apiserver
            leader = the_leader(sidecars, timeout=5)

            # 2. SIGTERM: released through one apiserver, seen through the other's watch cache.
            for _ in range(2):
                time.sleep(0.5)
                token = leader.status()["fencingToken"]
                t0 = time.monotonic()
                leader.signal(signal.SIGTERM)
                check(leader.wait(10) == 0, "clean exit after SIGTERM")
                new = the_leader([s for s in sidecars if s is not leader], timeout=5)
                took = time.monotonic() - t0
                log(f"SIGTERM {leader.name}@{apiserver_of(env, leader)}: {new.name}@"
                    f"{apiserver_of(env, new)} leads after {took * 1000:.0f} ms")
                check(took < 1.5, f"handover across apiservers took {took:.3f}s")
                check(new.status()["fencingToken"] == token + 1, "token +1")
                moved.add((apiserver_of(env, leader), apiserver_of(env, new)))
                leader.start()
                leader = the_leader(sidecars, timeout=5)

            # 3. Partition of the leader's apiserver: every proxy to it stops forwarding. Its
            # leader stops claiming by R; a replica of the other apiserver takes over after D.
            time.sleep(0.5)
            cut = apiserver_of(env, leader)
            cut_users = env.users_on(cut)
            valid = epoch(leader.status()["validUntil"])
            t0 = time.time()
            for u in cut_users:
                env.partition(u)
            t_false, valid = step_down(leader, R + 1, valid)
            stepped = t_false - t0
            other = [s for s in sidecars if apiserver_of(env, s) != cut]
            new = the_leader(other, timeout=D + P + 5)
            took = time.time() - t0
            log(f"partition of {cut} ({', '.join(cut_users)}): {leader.name} stopped claiming "
                f"after {stepped:.3f}s (R={R}s), {new.name}@{apiserver_of(env, new)} leads "
                f"after {took:.3f}s")
            check(valid - t0 <= R + 0.01, f"claimed {valid - t0:.3f}s past the partition")
            check(stepped <= R + 0.25, f"must stop claiming by R: {stepped:.3f}s")
            check(took >= D - P - 0.1, f"nobody may take over before D: {took:.3f}s")
            moved.add((cut, apiserver_of(env, new)))
            for u in cut_users:
                env.heal(u)
            leader = the_leader(sidecars, timeout=5)

            # 4. kill -9 of the leader's apiserver: the same from the sidecars' view, but every
            # connection to it is refused; it comes back with the same flags and rejoins.
            time.sleep(0.5)
            dead = apiserver_of(env, leader)
            alive = "apiserver2" if dead == "apiserver" else "apiserver"
            hist_proxy.retarget(plane.ports[alive])
            hist_proxy.reset()  # the history watch resumes on the surviving apiserver
            valid = epoch(leader.status()["validUntil"])
            os.kill(plane.pid(dead), signal.SIGKILL)
            t0 = time.time()
            t_false, valid = step_down(leader, R + 1, valid)
            stepped = t_false - t0
            plane.stop(dead)  # start.sh's bookkeeping (the process is gone already)
            new = the_leader([s for s in sidecars if apiserver_of(env, s) == alive],
                             timeout=D + P + 5)
            took = time.time() - t0
            log(f"kill -9 of {dead}: {leader.name} stopped claiming after {stepped:.3f}s, "
                f"{new.name}@{alive} leads after {took:.3f}s")
            check(valid - t0 <= R + 0.01, f"claimed {valid - t0:.3f}s past the kill")
            check(stepped <= R + 0.25, f"must stop claiming by R: {stepped:.3f}s")
            moved.add((dead, alive))
            t1 = time.monotonic()
            plane.start(dead)
            log(f"{dead} back after {time.monotonic() - t1:.1f}s")
            leader = the_leader(sidecars, timeout=10)
            time.sleep(1)
        terms = obs.check_safety()
    finally:
        stop_history(history)
        hist_proxy.close()
    hterms = history_checks(history)
    log(f"{len(terms)} sampled terms, {len(hterms)} in the Lease history "
        f"({len(history.records)} versions); leadership moved {sorted(moved)}")
    check(any(a != b for a, b in moved), f"leadership never moved across apiservers: {moved}")


# SIGTERM during a renewal. Slower timings so that "at once" and "after D" are far apart and a
# renewal delayed by LATENCY still confirms leadership (LATENCY + round trip < R).
SLOW = ["--lease-duration", "6s", "--renew-deadline", "4s", "--retry-period", "1s"]
SLOW_D = 6.0
LATENCY = 0.8  # seconds each request of the leader waits in its proxy


@scenario
@real_options(real_only=True)
def sigterm_during_renewal(env):
    """SIGTERM while a renewal is in flight: the release lands after it, another replica leads
    at once (not after D); the Lease history shows renewal, release, next term."""
    rng = random.Random()
    sidecars = env.start_sidecars(3, timings=SLOW)
    history = start_history(env)
    leader = the_leader(sidecars, timeout=SLOW_D + 5)
    conclusive = rounds = 0
    handovers = []
    try:
        with Observer(sidecars) as obs:
            while conclusive < 3 and rounds < 6:
                rounds += 1
                time.sleep(1.5)
                proxy = env.proxy(leader.name)
                env.set_latency(leader.name, LATENCY, "up")
                time.sleep(2.5)  # renewals now land LATENCY late; leadership holds (< R)
                check(leader.leader(), "a renewal delayed by LATENCY still confirms leadership")
                token = leader.status()["fencingToken"]
                # Wait for the next renewal to be held in the proxy, then signal at a random
                # point of its flight.
                wait_for("a renewal in flight", lambda: proxy.in_flight() > 0, 5, interval=0.002)
                time.sleep(rng.uniform(0, LATENCY * 0.7))
                in_flight = proxy.in_flight() > 0
                t_sig = time.time()
                leader.signal(signal.SIGTERM)
                rc = leader.wait(15)
                exited = time.time() - t_sig
                check(rc == 0, f"exit code {rc} after SIGTERM")
                new = the_leader([s for s in sidecars if s is not leader], timeout=SLOW_D + 5)
                took = time.time() - t_sig
                handovers.append(took)
                time.sleep(0.3)
                # What the server applied around the signal, from the Lease's history.
                recs = [(t, spec) for t, kind, rv, spec in history.records]
                after = [(t, spec) for t, spec in recs if t > t_sig]
                applied_renewal = [
                    (t, spec) for t, spec in after
                    if spec.get("holderIdentity") == leader.name and spec.get("renewTime")
                    and epoch(spec["renewTime"]) < t_sig]
                releases = [(t, spec) for t, spec in after if not spec.get("holderIdentity")]
                check(releases, f"round {rounds}: no release in the Lease history after SIGTERM "
                                f"(the release lost; the others waited {took:.2f}s)")
                t_rel, rel = releases[0]
                check(rel.get("leaseTransitions") == token,
                      f"the release keeps the token: {rel}")
                later_own = [spec for t, spec in after
                             if t > t_rel and spec.get("holderIdentity") == leader.name]
                check(not later_own, f"the old leader wrote after its release: {later_own[:1]}")
                nxt = [spec for t, spec in after if t > t_rel and spec.get("holderIdentity")]
                check(nxt and nxt[0]["holderIdentity"] == new.name and
                      nxt[0]["leaseTransitions"] == token + 1,
                      f"the next term follows the release with token + 1: {nxt[:1]}")
                was = "conclusive" if applied_renewal else "no renewal was applied after it"
                if applied_renewal:
                    conclusive += 1
                    t_applied, spec = applied_renewal[-1]
                    sent = t_sig - epoch(spec["renewTime"])
                    was += (f": a renewal sent {sent:.3f}s before the signal landed "
                            f"{t_applied - t_sig:.3f}s after it, the release "
                            f"{t_rel - t_sig:.3f}s after it")
                log(f"round {rounds}: SIGTERM with {'a' if in_flight else 'no'} request in "
                    f"flight; exited after {exited:.3f}s, {new.name} leads {took:.3f}s after "
                    f"the signal (D={SLOW_D}s); {was}")
                bound = 2 * LATENCY + 1.5
                check(took < bound, f"the handover took {took:.3f}s: more than the delayed "
                                    f"renewal and the delayed release ({bound:.1f}s)")
                env.set_latency(leader.name, 0)
                leader.start()  # a new incarnation rejoins as a follower
                leader = new
        obs.check_safety()
    finally:
        stop_history(history)
    history_checks(history)
    log(f"{rounds} rounds, {conclusive} with the renewal applied after SIGTERM; handovers "
        f"{', '.join(f'{x:.2f}' for x in handovers)} s (D={SLOW_D}s)")
    check(conclusive >= 2, f"only {conclusive} of {rounds} rounds had a renewal land after "
                           "the signal: the race was not exercised")


# Restarts take seconds (more on a loaded machine): the timings must outlast them.
LONG = ["--lease-duration", "60s", "--renew-deadline", "45s", "--retry-period", "2s"]
LONG_P = 2.0


@scenario
@real_options(real_only=True)
def apiserver_restart(env):
    """kube-apiserver restarted (SIGTERM, then kill -9) under a steady leader: it never stops
    leading, same token, no new term; the followers see a release within one poll after."""
    sidecars = env.start_sidecars(3, timings=LONG)
    leader = the_leader(sidecars, timeout=15)
    time.sleep(2)
    before = env.lease()["spec"]
    token = leader.status()["fencingToken"]
    with Observer(sidecars) as obs:
        for sig in ("TERM", "KILL"):
            t0 = t_restart = time.time()
            env.plane.restart("apiserver", sig)
            back = time.time()
            log(f"kube-apiserver restarted ({sig}): ready again after {back - t0:.1f}s")
            check(back - t0 < 40, f"the restart took {back - t0:.1f}s: too close to R=45s")
            # The leader's next renewals go through the new process.
            wait_for("a renewal after the restart",
                     lambda: epoch(env.lease()["spec"]["renewTime"]) > back, 10,
                     interval=0.2)
            st = leader.status()
            check(st["leader"] and st["fencingToken"] == token, f"still the same term: {st}")
        time.sleep(1)
    obs.check_safety()
    after = env.lease()["spec"]
    for k in ("holderIdentity", "acquireTime", "leaseTransitions"):
        check(before.get(k) == after.get(k), f"{k} changed: {before.get(k)} -> {after.get(k)}")
    mine = [st for t0, t1, who, st in obs.samples if who.startswith(leader.name)]
    answered = [st for st in mine if st and "exited" not in st]
    check(answered and all(st["leader"] for st in answered),
          f"the leader answered leader=false {sum(1 for st in answered if not st['leader'])} "
          "times during the restarts")
    others = [st for t0, t1, who, st in obs.samples if not who.startswith(leader.name)
              and st and st.get("leader")]
    check(not others, f"a follower claimed during the restarts: {others[:1]}")
    log(f"{len(answered)} answers of the leader, all leader=true, token {token}")
    # The followers follow the restarted apiserver again: a release is seen within one poll.
    # (A kube-apiserver refuses watches with 403 until its RBAC cache has synced; the sidecar
    # polls every P..2.2P meanwhile and retries its watch after 1 s, 2 s, 4 s ...)
    followers = [s for s in sidecars if s is not leader]
    time.sleep(2)
    polling = [f.name for f in followers if any(
        l.get("msg") == "API request refused" and l.get("verb") == "watch"
        and epoch(l["ts"]) > t_restart for l in f.log_lines())]
    t0 = time.monotonic()
    leader.signal(signal.SIGTERM)
    new = the_leader(followers, timeout=2.2 * LONG_P + 3)
    took = time.monotonic() - t0
    log(f"SIGTERM handover after the restarts: {took * 1000:.0f} ms; "
        + (f"{', '.join(polling)} polling (watch refused with 403 while the apiserver started)"
           if polling else "the followers watching"))
    check(took < 2.2 * LONG_P + 0.5, f"handover took {took:.3f}s: more than one poll interval")
    check(new.status()["fencingToken"] == token + 1, "token + 1")


PAUSE = R + 2 * D  # etcd stays stopped this long


@scenario
@real_options(real_only=True)
def etcd_pause(env):
    """etcd SIGSTOPped for R + 2D: the leader stops claiming by R after its last renewal,
    nobody leads while etcd is stopped, one leader again after SIGCONT."""
    sidecars, leader = env.start_sidecars(3), None
    leader = the_leader(sidecars, timeout=D + P + 5)
    with Observer(sidecars) as obs:
        time.sleep(1)
        t_pause = time.time()
        env.plane.pause("etcd")
        try:
            wait_for("the leader to stop claiming", lambda: not leader.leader(), R + 2)
            time.sleep(max(0.0, t_pause + PAUSE - time.time()))
        finally:
            env.plane.resume("etcd")
        t_resume = time.time()
        new = the_leader(sidecars, timeout=D + P + 15)
        back = time.time() - t_resume
        time.sleep(1)
    obs.check_safety()
    mine = sorted((s for s in obs.samples if s[2].startswith(leader.name)), key=lambda x: x[0])
    last_true = [s for s in mine if s[3] and s[3].get("leader") and s[0] < t_pause + R + 2]
    check(last_true, "no leader=true answer before the pause")
    t0, t1, _, st = last_true[-1]
    first_false = next(s for s in mine if s[0] > t1 and s[3] is not None)
    renewed = epoch(st["renewTime"])
    valid = epoch(st["validUntil"])
    stepped = first_false[0] - renewed  # the false answer was asked for then (or later)
    log(f"etcd stopped at +0; last renewal sent {renewed - t_pause:+.3f}s, validUntil "
        f"{valid - t_pause:+.3f}s, first leader=false answer {first_false[1] - t_pause:+.3f}s: "
        f"stopped claiming {stepped:.3f}s after its last renewal (R={R}s)")
    check(abs(valid - renewed - R) < 0.01, f"validUntil is the last renewal + R: {st}")
    check(t0 <= valid + 0.001, f"an answer leader=true asked after its validUntil: {st}")
    check(stepped <= R + 0.25, f"still leader {stepped:.3f}s after its last renewal")
    during = [s for s in obs.samples if first_false[1] <= s[0] and s[1] <= t_resume
              and s[3] and s[3].get("leader")]
    check(not during, f"somebody claimed while etcd was stopped: {during[:1]}")
    log(f"nobody led from +{first_false[1] - t_pause:.3f}s until etcd resumed at "
        f"+{t_resume - t_pause:.3f}s; {new.name} (token {new.status()['fencingToken']}) leads "
        f"{back:.3f}s after SIGCONT")


@scenario
@real_options(real_only=True, allow_forbidden=True)
def rbac_is_enforced(env):
    """The 403 check can fail: with --pod-label but a chart rendered without podLabel (so its
    Role has no pods rule), the audit log shows the refused pod patches, while the election
    itself (leases, events) is allowed."""
    env.create_pods(["replica-0"])
    s = env.sidecar("replica-0", extra_args=["--pod-label", "leasehold.io/leader"],
                    env_vars={"POD_NAMESPACE": env.namespace})
    s.start()
    the_leader([s], timeout=D + P + 3)
    wait_for("a refused pod request in the audit log",
             lambda: any(e["objectRef"].get("resource") == "pods" for e in env.forbidden()), 10,
             interval=0.2)
    denied = env.forbidden()
    log("refused, as the chart's Role says: " + "; ".join(
        sorted({env.describe_event(e).split(" (")[0] for e in denied})))
    check(all(e["objectRef"].get("resource") == "pods" for e in denied),
          f"only the pod label was refused: {[env.describe_event(e) for e in denied]}")
    check(any(l.get("msg") == "API request refused" for l in s.log_lines()),
          "the sidecar logged the 403")
    check(s.leader(), "leadership does not depend on the label")


if __name__ == "__main__":
    sys.exit(run_scenarios(SCENARIOS))
