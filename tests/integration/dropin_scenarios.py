#!/usr/bin/env python3
"""Integration scenarios for leasehold as a drop-in for the electors people run today (issue 17,
docs/migration.md): sidecars started with only kubernetes/contrib leader-elector's flags (or
client-go's), and the app next to contrib's elector, unchanged: `curl -s localhost:PORT/` and
compare `.name` with its own name.

    dropin_scenarios.py --sidecar BIN --apiserver BIN SCENARIO...   (or `all`, or --list)

Same harness as scenarios.py. contrib's --ttl=2s gives D=2s, R=1s, P=500ms. Three replicas share
one machine, so each gets its probe port from LEASEHOLD_PROBE_ADDRESS (contrib had no probe
server, so its args say nothing about one); everything else comes from contrib's flags. The
sidecars get no POD_NAME: contrib's manifests gave its container none.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

from leasehold_testing import (D, P, Observer, check, http_get, log, run_scenarios, the_leader,
                               wait_for)
from leasehold_testing.kube_time import epoch

SCENARIOS = {}
TTL = 2.0  # --ttl=2s: D=2s, R=1s, P=500ms by contrib's rule

# Flags a contrib leader-elector manifest can have (--kubeconfig came with its client flags).
CONTRIB_FLAGS = {"--election", "--election-namespace", "--id", "--http", "--ttl",
                 "--use-cluster-credentials", "--kubeconfig"}

# Reads .name from the JSON on stdin: jq, as the copies in the wild do, or (where jq is not
# installed; scripts/install-deps.sh does not list it) the same in Python.
READ_NAME = ("jq -r .name" if shutil.which("jq") else
             "python3 -c 'import json,sys; print(json.load(sys.stdin)[\"name\"])' 2>/dev/null")

# The app next to contrib's leader-elector, as its README and most copies have it: ask / for
# the leader's name and compare it with our own. One line per look: start, end, role, name.
CONTRIB_APP = r"""#!/bin/sh
ME="$1"; PORT="$2"; OUT="$3"
i=0
while [ "$i" -lt 3000 ]; do
  t0=$(date +%s.%N)
  LEADER=$(curl -s "localhost:$PORT/" | @READ_NAME@)
  t1=$(date +%s.%N)
  if [ "$LEADER" = "$ME" ]; then role=leader; else role=follower; fi
  echo "$t0 $t1 $role $LEADER" >> "$OUT"
  i=$((i + 1))
  sleep 0.05
