#!/usr/bin/env python3
"""Integration scenarios for what the main container and the operator see (issue 4):
the event stream, release, the status file, probes and metrics, Events on the Lease, the pod
label, configuration and the logs.

    publish_scenarios.py --sidecar BIN (--apiserver BIN | --real) SCENARIO...
                         (or `all`, or --list)

Same harness and scaled timings as scenarios.py (D=2s, R=1.5s, P=0.3s); --real as there. Each
scenario prints what it measured.

Why ~700 lines in one file: it is a list of ten independent scenarios (20-90 lines each, one
ctest entry each) about one subject, what the sidecar publishes; the code they share (the SSE
client, the metrics parser, the processes) is in leasehold_testing, so the length grows with the
number of scenarios, not with what a reader must hold in mind at once.
"""
import json
import re
import signal
import subprocess
import sys
import time

from leasehold_testing import (D, P, R, Observer, check, free_port, http_get, http_request,
                               log, real_options, run_scenarios, the_leader, wait_for)
from leasehold_testing.event_stream import SseClient
from leasehold_testing.kube_time import epoch
from leasehold_testing.metrics import parse as parse_metrics
from leasehold_testing.timings import slack
from scenarios import start

SCENARIOS = {}
SERVER_ARGS = {}  # scenario -> extra test API server flags


def scenario(server_args=()):
    def register(fn):
        SCENARIOS[fn.__name__] = fn
        SERVER_ARGS[fn.__name__] = list(server_args)
        return fn
    return register


# ---- GET /leader/watch ------------------------------------------------------------------------

@scenario()
def watch_stream(env):
    """SSE: state on connect, no events for renewals, timer-driven leader=false, handovers,
    keep-alive every 15 s."""
    sidecars, leader = start(env)
    streams = {s.name: SseClient(s.port) for s in sidecars}
    for s in sidecars:
        c = streams[s.name]
        t, first = c.wait_event(f"{s.name}: state on connect", lambda e: True, 2)
        check(c.status_line.startswith("HTTP/1.1 200"), f"status {c.status_line}")
        check(c.headers.get("content-type") == "text/event-stream", f"headers {c.headers}")
        now = s.status()
        check(first["leader"] == now["leader"] and first["holder"] == leader.name and
              first["fencingToken"] == now["fencingToken"], f"{s.name}: {first} vs {now}")
        check(set(first) == set(now), f"same fields as /leader: {sorted(first)} {sorted(now)}")
        log(f"{s.name}: first event {1000 * (t - c.opened_at):.1f} ms after connecting")
    code, _ = http_request(leader.port, "POST", "/leader/watch")
    check(code == 405, f"POST /leader/watch: {code}")

    time.sleep(2)  # ~6 renewals
    for name, c in streams.items():
        check(len(c.snapshot()) == 1, f"{name}: renewals must not be events: {c.snapshot()}")

    with Observer(sidecars) as obs:
        token = leader.status()["fencingToken"]
        t0 = time.time()
        env.partition(leader.name)
        t1, ev = streams[leader.name].wait_event(
            "leader=false on the partitioned leader's stream", lambda e: not e["leader"], R + 1)
        log(f"partitioned leader's stream said leader=false {t1 - t0:.3f}s after the partition "
            f"(R={R}s; no API event reached it)")
        check(t1 - t0 <= R + 0.15, f"must be published by the renew deadline: {t1 - t0:.3f}s")
        check("validUntil" not in ev, f"no validUntil when not leader: {ev}")
        others = [s for s in sidecars if s is not leader]
        new = the_leader(others, timeout=D + P + 3)
        t2, ev = streams[new.name].wait_event("the new leader's own stream says leader=true",
                                              lambda e: e["leader"], 2)
        check(ev["fencingToken"] == token + 1 and ev["holder"] == new.name, f"{ev}")
        log(f"new leader's stream: leader=true {t2 - t0:.3f}s after the partition (D={D}s)")
        third = [s for s in others if s is not new][0]
        t3, ev = streams[third.name].wait_event("the follower's stream names the new holder",
                                                lambda e: e["holder"] == new.name, 2)
        check(not ev["leader"] and ev["fencingToken"] == token + 1, f"{ev}")
        env.heal(leader.name)
        streams[leader.name].wait_event("the healed replica's stream names the new holder",
                                        lambda e: e["holder"] == new.name, 5)

        # Graceful handover: SIGTERM the new leader, the stream of whoever follows says so.
        n_before = {name: len(c.snapshot()) for name, c in streams.items()}
        t4 = time.time()
        new.signal(signal.SIGTERM)
        candidates = [s for s in sidecars if s is not new]
        winner_event = None
        deadline = time.time() + 3
        while winner_event is None and time.time() < deadline:
            for s in candidates:
                for t, e in streams[s.name].snapshot()[n_before[s.name]:]:
                    if e["leader"]:
                        winner_event = (t, s, e)
            time.sleep(0.002)
        check(winner_event is not None, "a stream announced the next leader after SIGTERM")
        t5, winner, e = winner_event
        log(f"SSE handover after SIGTERM: {1000 * (t5 - t4):.0f} ms "
            f"({winner.name}, token {e['fencingToken']})")
        check(t5 - t4 < 1.0, f"graceful handover through the stream took {t5 - t4:.3f}s")
        check(new.wait(10) == 0, "clean exit")
        gone = streams[new.name]
        wait_for("the stopped sidecar's stream to close", lambda: gone.closed_at, 5)
        last = gone.snapshot()[-1][1]
        check(not last["leader"], f"the stopping leader said leader=false before closing: {last}")
    obs.check_safety()

    # Keep-alive: the first comment 15 s after connecting, then every 15 s.
    survivor = streams[winner.name]
    wait_for("a keep-alive comment", lambda: survivor.comments, 17 - (time.time() -
                                                                     survivor.opened_at))
    tk, text = survivor.comments[0]
    log(f"first keep-alive {tk - survivor.opened_at:.2f}s after connecting: ': {text}'")
    check(14.5 <= tk - survivor.opened_at <= 16.0, "keep-alive every 15 s")
    check(survivor.closed_at is None, "the stream is still open")
    for c in streams.values():
        c.close()


