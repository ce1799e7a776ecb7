"""bench/run --only shards: the goals of issue 15 (shard mode, --shards 16).

Takeovers (scaled timings D=2s R=1.5s P=0.3s), per repetition on a fresh shard group (its own
group name, so no Lease is left from before): 4 replicas balanced (4 shards each), then
  - join: a 5th starts; the time from just before its exec until every replica's /shards
    shows balance (each of the 16 owned exactly once, 3-4 each, all seeing 5 members), and the
    shards whose owner changed against the fewest any balanced assignment must move
    (floor(16/5) = 3, all to the newcomer);
  - term: SIGTERM of a random member; the time until the others' /shards list all of its shards;
  - kill: kill -9 of another member; the same time (the goal: within D + P).
/shards is polled over kept-alive connections, one pass over the replicas every ~1-3 ms; no
ShardObserver runs beside it (its 10 ms samplers would share the 2 cores with what is timed:
the integration suite tests/integration/shard_scenarios.py checks safety; this measures).

API cost at the default 15s/10s/2s: 5 replicas of a 16-shard group, balanced, settled, then
every request in a fixed window from the audit log (real server; the test server's counters
say only verb and resource), split by the Lease it names: shard renewals (NAME-i), membership
(NAME-member-*), the group's list/watch; GETs of shard Leases in the window (the goal: 0).
Beside it, Knative's pattern with real client-go: one elector per shard per replica, 16 x 5
bench/clientgo processes, replica r's 16 as one ServiceAccount, each on the Lease NAME-i.

Every process is killed when its part ends and, on any exception, by the envs' exit."""
import random
import signal
import time

from leasehold_testing import Failure, log
from leasehold_testing.leader_sampler import LeaderClient
from leasehold_testing.shard_sampler import balance_problem, wait_balanced
from servers import ClientGoElector
from settings import (DEFAULT_ARGS, SCALED, SCALED_ARGS, SIDECAR_EXTRA, VERBS, loadavg,
                      summary)

N = 16
M = 4
GOALS = {"join_s": 1.0, "term_p99_s": 0.100, "kill_p99_s": SCALED["D"] + SCALED["P"],
         "follower_gets": 0}


def replica(server, env, group, name, timings):
    kc = server.kubeconfig(env, name)
    return env.sidecar(name, lease=group, kubeconfig=kc, timings=timings,
                       extra_args=["--shards", str(N), *SIDECAR_EXTRA])


def owned_now(clients):
    """{name: set of shards} from one pass over the kept-alive clients (None: no answer)."""
    out = {}
    for name, c in clients.items():
        st = c.get()
        out[name] = None if st is None else {o["shard"] for o in st["owned"]}
    return out


