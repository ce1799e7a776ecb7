#!/usr/bin/env python3
"""The event loop never blocks: slow work next to the loop (an exec credential plugin that takes
4 s to refresh, a status file whose fsync takes 3 s) must not cost a healthy leader its term at
R = 1.5 s, and /leader must answer within 50 ms the whole time (a sampler's hiccup on a loaded
machine is allowed for 1% of the samples, up to 300 ms: a blocked loop costs seconds).

    loop_scenarios.py --sidecar BIN --apiserver BIN SCENARIO...   (or `all`, or --list)

Timings are the scaled D=2s, R=1.5s, P=0.3s. /leader is sampled every 50 ms over a keep-alive
connection; each scenario prints the slowest answer it saw.
"""
import json
import os
import re
import shutil
import signal
import sys
import threading
import time

from leasehold_testing import D, P, check, log, real_options, run_scenarios, the_leader, wait_for
from leasehold_testing.leader_sampler import Sampler

SCENARIOS = {}

SAMPLE_INTERVAL = 0.05  # s between /leader requests
MAX_ANSWER = 0.050      # s: the goal for every /leader answer
# The sampler is Python on a 2-core machine that runs other tests (and, in CI, ASan builds):
# one sample in a hundred may miss the goal for reasons of its own, but never by this much.
# A blocked loop (the 3-4 s plugin run or fsync these scenarios inject) misses it by seconds.
SLOW_SHARE = 0.01       # of the samples may be slower than MAX_ANSWER ...
HARD_MAX = 0.300        # ... but none slower than this

# The plugin: the first run answers at once, every later one (a refresh) takes 4 s. Each
# credential expires 12 s after it was printed, so the sidecar refreshes every ~10 s. It logs
# the start and end of every run to $STATE_DIR/runs; the token comes from $TOKEN.
SLOW_PLUGIN = r"""#!/bin/sh
n=$(cat "$STATE_DIR/count" 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > "$STATE_DIR/count"
echo "start $n $(date +%s.%N)" >> "$STATE_DIR/runs"
if [ "$n" -gt 1 ]; then sleep 4; fi
expiry=$(date -u -d "@$(( $(date +%s) + 12 ))" +%Y-%m-%dT%H:%M:%SZ)
echo "end $n $(date +%s.%N)" >> "$STATE_DIR/runs"
printf '{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1",'
printf '"status":{"token":"%s","expirationTimestamp":"%s"}}\n' "$TOKEN" "$expiry"
"""


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


class LeaderLatency:
    """Samples one sidecar's /leader every SAMPLE_INTERVAL (leader_sampler.Sampler, 1 s timeout,
    so a blocked loop shows as a slow or missing answer) and keeps (t0, seconds, status)."""

    def __init__(self, sidecar):
        self.samples = []
        self.lock = threading.Lock()
        self.sampler = Sampler(sidecar, interval=SAMPLE_INTERVAL, record=self.record, timeout=1.0)

    def record(self, sidecar, proc, t0, t1, status):
        with self.lock:
            self.samples.append((t0, t1 - t0, status))

    def __enter__(self):
        self.sampler.start()
        return self

    def __exit__(self, *exc):
        self.sampler.stop()
        self.sampler.join(timeout=5)

    def check_one_term(self, name, term):
        """Every sample answered (within MAX_ANSWER but for SLOW_SHARE of them, never beyond
        HARD_MAX), leader=true, same holder and fencing token."""
        with self.lock:
            samples = list(self.samples)
        span = samples[-1][0] - samples[0][0] if samples else 0
        slowest = sorted(samples, key=lambda s: s[1], reverse=True)[:5]
        log(f"{len(samples)} /leader samples over {span:.1f}s; slowest: "
            + ", ".join(f"{s[1] * 1000:.1f} ms" for s in slowest))
        check(len(samples) >= span / (SAMPLE_INTERVAL * 2), f"too few samples: {len(samples)}")
        t_start = samples[0][0] if samples else 0
        problems = []
        missing = [t0 for t0, _, st in samples if st is None or "exited" in st]
        if missing:
            problems.append(f"/leader did not answer {len(missing)} times (first at "
                            f"+{missing[0] - t_start:.2f}s)")
        slow = [(t0, dt) for t0, dt, _ in samples if dt > MAX_ANSWER]
        very = [(t0, dt) for t0, dt in slow if dt > HARD_MAX]
        if very or len(slow) > SLOW_SHARE * len(samples):
            first = (very or slow)[0]
            problems.append(f"{len(slow)} of {len(samples)} answers slower than "
                            f"{MAX_ANSWER * 1000:.0f} ms, {len(very)} slower than "
                            f"{HARD_MAX * 1000:.0f} ms (first {first[1] * 1000:.0f} ms at "
                            f"+{first[0] - t_start:.2f}s)")
        lost = [(t0, st) for t0, _, st in samples if st is not None and "exited" not in st
                and (not st["leader"] or st["holder"] != name or st["fencingToken"] != term)]
        if lost:
            problems.append(f"the leader lost its term {len(lost)} times (first at "
                            f"+{lost[0][0] - t_start:.2f}s: {lost[0][1]})")
        check(not problems, "; ".join(problems))