# ---- POST /leader/release ---------------------------------------------------------------------

@scenario()
def release(env):
    """POST /leader/release: stop claiming at once, hand over, stay away for the cooldown."""
    cooldown = 4.0
    sidecars, a = start(env, n=2, extra_args=["--release-cooldown", "4s"])
    b = [s for s in sidecars if s is not a][0]
    for method, path, want in (("GET", "/leader/release", 405), ("PUT", "/leader/release", 405),
                               ("POST", "/leader", 405), ("GET", "/nope", 404),
                               ("POST", "/nope", 404)):
        code, _ = http_request(a.port, method, path)
        check(code == want, f"{method} {path}: {code}, want {want}")
    with Observer(sidecars) as obs:
        token = a.status()["fencingToken"]
        ta = time.time()
        code, body = http_request(a.port, "POST", "/leader/release")
        after = a.status()
        check(code == 202, f"release answered {code} {body}")
        check(json.loads(body) == {"wasLeader": True, "cooldown": "4s"}, body)
        check(not after["leader"], f"leader=false as soon as the release is answered: {after}")
        wait_for("b to take over", b.leader, 2, interval=0.002)
        took = time.time() - ta
        log(f"handover after POST /leader/release: {took * 1000:.0f} ms")
        check(took < 1.0, f"release hands over at once: {took:.3f}s")
        check(b.status()["fencingToken"] == token + 1, "token +1")

        # b steps aside too: a is still cooling down, so nobody may lead until a's cooldown ends.
        # A second after a's release, so that a's cooldown ends well before b's: released at
        # once, b's would end a few ms after a's, and which of the two takes the Lease back
        # first (a read, then a compare-and-swap each) would be a race the test cannot call.
        time.sleep(max(0.0, ta + 1.0 - time.time()))
        tb = time.time()
        code, body = http_request(b.port, "POST", "/leader/release")
        check(code == 202 and json.loads(body)["wasLeader"], body)
        leaders_during = []
        while time.time() < ta + cooldown - 0.2:
            leaders_during += [s.name for s in sidecars if s.leader()]
            time.sleep(0.02)
        check(not leaders_during, f"nobody leads while both cool down: {set(leaders_during)}")
        wait_for("a to lead again after its cooldown", a.leader, 2, interval=0.005)
        back = time.time() - ta
        log(f"a competed again {back:.2f}s after its release (cooldown {cooldown}s); "
            f"b released at +{tb - ta:.2f}s")
        check(cooldown - 0.1 <= back <= cooldown + 1.0, f"a came back after {back:.2f}s")
        # A follower's release: it was not leading, and it stays out for its cooldown too.
        code, body = http_request(b.port, "POST", "/leader/release")
        check(code == 202 and json.loads(body)["wasLeader"] is False, body)
        check(a.leader(), "the leader is unaffected by a follower's release")
    obs.check_safety()
    msgs = [l.get("msg") for l in a.log_lines()]
    check("release requested: stepping aside" in msgs and "released the lease" in msgs,
          f"release logged: {msgs}")
    stops = [l.get("level") for l in a.log_lines() if l.get("msg") == "stopped leading"]
    check(stops and set(stops) == {"info"}, f"an asked-for step-down is logged at info: {stops}")