def wait_taken(clients, shards, timeout):
    """Seconds until the union of the clients' owned sets holds `shards` (None on timeout)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        have = set()
        for s in owned_now(clients).values():
            have |= s or set()
        if shards <= have:
            return time.monotonic() - t0
        time.sleep(0.001)
    return None


def one_rep(server, env, rep, prof):
    """One group: 4 balanced, join a 5th, SIGTERM one, kill -9 another."""
    group = f"sh{rep}-{random.randrange(1 << 16):04x}"
    sidecars = [replica(server, env, group, f"{group}-r{i}", SCALED_ARGS) for i in range(M)]
    try:
        for s in sidecars:
            s.start(wait=False)
        before = wait_balanced(sidecars, N, timeout=20)
        time.sleep(0.5 + random.uniform(0, SCALED["P"]))  # a random phase against the renewals
        newcomer = replica(server, env, group, f"{group}-r{M}", SCALED_ARGS)
        five = sidecars + [newcomer]
        t0 = time.monotonic()
        newcomer.start(wait=False)
        join_s, why = None, None
        while time.monotonic() - t0 < 10:
            why = balance_problem(five, N)
            if why is None:
                join_s = time.monotonic() - t0
                break
            time.sleep(0.002)
        if join_s is None:
            raise Failure(f"shards rep {rep}: not balanced 10 s after the 5th started: {why}")
        after = wait_balanced(five, N, timeout=1)
        moved = sorted(i for i in range(N) if before[i] != after[i])
        counts = {s.name: sum(1 for o in after.values() if o == s.name) for s in five}
        # The fewest moves to a balanced state from 4 x 4: the newcomer needs floor(16/5).
        minimum = max(N // (M + 1), sum(max(0, c - -(-N // (M + 1))) for c in
                                        (sum(1 for o in before.values() if o == s.name)
                                         for s in sidecars)))
        res = {"group": group, "join_s": join_s, "moved": len(moved), "moved_min": minimum,
               "moved_to_newcomer": all(after[i] == newcomer.name for i in moved),
               "counts_after_join": sorted(counts.values())}
        time.sleep(0.5 + random.uniform(0, SCALED["P"]))
        for kind, sig in (("term", signal.SIGTERM), ("kill", signal.SIGKILL)):
            live = [s for s in five if s.alive()]
            owners = wait_balanced(live, N, timeout=10)
            victim = random.choice(live)
            its = {i for i, o in owners.items() if o == victim.name}
            clients = {s.name: LeaderClient(s.port, timeout=0.5, path="/shards")
                       for s in live if s is not victim}
            owned_now(clients)  # connect before the clock starts
            t0 = time.monotonic()
            victim.signal(sig)
            took = wait_taken(clients, its, SCALED["D"] + 5)
            for c in clients.values():
                c.close()
            rc = victim.reap(5)
            if took is None:
                raise Failure(f"shards rep {rep} {kind}: {sorted(its)} not owned by others "
                              f"{SCALED['D'] + 5} s after the signal")
            res[kind] = {"t": took, "shards": len(its), "exit": rc}
            time.sleep(0.3)
        log(f"  rep {rep}: join balanced {join_s * 1000:.0f} ms, moved {len(moved)} (min "
            f"{minimum}) {res['counts_after_join']}; SIGTERM {res['term']['t'] * 1000:.1f} ms "
            f"({res['term']['shards']} shards); kill -9 {res['kill']['t']:.3f} s "
            f"({res['kill']['shards']} shards)")
        return res
    finally:
        for s in sidecars + ([newcomer] if "newcomer" in locals() else []):
            s.kill()
            s.reap(2)


def lease_name_of(e):
    return (e.get("objectRef") or {}).get("name") or ""


def cost_window(server, env, group, users, prof):
    """{by_verb, shard, membership, group_watch, shard_gets, per_min...} over the window."""
    time.sleep(prof["settle_s"])
    offset = server.plane.audit.size()
    t0 = time.monotonic()
    time.sleep(prof["window_s"])
    minutes = (time.monotonic() - t0) / 60.0
    time.sleep(0.3)  # the audit log is written as requests finish
    mine = {env.client_name(u) for u in users}
    by_verb, parts, shard_gets = {}, {}, 0
    for e in server.plane.audit.events(offset):
        ref = e.get("objectRef") or {}
        if ref.get("resource") != "leases" or e["user"]["username"] not in mine:
            continue
        verb, name = e["verb"], lease_name_of(e)
        by_verb[verb] = by_verb.get(verb, 0) + 1
        part = ("membership" if name.startswith(f"{group}-member-") else
                "shards" if name.startswith(f"{group}-") else "group list/watch")
        key = f"{part}:{verb}"
        parts[key] = parts.get(key, 0) + 1
        if part == "shards" and verb in ("get", "list"):
            shard_gets += 1
    per = lambda d: {k: round(v / minutes, 1) for k, v in sorted(d.items())}  # noqa: E731
    return {"window_s": round(minutes * 60, 1), "loadavg": loadavg(),
            "per_min_by_verb": {v: round(by_verb[v] / minutes, 1) for v in VERBS if v in by_verb},
            "per_min_total": round(sum(by_verb.values()) / minutes, 1),
            "per_min_by_part": per(parts), "shard_gets_in_window": shard_gets}


def cost_leasehold(server, env, prof):
    group = f"cost-{random.randrange(1 << 16):04x}"
    users = [f"{group}-r{i}" for i in range(M + 1)]
    sidecars = [replica(server, env, group, u, DEFAULT_ARGS) for u in users]
    log(f"shards: API cost, leasehold, {N} shards x {M + 1} replicas at 15s/10s/2s, "
        f"{prof['window_s']} s window")
    try:
        for s in sidecars:
            s.start(wait=False)
        t0 = time.monotonic()
        wait_balanced(sidecars, N, timeout=60)
        log(f"  balanced {time.monotonic() - t0:.1f} s after the start")
        res = cost_window(server, env, group, users, prof)
        if not all(s.alive() for s in sidecars):
            raise Failure("shards cost: a replica exited during the window")
        wait_balanced(sidecars, N, timeout=5)  # still balanced: a steady state was measured
    finally:
        for s in sidecars:
            s.kill()
            s.reap(2)
    parts = res["per_min_by_part"]
    res["shard_renewals_per_min"] = parts.get("shards:update", 0)
    res["membership_per_min"] = round(sum(v for k, v in parts.items()
                                          if k.startswith("membership:")), 1)
    res["expected"] = {"shard_renewals": N * 60 / 2.0, "membership": (M + 1) * 60 / 5.0}
    log(f"  {res['per_min_total']} requests/min {res['per_min_by_verb']}: shard renewals "
        f"{res['shard_renewals_per_min']}, membership {res['membership_per_min']}, shard GETs "
        f"in the window {res['shard_gets_in_window']}")
    return res


def cost_clientgo(server, env, prof):
    group = f"cgo-{random.randrange(1 << 16):04x}"
    users = [f"{group}-r{r}" for r in range(M + 1)]
    kcs = {u: server.kubeconfig(env, u) for u in users}
    log(f"shards: API cost, client-go electors per shard, {N} x {M + 1} processes")
    electors = []
    try:
        for r, u in enumerate(users):
            for i in range(N):
                e = ClientGoElector(env, f"{u}-s{i}", f"{group}-{i}", kcs[u], DEFAULT_ARGS)
                env.sidecars.append(e)
                electors.append(e)
                e.start(wait=False)
        res = cost_window(server, env, group, users, prof)
        dead = [e.name for e in electors if not e.alive()]
        if dead:
            raise Failure(f"shards cost client-go: exited during the window: {dead[:5]}")
    finally:
        for e in electors:
            e.kill()
        for e in electors:
            e.reap(2)
    log(f"  {res['per_min_total']} requests/min {res['per_min_by_verb']}")
    return res


def run_shards(server, prof, results):
    P = prof["shards"]
    if not getattr(server, "real", False):
        log("shards: on the test API server the cost part is skipped (its counters do not "
            "say which Lease a request named)")
    env = server.env_for("shards", chart_values={"shards": N})
    out = {"settings": dict(P, shards=N, replicas=M, join_to=M + 1), "runs": []}
    results["shards"] = out
    log(f"shards: {P['reps']} repetitions of 4 replicas x {N} shards, join, SIGTERM, kill -9 "
        "(D=2s R=1.5s P=0.3s)")
    for rep in range(P["reps"]):
        out["runs"].append(one_rep(server, env, rep, P))
    out["join_s"] = summary([r["join_s"] for r in out["runs"]])
    out["term_s"] = summary([r["term"]["t"] for r in out["runs"]])
    out["kill_s"] = summary([r["kill"]["t"] for r in out["runs"]])
    out["moved_extra_max"] = max(r["moved"] - r["moved_min"] for r in out["runs"])
    if getattr(server, "real", False):
        out["cost"] = {"leasehold": cost_leasehold(server, env, P),
                       "client-go": cost_clientgo(server, env, P)}


# ----------------------------------------------------------------------------------------------
# Report


def shards_goals(S):
    """{name: (value, met, goal text)}."""
    g = {}
    j = S["join_s"]
    g["shards_join"] = (j["max"], j["max"] <= GOALS["join_s"] and S["moved_extra_max"] == 0 and
                        all(r["moved_to_newcomer"] for r in S["runs"]),
                        "balanced <= 1 s, no extra move")
    g["shards_term"] = (S["term_s"]["p99"], S["term_s"]["p99"] <= GOALS["term_p99_s"],
                        "p99 <= 100 ms")
    g["shards_kill"] = (S["kill_s"]["p99"], S["kill_s"]["p99"] <= GOALS["kill_p99_s"],
                        "p99 <= D + P = 2.3 s")
    if "cost" in S:
        c = S["cost"]["leasehold"]
        g["shards_follower_gets"] = (c["shard_gets_in_window"], c["shard_gets_in_window"] == 0,
                                     "0 GETs of shard Leases")
    return g


def shards_markdown(S):
    from report import fmt_ms, verdict  # here: report imports this module
    n = len(S["runs"])
    goals = shards_goals(S)
    j, t, k = S["join_s"], S["term_s"], S["kill_s"]
    moved = ", ".join(f"{r['moved']}/{r['moved_min']}" for r in S["runs"])
    rows = [
        ("5th replica joins 4 (16 shards): start -> balanced, p50 / p99 / max",
         f"{fmt_ms(j['p50'])} / {fmt_ms(j['p99'])} / {fmt_ms(j['max'])}; shards moved / minimum:"
         f" {moved}", goals["shards_join"][2], verdict(goals["shards_join"][1])),
        ("SIGTERM of a member: its shards owned by others, p50 / p99 / max",
         f"{fmt_ms(t['p50'])} / {fmt_ms(t['p99'])} / {fmt_ms(t['max'])}",
         goals["shards_term"][2], verdict(goals["shards_term"][1])),
        ("kill -9 of a member: its shards owned by others, p50 / p99 / max",
         f"{fmt_ms(k['p50'])} / {fmt_ms(k['p99'])} / {fmt_ms(k['max'])}",
         goals["shards_kill"][2], verdict(goals["shards_kill"][1])),
    ]
    md = [f"## Shards (issue 15): {N} shards, {M} replicas + 1, {n} repetitions, scaled timings "
          "D=2s R=1.5s P=0.3s", "", "| measure | leasehold | goal | |", "|---|---|---|---|"]
    md += ["| " + " | ".join(r) + " |" for r in rows]
    if "cost" in S:
        c, g = S["cost"]["leasehold"], S["cost"]["client-go"]
        fv = lambda d: ", ".join(f"{v} {x:.1f}" for v, x in d.items()) or "0"  # noqa: E731
        md += [f"| Lease API requests/min, {N} shards x {M + 1} replicas, 15s/10s/2s, "
               f"{c['window_s']:.0f} s window: total (by verb) | {c['per_min_total']:.1f} "
               f"({fv(c['per_min_by_verb'])}); shard renewals {c['shard_renewals_per_min']:.1f} "
               f"(expected {c['expected']['shard_renewals']:.0f}), membership "
               f"{c['membership_per_min']:.1f} (expected {c['expected']['membership']:.0f}) | "
               f"| |",
               f"| followers of a shard: GETs of shard Leases in the window | "
               f"{c['shard_gets_in_window']} | {goals['shards_follower_gets'][2]} | "
               f"{verdict(goals['shards_follower_gets'][1])} |",
               f"| the same with client-go electors per shard (Knative's pattern, "
               f"{N} x {M + 1} processes), total (by verb) | {g['per_min_total']:.1f} "
               f"({fv(g['per_min_by_verb'])}); ratio leasehold/client-go "
               f"{c['per_min_total'] / g['per_min_total']:.3f} | | |",
               "", "leasehold's requests/min by part: " + ", ".join(
                   f"{k} {v}" for k, v in c["per_min_by_part"].items())]
    return "\n".join(md)