done
""".replace("@READ_NAME@", READ_NAME)


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


def namespace(env):
    return getattr(env, "namespace", "default")


def clean_environment(**extra):
    """The process environment without the downward-API variables and leasehold settings."""
    out = {k: v for k, v in os.environ.items()
           if k not in ("POD_NAME", "POD_IP", "POD_NAMESPACE") and not k.startswith("LEASEHOLD_")}
    out.update(extra)
    return out


def contrib_sidecar(env, name, with_id=True, lease="demo"):
    """A harness Sidecar whose command line is a contrib leader-elector one."""
    s = env.sidecar(name)
    s.args = [env.sidecar_bin, f"--election={lease}", f"--election-namespace={namespace(env)}",
              *([f"--id={name}"] if with_id else []), f"--http=localhost:{s.port}",
              f"--ttl={TTL:g}s", f"--kubeconfig={s.kubeconfig}"]
    flags = {a.split("=", 1)[0] for a in s.args[1:]}
    check(flags <= CONTRIB_FLAGS, f"not contrib flags: {flags - CONTRIB_FLAGS}")
    s.env_vars = clean_environment(LEASEHOLD_PROBE_ADDRESS=f"127.0.0.1:{s.probe_port}",
                                   LEASEHOLD_LOG_FORMAT="json")
    return s


class ContribApp:
    """CONTRIB_APP running next to one sidecar; its looks, parsed."""

    def __init__(self, env, sidecar, me):
        self.me = me
        self.out = env.dir / f"app-{sidecar.name}.txt"
        script = env.dir / "contrib_app.sh"
        if not script.exists():
            script.write_text(CONTRIB_APP)
            log(f"contrib app: curl -s localhost:PORT/ | {READ_NAME.split(' 2>')[0]}")
        self.proc = subprocess.Popen(["sh", str(script), me, str(sidecar.port), str(self.out)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        env.processes.append(self.proc)

    def looks(self):
        """[(started, ended, role, name)]"""
        out = []
        try:
            lines = self.out.read_text().splitlines()
        except FileNotFoundError:
            return out
        for line in lines:
            parts = line.split(" ", 3)
            if len(parts) >= 3:
                out.append((float(parts[0]), float(parts[1]), parts[2],
                            parts[3] if len(parts) > 3 else ""))
        return out

    def sees(self, name, since):
        """A look started after `since` that found `name`: (started, ended) or None."""
        for t0, t1, _, seen in self.looks():
            if t0 >= since and seen == name:
                return t0, t1
        return None

    def leads_after(self, since):
        return [(t0, t1) for t0, t1, role, _ in self.looks() if t0 >= since and role == "leader"]


def the_apps_agree(apps, sidecars, since, timeout):
    """Waits until every app's latest look (after `since`) names the same live sidecar, whose
    own app says it leads and whose /leader agrees; returns that sidecar."""
    by_name = {s.name: s for s in sidecars}

    def agreed():
        latest = []
        for app in apps:
            looks = [x for x in app.looks() if x[0] >= since]
            if not looks:
                return None
            latest.append(looks[-1][3])
        if len(set(latest)) != 1 or latest[0] not in by_name:
            return None
        s = by_name[latest[0]]
        return s if s.alive() and s.leader() else None
    return wait_for("every app to name the same leader", agreed, timeout)


@scenario
def contrib_client_handover(env):
    """contrib-flag sidecars, contrib's app unchanged: kill -9 and SIGTERM hand over."""
    sidecars = [contrib_sidecar(env, f"replica-{i}") for i in range(3)]
    for s in sidecars:
        s.start()
    first = the_leader(sidecars, timeout=TTL + 3)
    apps = {s.name: ContribApp(env, s, s.name) for s in sidecars}
    with Observer(sidecars) as obs:
        leader = the_apps_agree(list(apps.values()), sidecars, time.time(), 10)
        check(leader is first, f"the apps follow the Lease: {leader.name} vs {first.name}")
        code, body = http_get(leader.port, "/")
        doc = json.loads(body)
        check(code == 200 and doc["name"] == leader.name and doc["leader"] is True,
              f"GET / on the leader: {code} {body}")
        check(set(json.loads(http_get(leader.port, "/leader")[1])) == set(doc),
              "/ is the /leader document")
        log(f"GET / -> {body}")
        for s in sidecars:
            code, body = http_get(s.port, "/isLeader")
            check(code == 200 and json.loads(body) == {"isLeader": s is leader},
                  f"{s.name} /isLeader: {code} {body}")
        token = doc["fencingToken"]

        # kill -9: the survivors' apps move to a new leader once the lease has run out.
        time.sleep(0.5)
        killed_at = time.time()
        leader.signal(signal.SIGKILL)
        survivors = [s for s in sidecars if s is not leader]
        second = the_apps_agree([apps[s.name] for s in survivors], survivors, killed_at,
                                TTL + 5)
        took = apps[second.name].sees(second.name, killed_at)[1] - killed_at
        log(f"kill -9: every app names {second.name} {took:.3f}s after the kill (D={TTL:g}s)")
        check(took >= TTL - 0.5 - 0.05, f"nobody may take over before D - P: {took:.3f}s")
        check(not apps[leader.name].leads_after(killed_at + 0.01),
              "the killed replica's app stopped leading")
        second_token = second.status()["fencingToken"]
        check(second_token > token, f"token went up: {token} -> {second_token}")

        # SIGTERM: released at once; the third app leads well before the lease would expire.
        time.sleep(0.5)
        termed_at = time.time()
        second.signal(signal.SIGTERM)
        rc = second.wait(timeout=10)
        check(rc == 0, f"exit code after SIGTERM: {rc}")
        third = [s for s in survivors if s is not second][0]
        seen = wait_for(f"{third.name}'s app to lead", lambda: apps[third.name].sees(
            third.name, termed_at), 5)
        took = seen[1] - termed_at
        log(f"SIGTERM: {third.name}'s app leads {took * 1000:.0f} ms after the signal")
        check(took < TTL, f"a released lease is taken at once, not after D: {took:.3f}s")
        st = third.status()
        check(st["leader"] and st["fencingToken"] == second_token + 1,
              f"the new term's token is one more: {st}")
        # From the new term's start, the stopped replica's app never said it led.
        acquired = epoch(st["acquireTime"])
        late = apps[second.name].leads_after(acquired)
        check(not late, f"{second.name}'s app still led after {third.name} acquired: {late}")
        time.sleep(0.3)
    terms = obs.check_safety()
    log(f"{len(obs.samples)} samples of /leader; terms: {[(t[2], t[3]) for t in terms]}")
    for name, app in apps.items():
        looks = app.looks()
        led = sum(1 for x in looks if x[2] == "leader")
        log(f"app {name}: {len(looks)} looks, {led} as leader")


def set_partition(env, sidecar, on):
    """Cuts (or restores) one sidecar's access to the API server."""
    if hasattr(env, "partition"):
        (env.partition if on else env.heal)(sidecar.name)
    else:
        env.control("POST" if on else "DELETE",
                    f"/partition?client={env.client_name(sidecar.name)}")