# ---- --status-file ----------------------------------------------------------------------------

@scenario()
def status_file(env):
    """--status-file: /leader's JSON, atomic, every renewal, leader=false on SIGTERM and when
    the deadline passes; after kill -9 only validUntil protects readers."""
    files = {}

    def with_file(name):
        files[name] = env.dir / f"{name}.status.json"
        return ["--status-file", str(files[name])]
    sidecars = [env.sidecar(f"replica-{i}", extra_args=with_file(f"replica-{i}"))
                for i in range(3)]
    for s in sidecars:
        s.start()
    leader = the_leader(sidecars, timeout=D + P + 3)
    time.sleep(0.3)

    def read(s):
        return json.loads(files[s.name].read_text())
    for s in sidecars:
        st, f = s.status(), read(s)
        check(set(f) == set(st), f"{s.name}: same fields as /leader: {sorted(f)} {sorted(st)}")
        for k in ("leader", "holder", "fencingToken", "identity", "lease", "namespace"):
            check(f[k] == st[k], f"{s.name}: {k}: file {f[k]} vs /leader {st[k]}")
    f = read(leader)
    left = epoch(f["validUntil"]) - time.time()
    log(f"leader's file: validUntil {left:.3f}s in the future")
    check(0 < left <= R + 0.01, f"validUntil within R in the future: {left:.3f}")

    # Every renewal is written: renewTime keeps moving, on the leader and on the followers.
    seen = {s.name: set() for s in sidecars}
    bad = []
    reads = 0
    t_end = time.time() + 2
    while time.time() < t_end:  # also: a reader never sees a partial file
        for s in sidecars:
            text = files[s.name].read_text()
            reads += 1
            try:
                seen[s.name].add(json.loads(text).get("renewTime"))
            except ValueError:
                bad.append(text)
    check(not bad, f"partial or empty reads: {bad[:3]}")
    for name, times in seen.items():
        log(f"{name}: {len(times)} distinct renewTimes in 2 s ({reads} reads in all)")
        check(len(times) >= 4, f"{name}: renewals reach the file (P={P}s): {len(times)}")
    # A temp file exists while a write is in flight (fsync can take a while on a busy machine):
    # only one that stays across half a second of listings was left behind.
    leftovers = None
    for _ in range(10):
        now = {p.name for p in env.dir.iterdir() if ".tmp." in p.name}
        leftovers = now if leftovers is None else leftovers & now
        time.sleep(0.05)
    check(not leftovers, f"temp files left behind: {sorted(leftovers)}")

    # Partition: the leader's file says leader=false by the deadline, with no API event.
    t0 = time.time()
    env.partition(leader.name)
    wait_for("the partitioned leader's file to say leader=false",
             lambda: not read(leader)["leader"], R + 1, interval=0.005)
    log(f"partitioned leader's file: leader=false after {time.time() - t0:.3f}s (R={R}s)")
    check(time.time() - t0 <= R + 0.15, "file updated by the renew deadline")
    env.heal(leader.name)
    new = the_leader(sidecars, timeout=D + P + 5)

    # SIGTERM: rewritten with leader=false on the way out.
    new.signal(signal.SIGTERM)
    check(new.wait(10) == 0, "clean exit")
    f = read(new)
    check(f["leader"] is False and "validUntil" not in f, f"after SIGTERM: {f}")
    rest = [s for s in sidecars if s is not new]
    last = the_leader(rest, timeout=3)

    # kill -9: the file cannot retract itself; validUntil is what protects its readers.
    time.sleep(0.5)
    t_kill = time.time()
    last.signal(signal.SIGKILL)
    last.wait(5)
    f = read(last)
    stale = epoch(f["validUntil"]) - t_kill
    log(f"after kill -9 the file still says leader={f['leader']}, validUntil {stale:.3f}s after "
        f"the kill")
    check(f["leader"] is True, "a killed process cannot retract its file")
    check(stale <= R + 0.01, f"validUntil ends the claim within R of the kill: {stale:.3f}")

    # A status file that cannot be written is an error at start.
    r = subprocess.run([env.sidecar_bin, "--lease-name", "x", "--kubeconfig",
                        str(env.kubeconfig_for("admin")), "--http-address",
                        f"127.0.0.1:{free_port()}", "--probe-address",
                        f"127.0.0.1:{free_port()}", "--status-file",
                        str(env.dir / "missing-dir" / "s.json")],
                       capture_output=True, text=True, timeout=10)
    check(r.returncode == 2 and "--status-file" in r.stderr, f"{r.returncode} {r.stderr}")


