"""bench/run's measurements: failover and handover, handover on request, API load and footprint,
/leader throughput and latency next to nginx, startup.

Why ~440 lines in one file: it is the list of the sections bench/run runs one after the other
(40-110 lines each, independent of each other, in the order of the results); what they share,
the servers, the settings and the samplers, is in servers.py, settings.py and leasehold_testing.
"""
import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

from leasehold_testing import Failure, free_port, http_get, log, the_leader, wait_for, wrk
from leasehold_testing.kube_time import epoch
from leasehold_testing.leader_sampler import LeaderClient
from leasehold_testing.paths import ROOT
from leasehold_testing.proc import children, cpu_ns, cpu_ticks, footprint
from servers import make_sidecar, short
from settings import DEFAULT_ARGS, MODES, SCALED, SCALED_ARGS, VERBS, pct, started, summary


# ----------------------------------------------------------------------------------------------
# 1+2. Failover (kill -9) and handover (SIGTERM)


def takeover_series(server, mode, kind, reps, tag=""):
    """Repeatedly signals the leader of 3 replicas; returns per-repetition measurements. `tag`
    names another Lease (the scale section runs the series twice: alone and under load).

    t = time from sending the signal to the first /leader answer leader=true from another
    replica (answers are polled about every millisecond over kept-alive connections). For kill
    -9 also `after_expiry`: that instant minus (the dead leader's last renewTime + D), i.e. how
    late the takeover came once the lease could first expire (wall clock; same machine).
    """
    D = SCALED["D"]
    lease = f"{kind}-{mode}{tag}"
    env = server.env_for(lease)
    sidecars = [make_sidecar(server, env, f"{kind[:2]}{short(mode)}{tag}-{i}", lease,
                             SCALED_ARGS, mode) for i in range(3)]
    for s in sidecars:
        s.start()
    leader = the_leader(sidecars, timeout=D + 5)
    out = []
    for rep in range(reps):
        time.sleep(1.0 + random.uniform(0, SCALED["P"]))  # random phase against the renewals
        if not all(s.alive() for s in sidecars):
            raise Failure(f"{kind} rep {rep}: a sidecar exited on its own (killed from "
                          "outside?): " + ", ".join(s.name for s in sidecars if not s.alive()))
        others = [s for s in sidecars if s is not leader]
        probers = [LeaderClient(s.port, timeout=0.5) for s in others]
        for p in probers:
            p.get()  # connect before the clock starts
        token = leader.status()["fencingToken"]
        t0 = time.monotonic()
        leader.signal(signal.SIGKILL if kind == "kill" else signal.SIGTERM)
        kill_wall = time.time()
        stored = server.lease(env, lease) if kind == "kill" else None
        rv_at_kill = stored["metadata"]["resourceVersion"] if stored else None
        winner, st, t1, wall = None, None, None, None
        deadline = t0 + D + 5
        next_read = time.monotonic() + 0.01
        while winner is None and time.monotonic() < deadline:
            if stored and time.monotonic() >= next_read:
                # A renewal sent just before the kill may be applied after it: keep the last
                # record the dead leader wrote (the one the followers' expiry counts from).
                now_rec = server.lease(env, lease)
                if now_rec["spec"].get("holderIdentity") == leader.name:
                    stored = now_rec
                next_read = time.monotonic() + 0.01
            for s, p in zip(others, probers):
                status = p.get()
                if status and status.get("leader"):
                    t1, wall, winner, st = time.monotonic(), time.time(), s, status
                    break
            else:
                time.sleep(0.001)
        for p in probers:
            p.close()
        rc = leader.wait(timeout=10)
        if winner is None:
            raise Failure(f"{kind} rep {rep}: no new leader within {D + 5}s")
        rec = {"t": t1 - t0, "from": leader.name, "to": winner.name,
               "token_before": token, "token_after": st["fencingToken"], "exit": rc}
        if stored:
            renew = stored["spec"].get("renewTime")
            if renew:
                rec["after_expiry"] = wall - (epoch(renew) + D)
                # The dead leader's last write was still in flight when it was killed: sent
                # before, applied after. The followers rightly count D from seeing it.
                rec["renewal_in_flight"] = stored["metadata"]["resourceVersion"] != rv_at_kill
                rec["last_renew_before_kill_ms"] = (kill_wall - epoch(renew)) * 1000
        if st["fencingToken"] <= token:
            raise Failure(f"{kind} rep {rep}: token did not go up: {rec}")
        out.append(rec)
        # Bring the old leader back as a follower, and wait until all three agree.
        idx = sidecars.index(leader)
        again = make_sidecar(server, env, leader.name, lease, SCALED_ARGS, mode)
        again.start()
        sidecars[idx] = again
        leader = the_leader(sidecars, timeout=D + 5)
    for s in sidecars:
        if s.alive():
            s.proc.kill()
            s.wait()
    return out