@scenario
def contrib_client_partition(env):
    """A partitioned leader's app stops leading by R, before anyone else may take over."""
    sidecars = [contrib_sidecar(env, f"replica-{i}") for i in range(3)]
    for s in sidecars:
        s.start()
    the_leader(sidecars, timeout=TTL + 3)
    apps = {s.name: ContribApp(env, s, s.name) for s in sidecars}
    with Observer(sidecars) as obs:
        leader = the_apps_agree(list(apps.values()), sidecars, time.time(), 10)
        time.sleep(0.5)
        cut_at = time.time()
        set_partition(env, leader, True)
        # Its sidecar cannot renew and cannot see anybody else: the Lease it last saw names it.
        stopped = wait_for(f"{leader.name}'s app to stop leading",
                           lambda: apps[leader.name].sees("", cut_at), TTL + 2)
        log(f"partitioned: {leader.name}'s app sees name \"\" {stopped[1] - cut_at:.3f}s after "
            f"the cut (R={TTL / 2:g}s)")
        others = [s for s in sidecars if s is not leader]
        new = the_apps_agree([apps[s.name] for s in others], others, cut_at, TTL + 5)
        acquired = epoch(new.status()["acquireTime"])
        check(stopped[1] < acquired,
              f"{leader.name}'s app stopped ({stopped[1]:.3f}) before {new.name} acquired "
              f"({acquired:.3f})")
        late = apps[leader.name].leads_after(acquired)
        check(not late, f"two apps led: {leader.name}'s still did after {new.name} acquired")
        set_partition(env, leader, False)
        wait_for(f"{leader.name}'s app to name {new.name}",
                 lambda: apps[leader.name].sees(new.name, time.time() - 0.5), 10)
    obs.check_safety()
    log(f"{new.name} acquired {acquired - cut_at:.3f}s after the cut")


@scenario
def contrib_default_identity(env):
    """Only --election and --http: / names the hostname, as contrib's image (--id=$(hostname))."""
    s = contrib_sidecar(env, "solo", with_id=False)
    s.start()
    wait_for("the only replica to lead", s.leader, TTL + 3)
    doc = json.loads(http_get(s.port, "/")[1])
    host = socket.gethostname()
    check(doc["name"] == host, f"name is the hostname {host!r}: {doc}")
    check(doc["identity"].startswith(host + "_"), f"the identity stays unique: {doc}")
    out = subprocess.run(["sh", "-c", f"curl -s localhost:{s.port}/ | {READ_NAME}"],
                         capture_output=True, text=True, timeout=10).stdout.strip()
    check(out == host, f"curl | {READ_NAME}: {out!r}")
    # nais/elector's stream: /sse, the same events as /leader/watch.
    out = subprocess.run(["curl", "-sN", "--max-time", "1", f"localhost:{s.port}/sse"],
                         capture_output=True, text=True, timeout=10).stdout
    first = next((line for line in out.splitlines() if line.startswith("data: ")), None)
    check(first and json.loads(first[6:])["name"] == host, f"/sse: {out[:300]!r}")
    lease = env.lease()
    check(lease["metadata"]["annotations"].get("leasehold.io/holder-pod") == host,
          f"the Lease names the pod: {lease['metadata'].get('annotations')}")
    s.signal(signal.SIGTERM)
    check(s.wait(timeout=10) == 0, "exit 0 after SIGTERM")
    log(f"/ named {host!r}; identity {doc['identity']}")


@scenario
def client_go_flags(env):
    """client-go's --leader-elect-* flags elect and fail over; an Endpoints lock is refused."""
    ns = namespace(env)
    sidecars = []
    for i in range(2):
        s = env.sidecar(f"replica-{i}")
        s.args = [env.sidecar_bin, "--leader-elect", "--leader-elect-resource-lock=leases",
                  "--leader-elect-resource-name=demo", f"--leader-elect-resource-namespace={ns}",
                  "--leader-elect-lease-duration=2s", "--leader-elect-renew-deadline=1500ms",
                  "--leader-elect-retry-period=300ms", f"--kubeconfig={s.kubeconfig}",
                  f"--identity={s.name}", f"--http-address=127.0.0.1:{s.port}",
                  f"--probe-address=127.0.0.1:{s.probe_port}", "--log-format=json"]
        sidecars.append(s.start())
    leader = the_leader(sidecars, timeout=D + P + 3)
    lease = env.lease()
    check(lease["spec"]["leaseDurationSeconds"] == 2, f"D from the flag: {lease['spec']}")
    with Observer(sidecars) as obs:
        t0 = time.monotonic()
        leader.signal(signal.SIGKILL)
        other = the_leader([s for s in sidecars if s is not leader], timeout=D + 4)
        log(f"kill -9 failover with client-go flags: {time.monotonic() - t0:.3f}s")
        time.sleep(0.3)
    obs.check_safety()
    check(other.status()["fencingToken"] == 1, "second term")
    r = subprocess.run([env.sidecar_bin, "--leader-elect-resource-name=demo",
                        "--leader-elect-resource-lock=endpoints"],
                       capture_output=True, text=True, timeout=10)
    check(r.returncode == 2 and "--leader-elect-resource-lock: \"endpoints\" is not supported"
          in r.stderr, f"an Endpoints lock is refused: {r.returncode} {r.stderr!r}")
    log(f"refused: {r.stderr.strip()}")


if __name__ == "__main__":
    sys.exit(run_scenarios(SCENARIOS))