# ---- /healthz /readyz /metrics ----------------------------------------------------------------

METRIC_NAMES = ["leasehold_is_leader", "leasehold_fencing_token", "leasehold_leader_changes_total",
                "leasehold_acquisitions_total", "leasehold_renewals_total",
                "leasehold_renew_duration_seconds", "leasehold_api_requests_total",
                "process_resident_memory_bytes", "process_cpu_seconds_total",
                "process_start_time_seconds"]


def metrics_of(s):
    text = s.metrics()
    check(text, f"{s.name} /metrics did not answer 200")
    return text


def sample(text, name):
    return parse_metrics(text).get(name)


@scenario()
def probes(env):
    """/readyz after the first API answer, /metrics checked by promtool, /healthz fails only
    for a holder that has not renewed for D + 20 s."""
    sidecars, leader = start(env)
    time.sleep(1)
    for s in sidecars:
        for path in ("/healthz", "/readyz"):
            code, body = http_get(s.probe_port, path)
            check(code == 200, f"{s.name} {path}: {code} {body}")
        text = metrics_of(s)
        r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                           text=True, timeout=20)
        check(r.returncode == 0, f"promtool check metrics: {r.stdout} {r.stderr}")
        for name in METRIC_NAMES:
            check(re.search(r"^# TYPE " + name + " ", text, re.M), f"{s.name}: {name} missing")
        st = s.status()
        check(sample(text, "leasehold_is_leader") == (1 if st["leader"] else 0), "is_leader")
        check(sample(text, "leasehold_fencing_token") == st["fencingToken"], "fencing token")
        check(sample(text, "process_resident_memory_bytes") > 1e6, "RSS")
        check(time.time() - 120 < sample(text, "process_start_time_seconds") <= time.time(),
              "start time")
    text = metrics_of(leader)
    check(sample(text, 'leasehold_renewals_total{result="success"}') >= 2, "renewals counted")
    check(sample(text, "leasehold_acquisitions_total") == 1, "one acquisition")
    check(sample(text, 'leasehold_api_requests_total{verb="update",code="200"}') >= 2,
          "API requests by verb and code")
    log("promtool check metrics: OK on all 3; leader's metrics:\n" +
        "\n".join(l for l in text.splitlines() if l.startswith("leasehold_") and "bucket" not in l))

    # /readyz: not before the API server answered once.
    env.add_user("late")
    env.partition('late')
    late = env.sidecar("late").start()
    time.sleep(1)
    code, body = http_get(late.probe_port, "/readyz")
    check(code == 503, f"/readyz before any API answer: {code} {body}")
    check(http_get(late.probe_port, "/healthz")[0] == 200, "a replica that never held is healthy")
    env.heal('late')
    wait_for("/readyz after the first answer", lambda: http_get(late.probe_port, "/readyz")[0] ==
             200, 5)
    log("/readyz: 503 while the API server had not answered, 200 after")

    # /healthz: the partitioned holder turns unhealthy at D + 20 s after its last renewal.
    t0 = time.time()
    env.partition(leader.name)
    first_fail = None
    others_failed = []
    while time.time() - t0 < D + 24:
        code, body = http_get(leader.probe_port, "/healthz")
        if code == 503:
            first_fail = time.time() - t0
            check("without a successful renewal" in body, body)
            break
        for s in sidecars + [late]:
            if s is not leader and http_get(s.probe_port, "/healthz")[0] != 200:
                others_failed.append(s.name)
        time.sleep(0.1)
    check(first_fail is not None, "the stuck holder never turned unhealthy")
    log(f"/healthz of the partitioned holder failed {first_fail:.2f}s after the partition "
        f"(D + 20 = {D + 20}s after its last renewal)")
    check(D + 20 - P - 0.3 <= first_fail <= D + 20 + 0.5, f"unhealthy at {first_fail:.2f}s")
    check(not others_failed, f"only the stuck holder fails /healthz: {set(others_failed)}")
    check(not leader.leader(), "it stopped claiming long ago")
    env.heal(leader.name)
    wait_for("healthy again after the partition heals",
             lambda: http_get(leader.probe_port, "/healthz")[0] == 200, 5)


