"""bench/run --only zookeeper: `leasehold --store zookeeper` beside kazoo's Election recipe
(bench/kazoo_candidate.py: Debian's python3-kazoo under /usr/bin/python3, the layout leasehold
shares) on one ZooKeeper server (Debian's zookeeper 3.8.0, leasehold_testing's ZooKeeperEnv:
tickTime 100 ms, 4lw mntr and cons), the same server in the same run, one kind after the other
on a path of its own. 3 candidates of each; both ask for the same session timeout, SESSION_S
(leasehold: --zk-session-timeout, with R=1.5s P=0.3s and --zk-server-lag 0s, a single server;
kazoo: KazooClient(timeout=SESSION_S), which pings every timeout/3 less a jitter of 0-0.4 s).

  handover  SIGTERM to the leader -> the next candidate's "became leader" (its log's time).
            leasehold deletes its node; the kazoo candidate ends its term (the recipe's Lock
            deletes its node), then closes its session
  failover  kill -9 of the leader at a random phase of its pings -> the server expires its
            session ("Expiring session" in the server's log, ms resolution) -> the next
            candidate's "became leader"
  requests  packets each candidate's connection sent the server over a window with 3 idle
            candidates (`cons`: recved per session id), per minute, leader and follower; and the
            server's packets_received (`mntr`) over the same window, per candidate
  footprint RSS and threads of the leader and of a follower (/proc)

A candidate stopped by a repetition is started again (same identity), at the back of the queue.
Writes results["zookeeper"]; zookeeper_markdown renders it."""
import datetime
import json
import random
import re
import signal
import subprocess
import time
from pathlib import Path

from leasehold_testing.checks import Failure, check, log, wait_for
from leasehold_testing.kube_time import epoch
from leasehold_testing.ports import free_port
from leasehold_testing.zookeeper_env import (KAZOO_PYTHON, TICK, ZooKeeperEnv, available,
                                             four_letter)
from settings import ROOT, loadavg, started, summary

SESSION_S = 4.0  # the servers' maxSessionTimeout is 40 ticks: 4 s at tickTime 100 ms
R, P = 1.5, 0.3
KAZOO_CANDIDATE = ROOT / "bench/kazoo_candidate.py"
PROFILE = {"smoke": dict(handovers=2, failovers=1, window_s=5),
           "quick": dict(handovers=10, failovers=3, window_s=30),
           "full": dict(handovers=20, failovers=10, window_s=60)}
KINDS = ("leasehold", "kazoo")


class Candidate:
    """One candidate process of either kind, its output in <dir>/<identity>.log."""

    def __init__(self, kind, identity, env, sidecar_bin):
        self.kind, self.identity = kind, identity
        self.log_path = env.dir / f"{identity}.log"
        servers = env.connect_string
        if kind == "leasehold":
            self.args = [sidecar_bin, "--store", "zookeeper", "--zk-servers", servers,
                         "--zk-server-lag", "0s", "--zk-session-timeout", f"{SESSION_S:g}s",
                         "--lease-name", f"bench-{kind}", "--identity", identity,
                         "--lease-duration", f"{SESSION_S:g}s", "--renew-deadline", f"{R}s",
                         "--retry-period", f"{int(P * 1000)}ms", "--log-format", "json",
                         "--http-address", f"127.0.0.1:{free_port()}",
                         "--probe-address", f"127.0.0.1:{free_port()}"]
        else:
            self.args = [KAZOO_PYTHON, str(KAZOO_CANDIDATE), servers, f"/bench-{kind}",
                         identity, str(SESSION_S)]
        self.proc = None

    def start(self):
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(self.args, stdout=out, stderr=subprocess.STDOUT)
        started.append((self.proc, False))
        # Queued once its node is in: leasehold says "new leader observed" or "became leader"
        # after it read the path's children; the kazoo candidate "queued" once its create is
        # answered (or "became leader" first).
        self.t_start = time.time()
        wait_for(f"{self.identity} to queue", lambda: self.lines_since(self.t_start, (
            "became leader", "new leader observed", "queued")), 20, interval=0.01)
        time.sleep(0.1)
        return self

    def entries(self):
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return []
        out = []
        for line in text.splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and "msg" in entry:
                entry["_t"] = entry["t"] if "t" in entry else epoch(entry["ts"])
                out.append(entry)
        return out

    def lines_since(self, t0, msgs):
        return [e for e in self.entries() if e["msg"] in msgs and e["_t"] >= t0]

    def led_at(self, t0):
        """The log time of its first "became leader" at or after t0, else None."""
        found = self.lines_since(t0, ("became leader",))
        return found[0]["_t"] if found else None

    def session_id(self):
        """Its current session's id, as `cons` prints it (0x...)."""
        found = self.lines_since(self.t_start - 1, ("zookeeper session established",))
        return found[-1]["sessionId"] if found else None

    def footprint(self):
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        return {"rss_kib": int(fields["VmRSS"].split()[0]), "threads": int(fields["Threads"])}


