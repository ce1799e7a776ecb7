#!/usr/bin/env python3
"""--fast-failover on the real kube-apiserver (ctest label `real`), the kubelet played by the
test: Pod objects that no node runs (tests/realkube has no kubelet here; deploy.node_failover
has one), whose status the test writes through the status subresource as the admin, as a kubelet
reports a container's exit. The sidecars run here as processes with POD_NAME, POD_UID and
LEASEHOLD_CONTAINER naming their pod's container, under the chart's Role with fastFailover
(get/list/watch on pods).

    failover_scenarios.py --sidecar BIN --real SCENARIO...   (or `all`, or --list)

exit_proven       kill -9 of the leader; nobody takes over while its pod still says nothing;
                  once its status says the container terminated (after the term began), another
                  replica leads at once: sooner than the Lease could expire, token + 1
restart_in_place  kill -9 of the leader, and a new process started in its "container" (same
                  POD_UID and LEASEHOLD_CONTAINER, a new identity): it takes the Lease at once,
                  with no word from the kubelet (a container runs one instance at a time)
never_proof       kill -9 of the leader, then reports that prove nothing, one after the other:
                  a terminated record older than the term (a status not updated since a restart),
                  an exit with reason ContainerStatusUnknown, the pod being deleted (a finalizer
                  holds it) with a fresh exit, then the pod object gone (a forced delete): nobody
                  leads before the Lease could expire, somebody after
shared_pid        the pods share their process namespace (shareProcessNamespace): an exit
                  reported after kill -9 is no proof; nobody leads before the Lease could expire
missing_env       --fast-failover without POD_UID and LEASEHOLD_CONTAINER: exit status 2 and a
                  message naming both

Timings: D=6s, R=4.5s, P=0.9s (three times the other scenarios': the fast path's watch event,
judgement and compare-and-swap must be told apart from an expiry on a loaded machine), times
LEASEHOLD_TEST_SLOWDOWN. Observer.check_safety on every run: no two claims overlap.
"""
import json
import signal
import sys
import time

from leasehold_testing import Observer, check, log, real_options, run_scenarios, the_leader, wait_for
from leasehold_testing.fast_failover import CHART, CONTAINER, create_pods, pod_env
from leasehold_testing.kube_time import epoch
from leasehold_testing.timings import duration_flag, scaled, slack

SCENARIOS = {}
D, R, P = scaled(6.0), scaled(4.5), scaled(0.9)
TIMINGS = ["--lease-duration", duration_flag(D), "--renew-deadline", duration_flag(R),
           "--retry-period", duration_flag(P)]


def scenario(fn):
    SCENARIOS[fn.__name__] = real_options(real_only=True, chart_values=CHART)(fn)
    return fn


def fast_sidecar(env, name, pod, uid, **kw):
    """A --fast-failover sidecar NAME in the container `leasehold` of POD (UID uid)."""
    return env.sidecar(name, extra_args=["--fast-failover"], timings=TIMINGS,
                       env_vars=pod_env(env, pod, uid), **kw)


def start(env, uids):
    sidecars = [fast_sidecar(env, n, n, uid) for n, uid in uids.items()]
    for s in sidecars:
        s.start()
    leader = the_leader(sidecars, timeout=D + P + slack(3))
    return sidecars, leader


def report_exit(env, pod, finished_at, reason="Error"):
    """What a kubelet writes when the container exits: state.terminated."""
    env.kubectl("patch", "pod", pod, "-n", env.namespace, "--subresource=status", "--type=merge",
                "-p", json.dumps({"status": {"phase": "Running", "containerStatuses": [{
                    "name": CONTAINER, "image": "registry.example.com/leasehold:1",
                    "imageID": "", "ready": False, "restartCount": 0,
                    "state": {"terminated": {"exitCode": 137, "reason": reason,
                                             "startedAt": "2026-01-01T00:00:00Z",
                                             "finishedAt": finished_at}}}]}}))