# ---- Events on the Lease ----------------------------------------------------------------------

# How long a stopping sidecar lets queued Events go out (Sidecar.h, drainBudget).
EVENTS_DRAIN_BUDGET = 2.0

@scenario()
def lease_events(env):
    """Events "<id> became leader" / "<id> stopped leading" on the Lease, seen by kubectl
    describe; a hanging events endpoint never disturbs the election."""
    sidecars, first = start(env)
    first.signal(signal.SIGTERM)
    check(first.wait(10) == 0, "clean exit")
    second = the_leader([s for s in sidecars if s is not first], timeout=3)
    wanted = [f"{first.name} became leader", f"{first.name} stopped leading",
              f"{second.name} became leader"]

    def described():
        out = env.kubectl("describe", "lease", "demo", "-n", env.namespace)
        return out if all(w in out for w in wanted) else None
    out = wait_for("the events in kubectl describe lease", described, 10, interval=0.3)
    log("kubectl describe lease demo:\n" + out[out.find("Events:"):])
    check("LeaderElection" in out, "reason LeaderElection")

    lease = env.lease()
    events = json.loads(env.kubectl("get", "events", "-n", env.namespace, "-o", "json"))["items"]
    ours = [e for e in events if e["involvedObject"].get("name") == "demo"]
    check(len(ours) >= 3, f"events: {[e['message'] for e in ours]}")
    for e in ours:
        io = e["involvedObject"]
        check(io["kind"] == "Lease" and io["apiVersion"] == "coordination.k8s.io/v1" and
              io["namespace"] == env.namespace and io["uid"] == lease["metadata"]["uid"] and
              io.get("resourceVersion"), f"involvedObject: {io}")
        check(e["reason"] == "LeaderElection" and e["type"] == "Normal" and e["count"] == 1,
              f"{e}")
        check(e["source"]["component"] == "leasehold" and e["reportingComponent"] == "leasehold",
              f"source: {e}")
        check(re.fullmatch(r"demo\.[0-9a-f]+", e["metadata"]["name"]), e["metadata"]["name"])
        check(e["firstTimestamp"] == e["lastTimestamp"] and e["firstTimestamp"].endswith("Z"),
              f"timestamps: {e}")
        check(re.fullmatch(r"replica-\d (became leader|stopped leading)", e["message"]),
              e["message"])

    # Failing events never affect the election: the events endpoint hangs from now on.
    if env.real:
        log("hanging events endpoint part skipped on the real server (needs HTTP-level faults)")
        return
    env.control("POST", "/faults", {"action": "hang", "resource": "events", "count": -1})
    rest = [s for s in sidecars if s is not first]
    with Observer(rest) as obs:
        t0 = time.time()
        code, _ = http_request(second.port, "POST", "/leader/release")
        check(code == 202, "release")
        third = the_leader([s for s in rest if s is not second], timeout=3)
        log(f"handover with a hanging events endpoint: {1000 * (time.time() - t0):.0f} ms")
        time.sleep(3)  # the new leader's event hangs; its renewals must go on
        check(third.leader(), "still leader")
        t1 = time.time()
        third.signal(signal.SIGTERM)
        check(third.wait(10) == 0, "clean exit")
        took = time.time() - t1
        log(f"SIGTERM with a hanging event: exited after {took:.2f}s "
            f"(drain budget {EVENTS_DRAIN_BUDGET}s)")
        # The release (one PUT), then the events' drain budget, then the process's end.
        check(took < EVENTS_DRAIN_BUDGET + slack(1.5),
              f"shutdown bounded despite the hanging event: {took:.2f}s")
    obs.check_safety()
    failed = [l for l in third.log_lines() if l.get("msg") == "renewal failed"]
    check(not failed, f"no renewal failed while events hung: {failed[:3]}")
    check(any("posting an event failed" in l.get("msg", "") for l in third.log_lines()),
          "the hanging event was noticed and logged")