def leader_of(candidates, t0, timeout):
    """(candidate, time) of the first "became leader" at or after t0 among `candidates`."""
    def first():
        led = [(c.led_at(t0), c) for c in candidates if c.proc.poll() is None]
        led = [(t, c) for t, c in led if t is not None]
        return min(led, key=lambda x: x[0]) if led else None
    t, c = wait_for("a new leader", first, timeout, interval=0.005)
    return c, t


def connections(port):
    """{session id: {"recved", "sent", "to"}} from `cons` (one line per client connection)."""
    out = {}
    for line in four_letter(port, "cons").splitlines():
        fields = dict(re.findall(r"(\w+)=([^,)]*)", line))
        if "sid" in fields and "recved" in fields:
            out[fields["sid"]] = {"recved": int(fields["recved"]), "sent": int(fields["sent"]),
                                  "to": int(fields.get("to", 0) or 0)}
    return out


def mntr(port):
    out = {}
    for line in four_letter(port, "mntr").splitlines():
        k, _, v = line.partition("\t")
        out[k.strip()] = v.strip()
    return out


def expiries(env):
    """[(time, session id)] of every "Expiring session 0x..." in the server's log (local
    wall-clock HH:MM:SS.mmm, today)."""
    out = []
    today = datetime.date.today()
    for line in (env.dir / f"{env.members[0].name}.log").read_text(errors="replace").splitlines():
        m = re.match(r"(\d\d):(\d\d):(\d\d)\.(\d{3}) .*Expiring session (0x[0-9a-f]+)", line)
        if m:
            h, mi, s, ms = (int(x) for x in m.groups()[:4])
            t = datetime.datetime.combine(today, datetime.time(h, mi, s, ms * 1000)).timestamp()
            out.append((t, m.group(5)))
    return out