def takeover_entry(series, kind):
    """A takeover series with its summaries (t; for kill -9 also t - D and after expiry)."""
    times = [r["t"] for r in series]
    entry = {"runs": series, "t": summary(times)}
    if kind == "kill":
        entry["t_minus_D"] = summary([t - SCALED["D"] for t in times])
        late = [r["after_expiry"] for r in series if "after_expiry" in r]
        entry["after_expiry"] = summary(late)
        # Only possible when a follower counted D from an older record than the last one
        # (client-go compares records at 1 s resolution: see README, Benchmarks).
        entry["before_expiry"] = sum(1 for x in late if x < 0)
    return entry


def run_takeovers(server, kind, reps, results):
    res = {}
    for mode in MODES:
        log(f"{kind}: {reps} repetitions, {mode_name(mode)}, 3 replicas, D=2s R=1.5s P=0.3s")
        entry = takeover_entry(takeover_series(server, mode, kind, reps), kind)
        res[mode] = entry
        s = entry["t_minus_D"] if kind == "kill" else entry["t"]
        log(f"  {mode}: p50 {s['p50'] * 1000:.1f} ms, p99 {s['p99'] * 1000:.1f} ms "
            f"{'minus D ' if kind == 'kill' else ''}(max {s['max'] * 1000:.1f} ms)")
    results["failover" if kind == "kill" else "handover"] = res


def run_requests(server, reps, results):
    """Handover on request: 3 leasehold replicas (watch), the Lease annotated with
    leasehold.io/preferred-holder=<a follower> `reps` times. t = from the API server's answer to
    the PATCH (the request is written) to the named replica's first /leader answer leader=true
    (polled about every millisecond over kept-alive connections). client-go has no such request
    (its answer is to stop renewing and wait out the lease), so there is no baseline row."""
    D = SCALED["D"]
    lease = "request"
    env = server.env_for(lease)
    sidecars = [make_sidecar(server, env, f"rq-{i}", lease, SCALED_ARGS, "watch")
                for i in range(3)]
    for s in sidecars:
        s.start()
    leader = the_leader(sidecars, timeout=D + 5)
    series = []
    log(f"request: {reps} handovers on request, 3 replicas, D=2s R=1.5s P=0.3s")
    for rep in range(reps):
        time.sleep(0.5 + random.uniform(0, SCALED["P"]))  # random phase against the renewals
        target = [s for s in sidecars if s is not leader][rep % 2]
        prober = LeaderClient(target.port, timeout=0.5)
        prober.get()  # connect before the clock starts
        token = leader.status()["fencingToken"]
        server.annotate(env, lease, "leasehold.io/preferred-holder", target.name)
        t0 = time.monotonic()
        st, t1 = None, None
        while time.monotonic() < t0 + D + 5:
            status = prober.get()
            if status and status.get("leader"):
                st, t1 = status, time.monotonic()
                break
            time.sleep(0.001)
        prober.close()
        if st is None:
            raise Failure(f"request rep {rep}: {target.name} did not lead within {D + 5}s")
        if st["fencingToken"] != token + 1:
            raise Failure(f"request rep {rep}: token {token} -> {st['fencingToken']}")
        series.append({"t": t1 - t0, "from": leader.name, "to": target.name,
                       "token_before": token, "token_after": st["fencingToken"]})
        leader = target
    for s in sidecars:
        if s.alive():
            s.proc.kill()
            s.wait()
    entry = {"runs": series, "t": summary([r["t"] for r in series])}
    results["request"] = {"watch": entry}
    t = entry["t"]
    log(f"  watch: p50 {t['p50'] * 1000:.1f} ms, p99 {t['p99'] * 1000:.1f} ms "
        f"(max {t['max'] * 1000:.1f} ms)")