@scenario()
def event_series(env):
    """A replica that keeps re-acquiring: one Event per message, its count going up (PATCH),
    shown as "(x3 over ...)" by kubectl describe, as client-go's event correlator does; an
    Event deleted meanwhile (they expire) is created afresh."""
    sidecars, only = start(env, n=1, extra_args=["--release-cooldown", "1s"])

    def release_and_reacquire():
        token = only.status()["fencingToken"]
        code, _ = http_request(only.port, "POST", "/leader/release")
        check(code == 202, "release")
        wait_for("re-acquisition after the cooldown",
                 lambda: (only.status() or {}).get("fencingToken") == token + 1, 5, interval=0.05)

    def by_message():
        items = json.loads(env.kubectl("get", "events", "-n", env.namespace, "-o", "json"))["items"]
        got = {}
        for e in items:
            if e["involvedObject"].get("name") == "demo":
                got.setdefault(e["message"], []).append(e)
        return got

    def counts():
        return {m: sorted(e["count"] for e in es) for m, es in by_message().items()}

    release_and_reacquire()
    release_and_reacquire()
    became, stopped = f"{only.name} became leader", f"{only.name} stopped leading"
    wanted = {became: [3], stopped: [2]}
    wait_for(f"Events counted {wanted}", lambda: counts() == wanted, 10, interval=0.3)
    for message, (e,) in by_message().items():
        check(e["lastTimestamp"] >= e["firstTimestamp"], f"timestamps: {e}")
        log(f"{message!r}: count {e['count']}, {e['firstTimestamp']} .. {e['lastTimestamp']}")
    out = env.kubectl("describe", "lease", "demo", "-n", env.namespace)
    log("kubectl describe lease demo:\n" + out[out.find("Events:"):])
    check(re.search(r"\(x3 over [0-9]+s\).*became leader", out),
          "kubectl describe shows the series")

    env.kubectl("delete", "event", "-n", env.namespace, by_message()[became][0]["metadata"]["name"])
    release_and_reacquire()
    wanted = {became: [1], stopped: [3]}
    wait_for(f"a new Event once the old one is gone: {wanted}", lambda: counts() == wanted, 10,
             interval=0.3)


# ---- --pod-label ------------------------------------------------------------------------------

PODS = ["--pod", "default/replica-0=127.0.0.1", "--pod", "default/replica-1=127.0.0.1",
        "--pod", "default/replica-2=127.0.0.1"]


@scenario(server_args=PODS)
@real_options(chart_values={"podLabel": "leasehold.io/leader"})
def pod_label(env):
    """--pod-label: `kubectl get pods -l KEY=true` lists exactly the leader; retried with
    backoff; lags leadership (a killed leader keeps its label)."""
    key = "leasehold.io/leader"
    if env.real:  # Pod objects (never scheduled); the chart's Role grants get/patch on pods
        env.create_pods([f"replica-{i}" for i in range(3)])
    sidecars, leader = start(env, extra_args=["--pod-label", key],
                             env_vars={"POD_NAMESPACE": env.namespace})

    def pods(value):
        out = env.kubectl("get", "pods", "-n", env.namespace, "-l", f"{key}={value}", "-o", "name")
        return sorted(out.split())

    def labelled_exactly(names):
        want = sorted(f"pod/{n}" for n in names)
        return lambda: pods("true") == want

    t0 = time.time()
    wait_for("only the leader labelled true", labelled_exactly([leader.name]), 5, interval=0.1)
    log(f"label on the leader {time.time() - t0:.2f}s after it was known")
    others = sorted(f"pod/{s.name}" for s in sidecars if s is not leader)
    wait_for("the followers labelled false", lambda: pods("false") == others, 5)
    log("kubectl get pods -l leasehold.io/leader=true:\n" +
        env.kubectl("get", "pods", "-n", env.namespace, "-l", f"{key}=true"))

    # Patches of the followers fail twice with 503: whoever wins retries with backoff (the
    # real server: no 503s, the label just follows).
    followers = [s for s in sidecars if s is not leader]
    for s in followers if not env.real else []:
        env.control("POST", "/faults", {"action": "error", "status": 503, "resource": "pods",
                                        "verb": "patch", "client": env.client_name(s.name),
                                        "count": 2})
    leader.signal(signal.SIGTERM)
    check(leader.wait(10) == 0, "clean exit")
    new = the_leader(followers, timeout=3)
    t1 = time.time()
    wait_for("the label to follow the new leader", labelled_exactly([new.name]), 10,
             interval=0.1)
    log(f"label moved to {new.name} {time.time() - t1:.2f}s after the handover"
        + ("" if env.real else " (two 503s, retried with backoff)"))
    check(env.real or any("labelling pod" in l.get("msg", "") for l in new.log_lines()),
          "the failed patches were retried (and logged)")
    check(f"pod/{leader.name}" in pods("false"), "the released leader set its label to false")

    # kill -9: a dead leader cannot clear its label; for a while two pods say true.
    new.signal(signal.SIGKILL)
    new.wait(5)
    last = the_leader([s for s in followers if s is not new], timeout=D + P + 3)
    wait_for("the next leader labelled", lambda: f"pod/{last.name}" in pods("true"), 10)
    check(pods("true") == sorted([f"pod/{new.name}", f"pod/{last.name}"]),
          f"the killed leader keeps its stale label: {pods('true')}")
    log("after kill -9 two pods carry true: the label lags and must not be used for safety")