def measure(kind, env, sidecar_bin, prof):
    port = env.members[0].port
    candidates = [Candidate(kind, f"{kind}-{i}", env, sidecar_bin).start() for i in range(3)]
    leader, _ = leader_of(candidates, 0, SESSION_S + 10)
    out = {"handover_s": [], "failover_s": [], "failover_expiry_s": [],
           "failover_after_expiry_s": []}

    # requests and footprint, idle, before any disturbance
    time.sleep(2 * P)
    sids = {c.identity: c.session_id() for c in candidates}
    check(all(sids.values()), f"{kind}: every candidate logged its session id: {sids}")
    m0, c0, t0 = mntr(port), connections(port), time.monotonic()
    time.sleep(prof["window_s"])
    m1, c1, t1 = mntr(port), connections(port), time.monotonic()
    per_min = 60 / (t1 - t0)
    recved = {}
    for c in candidates:
        sid = sids[c.identity]
        check(sid in c0 and sid in c1, f"{kind}: {c.identity}'s session {sid} in `cons`")
        recved[c.identity] = round((c1[sid]["recved"] - c0[sid]["recved"]) * per_min, 1)
    follower = next(c for c in candidates if c is not leader)
    out["session_timeout_ms"] = {c.identity: c1[sids[c.identity]]["to"] for c in candidates}
    out["packets_per_min"] = recved
    out["leader_packets_per_min"] = recved[leader.identity]
    out["follower_packets_per_min"] = round(sum(v for k, v in recved.items()
                                                if k != leader.identity) / 2, 1)
    out["server_packets_per_min_per_candidate"] = round(
        (int(m1["zk_packets_received"]) - int(m0["zk_packets_received"])) * per_min
        / len(candidates), 1)
    out["leader"], out["follower"] = leader.footprint(), follower.footprint()

    def replace(old):
        old.proc.wait(timeout=10)
        fresh = Candidate(kind, old.identity, env, sidecar_bin).start()
        candidates[candidates.index(old)] = fresh

    for rep in range(prof["handovers"]):
        t0 = time.time()
        leader.proc.send_signal(signal.SIGTERM)
        new, t1 = leader_of([c for c in candidates if c is not leader], t0, SESSION_S + 5)
        out["handover_s"].append(t1 - t0)
        replace(leader)
        leader = new
        time.sleep(2 * P)
    for rep in range(prof["failovers"]):
        # at a random phase of either kind's pings (kazoo's come every timeout/3 less a
        # jitter): right after the new leader's reads, the server would have heard of a kazoo
        # leader just now, of leasehold's within P, whenever the kill comes
        time.sleep(2 * P + random.uniform(0, SESSION_S / 3))
        sid = leader.session_id()
        t0 = time.time()
        leader.proc.kill()
        new, t1 = leader_of([c for c in candidates if c is not leader], t0, 2 * SESSION_S + 5)
        expired = wait_for(f"the server to log the expiry of {sid}", lambda: next(
            (t for t, s in expiries(env) if s == sid), None), 5, interval=0.05)
        out["failover_s"].append(t1 - t0)
        out["failover_expiry_s"].append(expired - t0)
        out["failover_after_expiry_s"].append(t1 - expired)
        log(f"zookeeper {kind}: kill -9 -> expiry {expired - t0:.3f}s -> new leader "
            f"{(t1 - expired) * 1000:.1f} ms")
        replace(leader)
        leader = new
    for c in candidates:
        c.proc.send_signal(signal.SIGTERM)
    for c in candidates:
        c.proc.wait(timeout=10)
    log(f"zookeeper {kind}: handover p50 {summary(out['handover_s'])['p50'] * 1000:.1f} ms; "
        f"{out['follower_packets_per_min']} packets/min per idle follower")
    return {**{k: summary(out[k]) for k in ("handover_s", "failover_s", "failover_expiry_s",
                                            "failover_after_expiry_s")},
            **{k: v for k, v in out.items() if not k.endswith("_s")}, "raw": out}


# bench/run's server for this section (settings.SectionServer).
ZOOKEEPER_SERVER = "one ZooKeeper server (Debian's zookeeper 3.8.0, leasehold_testing's " \
    "ZooKeeperEnv: loopback, tickTime 100 ms)"


def run_zookeeper(sidecar_bin, profile, results):
    why = available()
    if why:
        raise Failure(f"no ZooKeeper: {why}")
    prof = PROFILE[profile]
    res = results["zookeeper"] = {"timings": f"session timeout {SESSION_S:g}s (leasehold R={R}s "
                                  f"P={P}s, --zk-server-lag 0s)", **prof,
                                  "tick_ms": round(TICK * 1000), "loadavg_start": loadavg()}
    res["kazoo_version"] = subprocess.run([KAZOO_PYTHON, "-c", "import kazoo.version as v; "
                                   "print(v.__version__)"], capture_output=True,
                                  text=True).stdout.strip()
    with ZooKeeperEnv(sidecar_bin, lease="bench") as env:
        version = mntr(env.members[0].port).get("zk_version", "?")
        res["zookeeper"] = version.split("-")[0].split(",")[0]
        for kind in KINDS:
            res[kind] = measure(kind, env, sidecar_bin, prof)
    check(res["leasehold"]["handover_s"]["n"] == prof["handovers"], "every handover measured")
    res["loadavg_end"] = loadavg()


