"""The election scenarios every store must pass, written once (the `store` fixture, conftest.py
and leasehold_testing.stores, says where they run): the first leader, kill -9, SIGTERM, SIGSTOP
for 2 D, the leader cut off from its store, and bad input common to stores. What differs from
store to store (bounds, the first token, the store's own record, how to cut a sidecar off) is
the Store's; a scenario never asks which store it runs on.

Timings are the library's scaled D, R, P (leasehold_testing.timings; LEASEHOLD_TEST_SLOWDOWN
stretches them); every bound is derived from them and slack(). Each scenario but bad_input
samples every sidecar's /leader (Observer): no two claims overlap, fencing tokens only go up.
Store-specific scenarios stay in tests/integration (scenarios.py, etcd_scenarios.py).
"""
import signal
import time

from leasehold_testing import D, P, R, Observer, check, check_took, log, the_leader, wait_for
from leasehold_testing.sidecar import keeps_running_not_leading
from leasehold_testing.timings import slack

# A time measured around a signal or a cut: the sampling and the signal's delivery.
MEASURED = slack(0.05)


def start(store, n=3, **kw):
    sidecars = store.start(n, **kw)
    t0 = time.monotonic()
    leader = the_leader(sidecars, timeout=store.first_leader)
    log(f"leader {leader.name} after {time.monotonic() - t0:.2f}s")
    return sidecars, leader


def safety(obs):
    terms = obs.check_safety()
    log(f"{len(obs.samples)} samples, terms (incarnation, token): "
        f"{[(t[2], t[3]) for t in terms]}")
    return terms


def check_token_up(store, before, new):
    token = new.status()["fencingToken"]
    check(token > before, f"token went up: {before} -> {token}")
    if store.consecutive_tokens:
        check(token == before + 1, f"token went up by one: {before} -> {token}")


def test_first_leader(store):
    """3 sidecars: exactly one leads; all agree on holder and token (the store's first); /leader
    names the store; the store's own record names the holder."""
    sidecars, leader = start(store)
    with Observer(sidecars) as obs:
        time.sleep(3 * P)  # a few renewals under the sampler
        states = {s.name: s.status() for s in sidecars}
        leaders = [n for n, st in states.items() if st["leader"]]
        check(len(leaders) == 1, f"exactly one leader: {states}")
        holders = {st["holder"] for st in states.values()}
        tokens = {st["fencingToken"] for st in states.values()}
        check(holders == set(leaders), f"everybody names {leaders[0]} the holder: {states}")
        check(len(tokens) == 1, f"everybody reports the same token: {states}")
        first = store.first_token()
        check(tokens == {first}, f"the first term has token {first}: {states}")
        for name, st in states.items():
            check(all(st.get(k) == v for k, v in store.scope.items())
                  and st["lease"] == store.lease_name,
                  f"{name}: /leader names {store.scope} and lease {store.lease_name}: {st}")
            if st["leader"]:
                check("validUntil" in st, f"validUntil while leader: {st}")
                check(st["name"] == name, f"name from the holder's record: {st}")
                if store.holder_address:
                    check(st.get("holderAddress") == store.holder_address,
                          f"holderAddress from the holder's record: {st}")
            else:
                check("validUntil" not in st, f"{name}: {st}")
        store.check_record(leader, sidecars)
    safety(obs)


def test_kill9(store):
    """kill -9 of the leader: nobody leads before the store can have expired its claim;
    somebody does by the store's bound, with a higher token."""
    sidecars, leader = start(store)
    with Observer(sidecars) as obs:
        token = leader.status()["fencingToken"]
        time.sleep(2 * P)
        t0 = time.time()
        leader.kill()
        others = [s for s in sidecars if s is not leader]
        new = the_leader(others, timeout=store.latest_takeover)
        t1 = time.time()
        log(f"kill -9 takeover: {t1 - t0:.3f}s (D={D}s, P={P}s)")
        # The last renewal came at most P before the kill: the claim lives D after it.
        check_took(t0, t1, store.latest_takeover, "kill -9 takeover",
                   least=store.earliest_takeover - MEASURED)
        check_token_up(store, token, new)
        time.sleep(2 * P)
    safety(obs)