# ---- Configuration ----------------------------------------------------------------------------

def parse_printed(text):
    out = {}
    for line in text.splitlines():
        k, _, v = line.partition(":")
        v = v.strip()
        if len(v) >= 2 and v[0] == v[-1] == '"':
            v = v[1:-1]
        out[k.strip()] = None if v in ("~", "null") else v
    return out


@scenario()
def configuration(env):
    """YAML file, LEASEHOLD_* env and flags with precedence flags > env > file > defaults;
    errors name file, line and key; --print-config without secrets."""
    import os
    admin_kubeconfig = env.kubeconfig_for("admin")
    unused_port = free_port()
    cfg = env.dir / "leasehold.yaml"
    cfg.write_text("# test configuration\n"
                   "leaseName: from-file\n"
                   "leaseDuration: 2s\n"
                   "renewDeadline: 1200ms\n"
                   "retryPeriod: 300ms\n"
                   f"httpAddress: 127.0.0.1:{unused_port}\n"
                   "logLevel: debug\n"
                   f"kubeconfig: {admin_kubeconfig}\n")
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("LEASEHOLD_")}

    def printed(*args, extra_env=None):
        r = subprocess.run([env.sidecar_bin, *args, "--print-config"], capture_output=True,
                           text=True, timeout=10, env=dict(base_env, **(extra_env or {})))
        check(r.returncode == 0, f"--print-config {args}: {r.returncode} {r.stderr}")
        check(env.tokens["admin"] not in r.stdout + r.stderr, "no token in --print-config")
        return parse_printed(r.stdout), r.stdout

    p, text = printed("--config", str(cfg))
    log("--print-config with only the file:\n" + text)
    check(p["leaseName"] == "from-file" and p["renewDeadline"] == "1.2s" and
          p["logLevel"] == "debug", f"file values: {p}")
    check(p["releaseCooldown"] == "2s" and p["logFormat"] == "text" and
          p["probeAddress"] == "0.0.0.0:9102", f"defaults (cooldown = lease duration): {p}")
    p, _ = printed("--config", str(cfg), extra_env={"LEASEHOLD_RENEW_DEADLINE": "1400ms"})
    check(p["renewDeadline"] == "1.4s" and p["leaseName"] == "from-file", f"env > file: {p}")
    p, _ = printed("--config", str(cfg), "--renew-deadline", "1500ms",
                   extra_env={"LEASEHOLD_RENEW_DEADLINE": "1400ms"})
    check(p["renewDeadline"] == "1.5s", f"flag > env: {p}")
    p, _ = printed(extra_env={"LEASEHOLD_CONFIG": str(cfg)})
    check(p["leaseName"] == "from-file", f"LEASEHOLD_CONFIG names the file: {p}")

    # Errors name the file, the line and the key.
    for name, body, needles in (
            ("unknown.yaml", "leaseName: x\n\nleaseDuraton: 15s\n", [":3", "leaseDuraton",
                                                                      "leaseDuration"]),
            ("type.yaml", "leaseName: x\nrenewDeadline: [1, 2]\n", [":2", "renewDeadline",
                                                                     "a list"]),
            ("duration.yaml", "leaseName: x\nretryPeriod: fast\n", [":2", "retryPeriod"]),
            ("syntax.yaml", "leaseName: x\nretryPeriod: [\n", ["syntax.yaml"])):
        bad = env.dir / name
        bad.write_text(body)
        r = subprocess.run([env.sidecar_bin, "--config", str(bad)], capture_output=True,
                           text=True, timeout=10, env=base_env)
        check(r.returncode == 2, f"{name}: exit {r.returncode}")
        msg = r.stderr.strip()
        for n in needles + [str(bad)] if name != "syntax.yaml" else needles:
            check(n in msg, f"{name}: message should contain {n!r}: {msg!r}")
        log(f"{name}: {msg}")
    r = subprocess.run([env.sidecar_bin, "--config", str(cfg)], capture_output=True, text=True,
                       timeout=10, env=dict(base_env, LEASEHOLD_RETRY_PERIOD="soon"))
    check(r.returncode == 2 and "LEASEHOLD_RETRY_PERIOD" in r.stderr, f"env error: {r.stderr}")

    # A real run: lease name and log level from the file, the status address from the env (the
    # file's address is never listened on), log format from a flag.
    s = env.sidecar("configured", kubeconfig=admin_kubeconfig)
    drop = {"--lease-name", "--http-address", "--kubeconfig", "--lease-duration",
            "--renew-deadline", "--retry-period"}
    args, i = [], 0
    while i < len(s.args):
        if s.args[i] in drop:
            i += 2
            continue
        args.append(s.args[i])
        i += 1
    s.args = args + ["--config", str(cfg)]
    s.env_vars = dict(base_env, POD_NAME="configured",
                      LEASEHOLD_HTTP_ADDRESS=f"127.0.0.1:{s.port}")
    s.start()
    wait_for("the configured sidecar to lead", s.leader, D + P + 3)
    st = s.status()
    check(st["lease"] == "from-file", f"lease name from the file: {st}")
    check(env.lease("from-file")["spec"]["holderIdentity"] == st["identity"], "Lease from-file")
    check(http_get(unused_port, "/leader")[0] == 0, "the file's httpAddress lost to the env")
    wait_for("debug lines (logLevel debug from the file)",
             lambda: any(l.get("level") == "debug" for l in s.log_lines()), 3)
    check(all("raw" not in l for l in s.log_lines()), "--log-format json from the flag")