def exec_kubeconfig(env, user, plugin, state_dir, token):
    """A kubeconfig whose user authenticates through the exec plugin `plugin`."""
    path = env.dir / f"{user}.exec.kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n"
        f"    server: {env.url}\n    certificate-authority: {env.ca_path}\n"
        f"users:\n- name: {user}\n  user:\n    exec:\n"
        "      apiVersion: client.authentication.k8s.io/v1\n"
        f"      command: {plugin}\n      interactiveMode: Never\n      env:\n"
        f"      - {{name: STATE_DIR, value: \"{state_dir}\"}}\n"
        f"      - {{name: TOKEN, value: \"{token}\"}}\n"
        f"contexts:\n- name: test\n  context:\n    cluster: test\n    user: {user}\n"
        "    namespace: default\ncurrent-context: test\n")
    return path


def plugin_runs(state_dir):
    """{run number: (start, end or None)} from the plugin's own log."""
    runs = {}
    try:
        lines = (state_dir / "runs").read_text().splitlines()
    except FileNotFoundError:
        return runs
    for line in lines:
        what, n, t = line.split()
        start, end = runs.get(int(n), (None, None))
        runs[int(n)] = (float(t), end) if what == "start" else (start, float(t))
    return runs


@real_options(needs_http="the plugin prints a token of the test server's token file")
@scenario
def slow_exec_plugin(env):
    """An exec plugin that takes 4 s on every refresh: the leader keeps its one term and /leader
    answers within 50 ms while the refreshes run."""
    token = env.add_user("execer")
    state_dir = env.dir / "plugin-state"
    state_dir.mkdir()
    plugin = env.dir / "slow-plugin.sh"
    plugin.write_text(SLOW_PLUGIN)
    plugin.chmod(0o755)
    s = env.sidecar("execer", kubeconfig=exec_kubeconfig(env, "execer", plugin, state_dir, token))
    s.start()
    leader = the_leader([s], timeout=D + P + 3)
    st = leader.status()
    term = st["fencingToken"]
    log(f"leader {leader.name}, fencing token {term}")
    # Refreshes start 6 s before each 12 s expiry and take 4 s: two of them within ~20 s. (A
    # sidecar that runs the plugin only at the expiry needs ~32 s for two.)
    threads = set()  # thread counts seen: the plugin runs as a process, never as a thread

    def refreshed_twice():
        threads.add(len(os.listdir(f"/proc/{leader.proc.pid}/task")))
        return sum(1 for n, (a, b) in plugin_runs(state_dir).items() if n > 1 and b) >= 2
    with LeaderLatency(leader) as latency:
        waited = None
        try:
            wait_for("two slow refreshes to finish", refreshed_twice, 45, interval=0.2)
            time.sleep(1)
        except Exception as e:  # noqa: BLE001 - the term and latency checks say more; then this
            waited = e
    runs = plugin_runs(state_dir)
    log("plugin runs: " + ", ".join(
        f"#{n} {b - a:.1f}s" if b else f"#{n} running" for n, (a, b) in sorted(runs.items())))
    latency.check_one_term(leader.name, term)
    if waited:
        raise waited
    log(f"thread counts seen: {sorted(threads)}")
    check(max(threads) <= 2, f"at most 2 threads while the plugin runs: {sorted(threads)}")
    check(all(b - a >= 4 for n, (a, b) in runs.items() if n > 1 and b),
          "every refresh took the plugin's 4 s")
    check(leader.alive() and leader.leader(), "still leader at the end")
    lines = leader.log_lines()
    check(not any(token in json.dumps(line) for line in lines), "the token never reaches the log")
    warnings = [l for l in lines if "exec plugin" in json.dumps(l)]
    check(not warnings, f"no plugin warning while it works, only slowly: {warnings[:2]}")