def mode_name(mode):
    return "client-go (bench/clientgo)" if mode == "client-go" else f"--follower-mode {mode}"


# ----------------------------------------------------------------------------------------------
# 3+5. API load (per replica and verb) and footprint, default timings, all groups at once


def split_counts(counts):
    """{"verb:resource": n} -> ({verb: n} of Lease requests, {"verb:resource": n} of the rest)."""
    leases, other = {}, {}
    for key, n in counts.items():
        verb, _, resource = key.partition(":")
        if resource == "leases":
            leases[verb] = leases.get(verb, 0) + n
        else:
            other[key] = other.get(key, 0) + n
    return leases, other


def run_load(server, prof, results):
    groups = [(mode, n) for mode in MODES for n in (3, 10)]
    log(f"load: {', '.join(f'{n} x {m}' for m, n in groups)} replicas at 15s/10s/2s, "
        f"{prof['load_s']} s window, footprint and {prof['cpu_s']} s idle CPU inside it")
    members = {}
    envs = {}
    for mode, n in groups:
        lease = f"load-{mode}-{n}"
        envs[(mode, n)] = env = server.env_for(lease)
        members[(mode, n)] = [make_sidecar(server, env, f"l{short(mode)}{n}-{i}", lease,
                                           DEFAULT_ARGS, mode) for i in range(n)]
    for group in members.values():
        for s in group:
            s.start()
    leaders = {g: the_leader(m, timeout=20) for g, m in members.items()}
    time.sleep(5)  # every follower has its watch open / its poll rhythm
    server.reset_counters()
    t0 = time.monotonic()
    # Footprint + idle CPU of ours (watch, 3 replicas) and of the baseline, leader + follower.
    watched = {}
    for mode in MODES:
        lead = leaders[(mode, 3)]
        foll = next(s for s in members[(mode, 3)] if s is not lead)
        watched[f"{mode}-leader"] = lead
        watched[f"{mode}-follower"] = foll
    cpu_start = min(10.0, max(0.0, prof["load_s"] - prof["cpu_s"]))
    time.sleep(cpu_start)
    c0 = {k: (cpu_ticks(s.proc.pid), cpu_ns(s.proc.pid), time.monotonic())
          for k, s in watched.items()}
    time.sleep(prof["cpu_s"])
    foot = {}
    tick = os.sysconf("SC_CLK_TCK")
    for k, s in watched.items():
        ticks0, ns0, w0 = c0[k]
        wall = time.monotonic() - w0
        sample = footprint(s.proc.pid)
        sample["cpu_percent_stat"] = 100.0 * (cpu_ticks(s.proc.pid) - ticks0) / tick / wall
        sample["cpu_percent_schedstat"] = 100.0 * (cpu_ns(s.proc.pid) - ns0) / 1e9 / wall
        sample["cpu_window_s"] = wall
        foot[k] = sample
    rest = prof["load_s"] - (time.monotonic() - t0)
    if rest > 0:
        time.sleep(rest)
    minutes = (time.monotonic() - t0) / 60.0
    counters = server.counters()
    dead = [s.name for g in members.values() for s in g if not s.alive()]
    if dead:  # e.g. a `pkill leasehold` from someone else on a shared machine
        raise Failure(f"load: sidecars exited during the window: {', '.join(dead)}; the "
                      "counts would be wrong (see their logs for the signal)")
    changed = [f"{m} x{n}" for (m, n), g in members.items()
               if the_leader(g, timeout=20) is not leaders[(m, n)]]
    if changed:  # a takeover inside the window would count its extra requests
        log(f"  WARNING: the leader changed during the window in {', '.join(changed)}")
    load = {}
    for (mode, n), group in members.items():
        lead = leaders[(mode, n)]
        env = envs[(mode, n)]
        per, other = {}, {}
        for s in group:
            leases, rest_counts = split_counts(counters.get(env.client_name(s.name), {}))
            per[s.name] = {v: c / minutes for v, c in leases.items() if c}
            for k, c in rest_counts.items():
                other[k] = other.get(k, 0) + c / minutes
        followers = [per[s.name] for s in group if s is not lead]
        fmean = {v: sum(f.get(v, 0) for f in followers) / len(followers) for v in VERBS}
        total = sum(sum(p.values()) for p in per.values())
        load[f"{mode}-{n}"] = {
            "replicas": n, "mode": mode, "minutes": minutes, "total_per_min": total,
            "leader_per_min": per[lead.name], "follower_mean_per_min":
            {v: c for v, c in fmean.items() if c}, "per_replica_per_min": per,
            "other_requests_per_min": other, "leader_changed": f"{mode} x{n}" in changed}
        log(f"  {mode} x{n}: {total:.1f} Lease requests/min in total"
            + (f" (+ other: {other})" if other else ""))
    results["load"] = load
    results["footprint"] = foot
    for k, f in foot.items():
        log(f"  {k}: VmRSS {f['VmRSS_kB']} kB, VmHWM {f['VmHWM_kB']} kB, threads {f['threads']}, "
            f"fds {f['fds']}, CPU {f['cpu_percent_schedstat']:.4f}%")
    for group in members.values():
        for s in group:
            s.proc.kill()
            s.wait()