def zookeeper_markdown(Z):
    L, K = Z["leasehold"], Z["kazoo"]

    def ms(x, key):
        s = x[key]
        return f"{s['p50'] * 1000:.1f} / {s['p99'] * 1000:.1f} ms"

    def sec(x, key):
        s = x[key]
        return f"{s['p50']:.2f} / {s['max']:.2f} s"

    def foot(x, role):
        f = x[role]
        return f"{f['rss_kib'] / 1024:.1f} MiB, {f['threads']} threads"

    def timeouts(x):
        return "/".join(sorted({f"{v} ms" for v in x["session_timeout_ms"].values()}))
    rows = [
        (f"SIGTERM of the leader -> next leader, p50 / p99 ({Z['handovers']} each)",
         ms(L, "handover_s"), ms(K, "handover_s")),
        (f"kill -9 -> next leader, p50 / max ({Z['failovers']} each)", sec(L, "failover_s"),
         sec(K, "failover_s")),
        ("kill -9 -> the server expires the session, p50 / max", sec(L, "failover_expiry_s"),
         sec(K, "failover_expiry_s")),
        ("the session's expiry (server log, ms) -> next leader, p50 / p99",
         ms(L, "failover_after_expiry_s"), ms(K, "failover_after_expiry_s")),
        ("session timeout negotiated (`cons` to=)", timeouts(L), timeouts(K)),
        (f"packets per minute from the leader's connection, idle ({Z['window_s']} s, `cons` "
         "recved)", f"{L['leader_packets_per_min']:.0f}", f"{K['leader_packets_per_min']:.0f}"),
        ("packets per minute from each follower's connection, idle",
         f"{L['follower_packets_per_min']:.0f}", f"{K['follower_packets_per_min']:.0f}"),
        ("server's packets_received per minute per candidate (`mntr`, same window)",
         f"{L['server_packets_per_min_per_candidate']:.0f}",
         f"{K['server_packets_per_min_per_candidate']:.0f}"),
        ("leader: RSS, threads", foot(L, "leader"), foot(K, "leader")),
        ("follower: RSS, threads", foot(L, "follower"), foot(K, "follower")),
    ]
    md = [f"## On ZooKeeper: 3 candidates, {Z['timings']}, ZooKeeper {Z['zookeeper']} "
          f"(tickTime {Z['tick_ms']} ms), kazoo {Z['kazoo_version']}", "",
          "| measure | leasehold --store zookeeper | kazoo's Election (bench/kazoo_candidate.py) |",
          "|---|---|---|"]
    md += ["| " + " | ".join(r) + " |" for r in rows]
    md += ["", "No goals: the figures beside kazoo's, on the same server in the same run.", "",
           "Method (bench/zookeeper.py). One ZooKeeper server on loopback (leasehold_testing's "
           f"ZooKeeperEnv: tickTime {Z['tick_ms']} ms, session timeouts 2-40 ticks, forceSync=no, "
           "4lw mntr and cons), used by both kinds one after the other, each on a path of its "
           "own. 3 candidates of each kind, started one by one (each queued before the next); a "
           "candidate stopped by a repetition is started again with the same identity, at the "
           "back of the queue. Both ask for the same session timeout (leasehold "
           "`--zk-session-timeout`, kazoo `KazooClient(timeout=...)`); `cons` shows what the "
           "server granted. leasehold: `--renew-deadline 1.5s --retry-period 300ms "
           "--zk-server-lag 0s` (a single server), so it pings every 0.3 s; kazoo pings when "
           "its connection has been quiet for timeout/3 less a random 0-0.4 s. The kazoo "
           "candidate (bench/kazoo_candidate.py) runs `Election(path, identity).run(lead)` in "
           "a thread; SIGTERM (taken by sigwait in the main thread) ends a leader's term, so "
           "the recipe's Lock deletes its node, or cancels a queued acquire, then closes the "
           "session. Handover: the bench's clock at the SIGTERM -> the new leader's own "
           "\"became leader\" log line (same host clock). Failover: kill -9 -> the server's "
           "\"Expiring session 0x...\" log line (its clock, ms) -> \"became leader\"; the kill "
           "closes the socket at once, so the server last heard of the session at its last "
           "ping, up to one ping interval before the kill, and expires it on the first tick "
           "boundary after that + the timeout: kill -> expiry lies in [T - ping interval, "
           "T + tick]. Packets: `cons` recved of each candidate's session over the idle window "
           "(3 candidates, before any disturbance), and `mntr` zk_packets_received over the "
           "same window / 3. RSS and threads: /proc/PID/status of the candidate process (the "
           "sidecar; the kazoo Python process) at the end of that window."]
    return "\n".join(md)