def rfc3339(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def kill_leader(sidecars, leader):
    """kill -9 of the leader once its term is over a second old (a terminated record's
    finishedAt has whole seconds); (the kill's time, its token, its acquireTime)."""
    st = leader.status()
    wait_for("the term to be more than a second old",
             lambda: time.time() - epoch(st["acquireTime"]) > 1.1, 3, interval=0.05)
    t0 = time.time()
    leader.signal(signal.SIGKILL)
    leader.wait(5)
    return t0, st["fencingToken"], epoch(st["acquireTime"])


def first_new_leader(sidecars, leader, token, timeout):
    """(seconds since `t`, the new leader) of the first live sidecar that says leader with a
    higher token."""
    def found():
        for s in sidecars:
            if s is leader or not s.alive():
                continue
            st = s.status()
            if st and st["leader"] and st["fencingToken"] > token:
                return s, st
        return None
    return wait_for("a new leader", found, timeout, interval=0.01)


@scenario
def exit_proven(env):
    uids = create_pods(env, [f"replica-{i}" for i in range(3)])
    sidecars, leader = start(env, uids)
    lease = env.lease()
    want = f"{uids[leader.name]}/{CONTAINER}/{leader.name}"
    check(lease["metadata"]["annotations"].get("leasehold.io/holder-process") == want,
          f"leasehold.io/holder-process: {lease['metadata'].get('annotations')}, want {want}")
    with Observer(sidecars) as obs:
        t0, token, _ = kill_leader(sidecars, leader)
        time.sleep(slack(0.5))  # the kubelet has not seen it yet: nothing proves the exit
        check(not any(s.leader() for s in sidecars if s is not leader),
              "a takeover before the kubelet reported the exit")
        t1 = time.time()
        report_exit(env, leader.name, rfc3339(t1))
        new, st = first_new_leader(sidecars, leader, token, D + P + slack(3))
        took, after_report = time.time() - t0, time.time() - t1
        check(took < D - P, f"the next term {took:.2f}s after the kill: not sooner than the "
                            f"Lease could expire (D - P = {D - P:.1f}s)")
        check(st["fencingToken"] == token + 1, f"token {token} -> {st['fencingToken']}")
        lines = [l.get("detail", "") for l in new.log_lines() if l.get("msg") == "became leader"]
        check(any("before the lease expired: container leasehold of pod " + leader.name in l
                  for l in lines), f"{new.name} did not say why it took over early: {lines}")
        log(f"kill -9, then the exit reported: {new.name} leads {after_report:.3f}s after the "
            f"report, {took:.2f}s after the kill (D = {D:.0f}s), token {st['fencingToken']}")
    obs.check_safety()


@scenario
def restart_in_place(env):
    uids = create_pods(env, [f"replica-{i}" for i in range(3)])
    sidecars, leader = start(env, uids)
    with Observer(sidecars) as obs:
        t0, token, _ = kill_leader(sidecars, leader)
        again = fast_sidecar(env, leader.name + "-restarted", leader.name, uids[leader.name],
                             user=leader.name)
        again.start()
        obs.add(again)
        everyone = sidecars + [again]
        new, st = first_new_leader(everyone, leader, token, D + P + slack(3))
        took = time.time() - t0
        check(new is again, f"{new.name} took over, not the restarted process")
        check(took < D - P, f"the restarted process led {took:.2f}s after the kill: not sooner "
                            f"than the Lease could expire (D - P = {D - P:.1f}s)")
        check(st["fencingToken"] == token + 1, f"token {token} -> {st['fencingToken']}")
        log(f"kill -9, then a new process in the holder's container: it leads {took:.2f}s "
            f"after the kill (D = {D:.0f}s), token {st['fencingToken']}")
    obs.check_safety()


def wait_out(sidecars, leader, t0, token, what):
    """Nobody leads before the Lease could expire (D - P after the kill); somebody after."""
    new, st = first_new_leader(sidecars, leader, token, D + P + slack(3))
    took = time.time() - t0
    check(took >= D - P - slack(0.05), f"{new.name} led {took:.2f}s after the kill despite "
                                         f"{what}: before the Lease could expire")
    return new, st, took


@scenario
def never_proof(env):
    uids = create_pods(env, [f"replica-{i}" for i in range(3)])
    sidecars, leader = start(env, uids)
    with Observer(sidecars) as obs:
        t0, token, acquired = kill_leader(sidecars, leader)
        # A record from before the term: an earlier instance's exit, not yet replaced.
        report_exit(env, leader.name, rfc3339(acquired - 60))
        time.sleep(slack(0.3))
        # An exit the kubelet did not see (it invents ContainerStatusUnknown).
        report_exit(env, leader.name, rfc3339(time.time()), reason="ContainerStatusUnknown")
        time.sleep(slack(0.3))
        # The pod being deleted (a finalizer keeps the object): its processes run through the
        # grace period, whatever the status says.
        env.kubectl("patch", "pod", leader.name, "-n", env.namespace, "--type=merge", "-p",
                    json.dumps({"metadata": {"finalizers": ["leasehold.io/test"]}}))
        env.kubectl("delete", "pod", leader.name, "-n", env.namespace, "--wait=false")
        report_exit(env, leader.name, rfc3339(time.time()))
        time.sleep(slack(0.3))
        # Then gone (as after a forced delete): no pod is no proof.
        env.kubectl("patch", "pod", leader.name, "-n", env.namespace, "--type=merge", "-p",
                    json.dumps({"metadata": {"finalizers": None}}))
        new, st, took = wait_out(sidecars, leader, t0, token,
                                 "a stale record, ContainerStatusUnknown, a pod being deleted "
                                 "and a pod gone")
        check(time.time() - t0 > D - P, "the reports took longer than the Lease")
        said = " ".join(l.get("why", "") for s in sidecars if s is not leader
                        for l in s.log_lines() if l.get("msg") == "fast failover: no proof yet")
        for reason in ("older than the holder's term", "ContainerStatusUnknown",
                       "being deleted", "a pod object gone is no proof"):
            check(reason in said, f"no follower said {reason!r}: {said[-2000:]}")
        log(f"kill -9 and four reports that prove nothing: {new.name} leads {took:.2f}s after "
            f"the kill, on expiry (D = {D:.0f}s), token {st['fencingToken']}; the followers said "
            "why each was no proof")
    obs.check_safety()


@scenario
def shared_pid(env):
    uids = create_pods(env, [f"replica-{i}" for i in range(3)], shared=True)
    sidecars, leader = start(env, uids)
    with Observer(sidecars) as obs:
        t0, token, _ = kill_leader(sidecars, leader)
        report_exit(env, leader.name, rfc3339(time.time()))
        new, st, took = wait_out(sidecars, leader, t0, token, "shareProcessNamespace")
        log(f"kill -9 in a pod with shareProcessNamespace, the exit reported: {new.name} leads "
            f"{took:.2f}s after the kill, on expiry (D = {D:.0f}s)")
    obs.check_safety()


@scenario
def missing_env(env):
    s = env.sidecar("replica-0", extra_args=["--fast-failover"], timings=TIMINGS)
    s.start(wait=False)
    rc = s.wait(10)
    out = s.log_path.read_text()
    check(rc == 2 and "--fast-failover needs POD_NAME and POD_UID" in out
          and "not set: POD_UID, LEASEHOLD_CONTAINER" in out, f"exit {rc}: {out[-600:]}")
    log(f"--fast-failover without POD_UID and LEASEHOLD_CONTAINER: exit {rc}, "
        f"{out.strip().splitlines()[-1]}")


if __name__ == "__main__":
    sys.exit(run_scenarios(SCENARIOS))