# 6. /leader throughput and latency: wrk against leasehold and nginx, paced 1,000 req/s


def start_nginx(tmp, body):
    root = Path(tmp) / "nginx"
    root.mkdir()
    (root / "leader.json").write_bytes(body)
    port = free_port()
    user = "user root;\n" if os.geteuid() == 0 else ""
    (root / "nginx.conf").write_text(f"""{user}daemon off;
worker_processes 1;
pid {root}/nginx.pid;
error_log {root}/error.log;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {root}/body;
  proxy_temp_path {root}/proxy;
  fastcgi_temp_path {root}/fastcgi;
  uwsgi_temp_path {root}/uwsgi;
  scgi_temp_path {root}/scgi;
  keepalive_requests 100000000;
  keepalive_timeout 120s;
  server {{
    listen 127.0.0.1:{port};
    location = /leader {{ default_type application/json; alias {root}/leader.json; }}
  }}
}}
""")
    proc = subprocess.Popen(["nginx", "-p", str(root), "-c", str(root / "nginx.conf")],
                            stdout=subprocess.DEVNULL, stderr=open(root / "stderr.log", "wb"),
                            start_new_session=True)
    started.append((proc, True))

    def up():
        code, text = http_get(port, "/leader")
        return code == 200 and text.encode() == body
    wait_for("nginx to serve /leader", up, 10)
    return proc, port


def build_pace(tmp):
    exe = Path(tmp) / "pace"
    subprocess.run(["g++", "-std=c++20", "-O2", "-o", str(exe), str(ROOT / "bench" / "pace.cpp")],
                   check=True)
    return exe


def set_fifo(pids, on):
    """SCHED_FIFO priority 10 (on) or back to SCHED_OTHER for these processes and their threads."""
    for pid in pids:
        for tid in os.listdir(f"/proc/{pid}/task"):
            if on:
                os.sched_setscheduler(int(tid), os.SCHED_FIFO, os.sched_param(10))
            else:
                os.sched_setscheduler(int(tid), os.SCHED_OTHER, os.sched_param(0))


def paced(exe, port, seconds, rate=1000, rt_pids=None):
    """Latency at a fixed rate; with rt_pids, those and the client run under SCHED_FIFO."""
    pre = None
    if rt_pids:
        set_fifo(rt_pids, True)
        pre = lambda: os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))  # noqa: E731
    try:
        r = subprocess.run([str(exe), "127.0.0.1", str(port), "/leader", str(rate), str(seconds)],
                           capture_output=True, text=True, timeout=seconds + 30, preexec_fn=pre)
    finally:
        if rt_pids:
            set_fifo(rt_pids, False)
    if not r.stdout.strip():
        raise Failure(f"pace failed: {r.stderr}")
    return json.loads(r.stdout)