def test_sigterm(store):
    """SIGTERM of the leader: it releases, exits 0; another leads at once (no expiry) with a
    higher token; the old leader's last leader=true comes before the new one's first."""
    sidecars, leader = start(store)
    with Observer(sidecars) as obs:
        token = leader.status()["fencingToken"]
        time.sleep(2 * P)
        t0 = time.time()
        leader.signal(signal.SIGTERM)
        others = [s for s in sidecars if s is not leader]
        new = the_leader(others, timeout=store.handover + slack(1.5))
        t1 = time.time()
        rc = leader.wait(timeout=slack(10))
        check(rc == 0, f"exit code {rc}")
        log(f"SIGTERM handover: {(t1 - t0) * 1000:.0f} ms")
        check_took(t0, t1, store.handover, "SIGTERM handover")
        check_token_up(store, token, new)
        time.sleep(2 * P)
    safety(obs)
    # safety() checked every claim for overlap; here the order itself: the old leader's last
    # answer leader=true was sent before the new leader's first.
    def trues(who):
        return [t for t, _, inc, st in obs.samples
                if inc.startswith(who + "#") and st and st.get("leader")]
    old_last, new_first = max(trues(leader.name)), min(trues(new.name))
    check(old_last < new_first, f"{leader.name} answered leader=true at {old_last:.3f}, after "
          f"{new.name}'s first leader=true at {new_first:.3f}")
    log(f"{leader.name}'s last leader=true {(new_first - old_last) * 1000:.0f} ms before "
        f"{new.name}'s first")
    msgs = [line.get("msg") for line in leader.log_lines()]
    check("released the lease" in msgs, f"release logged: {msgs[-6:]}")


def test_sigstop(store):
    """SIGSTOP of the leader for 2 D: another takes over; on SIGCONT the old one's first answer
    is leader=false, and it follows the new leader; claims never overlap."""
    sidecars, leader = start(store)
    with Observer(sidecars) as obs:
        token = leader.status()["fencingToken"]
        time.sleep(2 * P)
        t0 = time.monotonic()
        leader.signal(signal.SIGSTOP)
        others = [s for s in sidecars if s is not leader]
        new = the_leader(others, timeout=store.latest_takeover)
        log(f"takeover from the stopped leader after {time.monotonic() - t0:.3f}s")
        time.sleep(max(0.0, 2 * D - (time.monotonic() - t0)))
        leader.signal(signal.SIGCONT)
        first = wait_for("the woken leader to answer", leader.status, slack(5), interval=0.001)
        check(not first["leader"], f"first answer after SIGCONT must be leader=false: {first}")

        # A wait, not a sleep: on a starved machine the new leader's own renewal may lapse
        # meanwhile (then the sampler's safety check still holds every claim to account).
        def follows():
            st, new_st = leader.status(), new.status()
            return (st and new_st and not st["leader"] and new_st["leader"]
                    and st["holder"] == new.name)
        wait_for(f"{leader.name} to follow {new.name}", follows, store.follows_after_wake)
        check_token_up(store, token, new)
    safety(obs)


def test_partition(store):
    """The leader cut off from its store: it stops claiming by R after its last renewal; nobody
    else leads before its claim can have expired in the store (D - P after the cut), somebody
    does by the store's bound; healed, the old leader follows. The forced step-down is logged
    at warn."""
    sidecars, leader = start(store, partitionable=True)
    others = [s for s in sidecars if s is not leader]
    with Observer(sidecars) as obs:
        token = leader.status()["fencingToken"]
        time.sleep(2 * P)
        t0 = time.time()
        store.partition(leader)
        wait_for(f"{leader.name} to stop claiming", lambda: not leader.leader(), R + slack(1))
        stepped = time.time()
        log(f"{leader.name} stopped claiming {stepped - t0:.3f}s after the cut (R={R}s)")
        check_took(t0, stepped, R + slack(0.1), "must stop claiming within R of its last renewal")
        new = the_leader(others, store.latest_takeover)
        t1 = time.time()
        log(f"{new.name} leads {t1 - t0:.2f}s after the cut (D={D}s)")
        check_took(t0, t1, store.latest_takeover, "takeover after the cut",
                   least=store.earliest_takeover - MEASURED)
        check_token_up(store, token, new)
        store.heal(leader)

        def follows():
            st, new_st = leader.status(), new.status()
            return (st and new_st and not st["leader"] and new_st["leader"]
                    and st["holder"] == new.name)
        wait_for(f"{leader.name} to follow {new.name} after the heal", follows,
                 store.follows_after_heal)
        time.sleep(2 * P)
    safety(obs)
    stops = [line.get("level") for line in leader.log_lines()
             if line.get("msg") == "stopped leading"]
    check(stops[:1] == ["warn"], f"a forced step-down is logged at warn: {stops}")


def test_bad_input(store):
    """Bad flags or a bad config file: exit non-zero, the message naming the problem. The store
    unreachable: the sidecar runs on, leads nothing and says why, naming the address."""
    for args, needle in store.bad_args():
        r = store.run_bad(args)
        check(r.returncode != 0, f"{args}: exit 0")
        check(needle in r.stderr, f"{args}: message should name {needle!r}: {r.stderr!r}")
        lines = r.stderr.strip().splitlines()
        log(f"... {' '.join(args[-2:])} -> {r.returncode}: {lines[0] if lines else ''}")
    # How long a problem takes to show: a request deadline (R/2 in the product) and a retry P.
    s, words = store.unreachable("unreachable")
    keeps_running_not_leading(s, words, R + P + slack(2))