def traced_pid(tracer_pid, binary, timeout=10):
    """The pid of the process strace started: its child that runs `binary`. Not merely its
    first child: strace 6.1 forks short-lived children of its own first (its --seccomp-bpf
    checks), and in 7 of 10 starts here the first child seen was one of those. Taking it made
    slow_status_file signal a process that was gone (ProcessLookupError in the gate), and
    could have signalled a stranger that got its pid."""
    want = os.path.realpath(binary)

    def child():
        try:
            with open(f"/proc/{tracer_pid}/task/{tracer_pid}/children") as f:
                pids = [int(p) for p in f.read().split()]
        except FileNotFoundError:
            return None
        for pid in pids:
            try:
                if os.path.realpath(f"/proc/{pid}/exe") == want:
                    return pid
            except OSError:  # gone, or not exec'd yet
                continue
        return None
    return wait_for("strace to start the sidecar", child, timeout)


@real_options(needs_http="not run on the real control plane (strace around a local process)")
@scenario
def slow_status_file(env):
    """Every fsync takes 3 s (strace fault injection): the leader keeps its one term, /leader
    answers within 50 ms, no fsync runs on the event loop after the start, and the status file
    still ends with the latest value."""
    strace = shutil.which("strace")
    check(strace, "strace is not installed (scripts/install-deps.sh installs it)")
    status_file = env.dir / "slow.status.json"
    trace_log = env.dir / "strace.out"
    s = env.sidecar("slowdisk", extra_args=["--status-file", str(status_file)])
    binary = s.args[0]
    # -f: both threads; --seccomp-bpf: only fsync and fdatasync stop the process, and only the
    # calling thread is held for the 3 s.
    s.args = [strace, "-f", "--seccomp-bpf", "-qq", "-e", "trace=fsync,fdatasync", "-e",
              "inject=fsync,fdatasync:delay_enter=3s", "-o", str(trace_log), *s.args]
    # An ASan build's LeakSanitizer stops the process with ptrace at exit, which a process
    # that strace already traces refuses ("LeakSanitizer has encountered a fatal error"): no
    # leak check for this one process (the others of the suite still have it).
    s.env_vars["ASAN_OPTIONS"] = ":".join(
        o for o in (s.env_vars.get("ASAN_OPTIONS", ""), "detect_leaks=0") if o)
    s.start(wait=False)
    sidecar_pid = traced_pid(s.proc.pid, binary)
    try:
        slow_status_file_checks(env, s, sidecar_pid, status_file, trace_log)
    finally:
        # Killing strace would leave its tracee running, detached: end the sidecar itself.
        try:
            os.kill(sidecar_pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def slow_status_file_checks(env, s, sidecar_pid, status_file, trace_log):
    # The start-up write is synchronous (a bad path must fail the start): 2 fsyncs, 6 s.
    wait_for("the traced sidecar to serve /leader", lambda: s.status() is not None, 20)
    leader = the_leader([s], timeout=D + P + 3)
    term = leader.status()["fencingToken"]
    first = json.loads(status_file.read_text())
    log(f"leader {leader.name}, fencing token {term}; status file at start: leader="
        f"{first['leader']}")
    with LeaderLatency(leader) as latency:
        time.sleep(15)
    latency.check_one_term(leader.name, term)
    during = json.loads(status_file.read_text())
    check(during["leader"] and during["holder"] == leader.name,
          f"the slow writes still land: the file says {during}")

    # SIGTERM: the release is the latest value; it must reach the file (after the write in
    # flight, 6 s per write), then the process exits.
    os.kill(sidecar_pid, signal.SIGTERM)
    rc = s.proc.wait(timeout=40)
    final = json.loads(status_file.read_text())
    log(f"exit {rc}; status file at the end: leader={final['leader']} holder={final['holder']}")
    check(rc == 0, f"clean exit after SIGTERM: {rc}")
    check(final["leader"] is False, f"the file ends with the release: {final}")

    delayed = [line for line in trace_log.read_text().splitlines() if "(DELAYED)" in line]
    on_loop = [line for line in delayed if re.match(rf"{sidecar_pid}\s", line)]
    log(f"{len(delayed)} delayed fsyncs, {len(on_loop)} of them on the loop thread")
    check(len(delayed) >= 4, f"the fault was injected: {len(delayed)} delayed fsyncs")
    check(len(on_loop) <= 2, "only the start-up write fsyncs on the loop thread (file and "
          f"directory): {on_loop}")


if __name__ == "__main__":
    sys.exit(run_scenarios(SCENARIOS))