def run_http(server, prof, results):
    log(f"http: wrk -t1 -c1/-c64 {prof['wrk_s']} s each, paced 1,000 req/s for {prof['paced_s']} s;"
        " leasehold and nginx (1 worker, static file)")
    env = server.env_for("http")
    s = make_sidecar(server, env, "http-0", "http", DEFAULT_ARGS, "watch")
    s.start()
    wait_for("http-0 to lead", s.leader, 10)
    code, text = http_get(s.port, "/leader")
    body = text.encode()
    exe = build_pace(env.dir)
    nginx, nport = start_nginx(env.dir, body)
    targets = {"leasehold": s.port, "nginx": nport}
    res = {"body_bytes": len(body)}
    for name, port in targets.items():
        r = {}
        for conns in (1, 64):
            w = wrk.run(f"http://127.0.0.1:{port}/leader", conns, prof["wrk_s"])
            r[f"wrk_c{conns}"] = w
            log(f"  {name} c{conns}: {w.get('rps', 0):.0f} req/s, p50 "
                f"{w['latency_us'].get('50%', 0):.0f} us, p99 {w['latency_us'].get('99%', 0):.0f} us")
        rt = None
        if prof.get("rt"):
            rt = [s.proc.pid] if name == "leasehold" else [nginx.pid, *children(nginx.pid)]
        p = paced(exe, port, prof["paced_s"], rt_pids=rt)
        p["sched_fifo"] = bool(rt)
        r["paced_1000"] = p
        log(f"  {name} paced 1000/s: p50 {p['p50_us']:.0f} us, p99 {p['p99_us']:.0f} us, "
            f"p99.9 {p['p999_us']:.0f} us, max {p['max_us']:.0f} us, errors {p['errors']}")
        res[name] = r
    for conns in (1, 64):
        k = f"wrk_c{conns}"
        res[f"ratio_c{conns}"] = res["leasehold"][k].get("rps", 0) / res["nginx"][k]["rps"]
    res["leasehold_after"] = footprint(s.proc.pid)  # did 64 connections grow it?
    os.killpg(nginx.pid, signal.SIGKILL)
    nginx.wait()
    s.proc.kill()
    s.wait()
    results["http"] = res


# ----------------------------------------------------------------------------------------------
# 7. Startup


def startup_series(server, prof, mode):
    n = prof["startup"]
    first, lead = [], []
    for i in range(n):
        lease = f"startup-{short(mode)}{i}-{os.getpid()}"
        env = server.env_for(lease)
        s = make_sidecar(server, env, f"st{short(mode)}-{i}", lease, DEFAULT_ARGS, mode)
        p = LeaderClient(s.port, timeout=0.5)
        t0 = time.monotonic()
        s.start(wait=False)
        t_first = None
        while time.monotonic() - t0 < 10:
            st = p.get()
            now = time.monotonic()
            if st is not None and t_first is None:
                t_first = now - t0
            if st and st.get("leader"):
                lead.append(now - t0)
                break
            time.sleep(0.0005)
        p.close()
        if t_first is None or len(lead) <= i:
            raise Failure(f"startup {i}: no answer/leadership within 10 s:\n{s.logs()}")
        first.append(t_first)
        s.proc.kill()
        s.wait()
    log(f"  {mode}: first answer p50 {pct(first, 50) * 1000:.1f} ms, leadership p50 "
        f"{pct(lead, 50) * 1000:.1f} ms")
    return {"first_answer": summary(first), "leadership": summary(lead)}


def run_startup(server, prof, results):
    # The baseline only when it is another program: poll mode is the same binary.
    modes = [m for m in MODES if m != "poll"]
    log(f"startup: {prof['startup']} repetitions of {', '.join(modes)}, exec -> first /leader "
        "answer -> leadership (fresh Lease)")
    results["startup"] = startup_series(server, prof, "watch")
    if "client-go" in modes:
        results["startup_baseline"] = dict(startup_series(server, prof, "client-go"),
                                           mode="client-go")