# ---- Logs -------------------------------------------------------------------------------------

@scenario()
def no_secrets_in_logs(env):
    """A known token never appears in any log line, through faults, partitions, 401s, releases
    and shutdown; JSON logs are one object per line."""
    secret = "tok-SECRET-" + "7f3a9c" * 6
    secret = env.add_user("replica-0", token=secret)  # the real server mints its own
    bad_token = "tok-BAD-" + "55aa" * 8
    bad_cfg = env.dir / "bad.kubeconfig"
    bad_cfg.write_text(env.kubeconfig_for("replica-0").read_text().replace(secret, bad_token))
    a = env.sidecar("replica-0", extra_args=["--log-level", "debug"])
    b = env.sidecar("replica-1", extra_args=["--log-level", "debug"])
    b.args[b.args.index("--log-format") + 1] = "text"
    c = env.sidecar("replica-2", kubeconfig=bad_cfg, extra_args=["--log-level", "debug"])
    for s in (a, b, c):
        s.start()
    leader = the_leader([a, b], timeout=D + P + 3)
    if env.real:  # what a TCP proxy can do: reset every connection, slow everything down
        for _ in range(2):
            env.cut_watches()
            time.sleep(1)
        for s in (a, b):
            env.set_latency(s.name, 0.4, "both")
        time.sleep(1.5)
        for s in (a, b):
            env.set_latency(s.name, 0, "both")
    else:
        for fault in ({"action": "error", "status": 500, "count": 3},
                      {"action": "429", "retryAfter": 1, "count": 2},
                      {"action": "malformed", "count": 2},
                      {"action": "drop", "count": 2}):
            env.control("POST", "/faults", fault)
            time.sleep(1)
        env.control("DELETE", "/faults")
    env.partition(leader.name)
    time.sleep(R + 0.5)
    env.heal(leader.name)
    current = the_leader([a, b], timeout=D + P + 5)
    http_request(current.port, "POST", "/leader/release")
    time.sleep(1)
    for s in (a, b, c):
        s.signal(signal.SIGTERM)
        s.wait(10)
    total = 0
    for s in (a, b, c):
        text = s.logs()
        lines = text.splitlines()
        total += len(lines)
        # (a JWT's first part is the same for every token of the issuer: look at its signature)
        for needle in (secret, bad_token, secret[4:20], bad_token[4:20], secret[-24:]):
            check(needle not in text, f"{s.name}: a token fragment is in the log")
        if s is not b:
            for line in lines:
                obj = json.loads(line)
                check({"ts", "level", "msg"} <= set(obj), f"{s.name}: {line}")
    refused = [l for l in c.log_lines() if l.get("msg") == "API request refused"]
    check(refused and refused[0].get("code") == "401",
          f"the bad token's 401s were logged (without the token): {c.logs()[-1500:]}")
    log(f"{total} log lines from 3 sidecars (json, text, bad token): no token fragment")


if __name__ == "__main__":
    sys.exit(run_scenarios(SCENARIOS, SERVER_ARGS))
