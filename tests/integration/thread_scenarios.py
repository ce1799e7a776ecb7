#!/usr/bin/env python3
"""Integration scenarios for the sidecar's thread budget: at most two threads, the event loop
and runtime::BlockingWorker (docs/design.md, "Threads").

    thread_scenarios.py --sidecar BIN --apiserver BIN SCENARIO...   (or `all`, or --list)

Same harness and scaled timings as scenarios.py (D=2s, R=1.5s, P=0.3s).
"""
import json
import os
import sys
import time
from pathlib import Path

from leasehold_testing import (D, P, check, log, run_scenarios, the_leader,
                               write_kubeconfig)

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


def threads(pid):
    """{tid: name} of every thread of `pid`, from /proc/PID/task (names may be gone by the time
    they are read: a thread that just ended)."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            out[tid] = Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
        except OSError:
            out[tid] = "?"
    return out


@scenario
def host_name_and_status_file(env):
    """The API server by host name (https://localhost:PORT: getaddrinfo on the worker, not in
    asio's private resolver thread) plus --status-file (written on the same worker): a leader
    renewing for ~10 s has exactly 2 threads the whole time."""
    user = "by-name"
    url = f"https://localhost:{env.port}"  # the server certificate has DNS:localhost
    kubeconfig = write_kubeconfig(env.dir / f"{user}.kubeconfig", url, env.ca_path, user,
                                  token=env.tokens.get(user) or env.add_user(user))
    status_file = env.dir / "status.json"
    s = env.sidecar(user, kubeconfig=kubeconfig, extra_args=["--status-file", str(status_file)])
    s.start()
    leader = the_leader([s], timeout=D + P + 3)
    check(leader is s, "the one sidecar leads")
    started = [line for line in s.log_lines() if line.get("msg") == "starting"]
    check(started and started[0].get("server") == url, f"it talks to {url}: {started}")

    env.reset_counters()
    seen = {}  # thread count -> samples
    names = set()
    samples = 0
    t_end = time.monotonic() + 10
    while time.monotonic() < t_end:
        check(s.alive(), "the sidecar exited")
        now = threads(s.proc.pid)
        seen[len(now)] = seen.get(len(now), 0) + 1
        names.update(now.values())
        samples += 1
        time.sleep(0.05)
    updates = env.counters().get(env.client_name(user), {}).get("update", 0)
    log(f"{samples} samples over 10 s: thread counts {seen}, names {sorted(names)}; "
        f"{updates} renewals")
    check(s.leader(), "still the leader after 10 s")
    check(updates >= 20, f"renewing every P={P}s: {updates} updates in 10 s")
    content = json.loads(status_file.read_text())
    check(content["leader"] and content["holder"] == user, f"status file: {content}")
    check(set(seen) == {2}, f"exactly 2 threads (the loop and the blocking worker) in every "
          f"sample: {seen}, names {sorted(names)}")
    check("blocking-worker" in names, f"the second thread is the blocking worker: {names}")


if __name__ == "__main__":
    sys.exit(run_scenarios(SCENARIOS))
