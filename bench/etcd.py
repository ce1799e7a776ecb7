"""bench/run --only etcd (issue 25): `leasehold --store etcd` beside etcd's own election
(bench/etcdgo: client/v3/concurrency v3.6.16, a session of TTL D, Campaign, and Resign + the
session's revoke on SIGTERM) on one real etcd member (tests/realkube's etcd 3.6, plain HTTP on
loopback, fsync on). 3 candidates of each, one after the other, at D=2s (leasehold R=1.5s
P=0.3s; the Go session keeps its lease alive every D/3):

  handover  SIGTERM to the leader -> the next candidate's "became leader" (its log's time)
  failover  kill -9 of the leader: the kill -> the deletion of its key (the lease expired on the
            server; an `etcdctl watch` of the bench sees it) -> the next candidate's "became
            leader". Goal: the second within 50 ms
  requests  etcd's grpc_server_started_total and grpc_server_msg_received_total over a window
            with 3 idle candidates (the JSON gateway's calls reach etcd's gRPC server too), per
            candidate per minute
  footprint RSS and threads of the leader and of a follower

A candidate stopped by a repetition is started again (same identity), at the back of the queue.
Writes results["etcd"]; etcd_markdown renders it."""
import json
import os
import signal
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from leasehold_testing.checks import Failure, check, log, wait_for
from leasehold_testing.kube_time import epoch
from leasehold_testing.ports import free_port
from settings import GOALS, REALKUBE_BIN, ROOT, loadavg, started, summary

D, R, P = 2, 1.5, 0.3
ETCDGO_BIN = ROOT / "build/bench/etcdgo"
ETCDCTL_BIN = ROOT / "build/etcdctl/etcdctl"
PROFILE = {"smoke": dict(handovers=2, failovers=1, window_s=5),
           "quick": dict(handovers=10, failovers=3, window_s=30),
           "full": dict(handovers=30, failovers=10, window_s=60)}
ELECTION = "bench"


class Member:
    """One etcd member on loopback (plain HTTP) in `directory`."""

    def __init__(self, directory):
        self.port, peer = free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        peer_url = f"http://127.0.0.1:{peer}"
        self.proc = subprocess.Popen(
            [str(REALKUBE_BIN / "etcd"), "--data-dir", str(directory / "etcd"),
             "--listen-client-urls", self.url, "--advertise-client-urls", self.url,
             "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
             "--initial-cluster", f"default={peer_url}"],
            stdout=open(directory / "etcd.log", "ab"), stderr=subprocess.STDOUT)
        started.append((self.proc, False))
        wait_for("etcd to answer /health", self.healthy, 30, interval=0.1)

    def healthy(self):
        try:
            with urllib.request.urlopen(self.url + "/health", timeout=1) as r:
                return json.loads(r.read()).get("health") == "true"
        except (OSError, ValueError):
            return False

    def counters(self):
        """(gRPC calls started, messages received), each summed over every method: a unary
        call is one of each; the Go client's keep-alives are messages on one long stream; each
        JSON gateway request is a call of its own."""
        with urllib.request.urlopen(self.url + "/metrics", timeout=5) as r:
            text = r.read().decode()

        def total(name):
            return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                       if line.startswith(name + "{"))
        return total("grpc_server_started_total"), total("grpc_server_msg_received_total")


class Candidate:
    """One candidate process of either kind, its output in <dir>/<identity>.log."""

    def __init__(self, kind, identity, member, directory, sidecar_bin):
        self.kind, self.identity = kind, identity
        self.log_path = directory / f"{identity}.log"
        if kind == "leasehold":
            self.args = [sidecar_bin, "--store", "etcd", "--etcd-endpoints", member.url,
                         "--lease-name", ELECTION, "--identity", identity,
                         "--lease-duration", f"{D}s", "--renew-deadline", f"{R}s",
                         "--retry-period", f"{int(P * 1000)}ms", "--log-format", "json",
                         "--http-address", f"127.0.0.1:{free_port()}",
                         "--probe-address", f"127.0.0.1:{free_port()}"]
        else:
            self.args = [str(ETCDGO_BIN), "-endpoints", member.url, "-name", ELECTION,
                         "-identity", identity, "-ttl", str(D)]
        self.proc = None

    def start(self):
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(self.args, stdout=out, stderr=subprocess.STDOUT)
        started.append((self.proc, False))
        # Queued once its key is in: leasehold says "new leader observed" or "became leader"
        # after its first read; the Go candidate says "campaigning" after its lease grant,
        # before its key's put, so a little more.
        wait_for(f"{self.identity} to queue", lambda: self.lines_since(0, (
            "became leader", "new leader observed", "campaigning")), 10, interval=0.01)
        time.sleep(0.1)
        return self

    def lines_since(self, t0, msgs):
        out = []
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return out
        for line in text.splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("msg") in msgs and epoch(entry["ts"]) >= t0:
                out.append(entry)
        return out

    def led_at(self, t0):
        """The log time of its first "became leader" at or after t0, else None."""
        found = self.lines_since(t0, ("became leader",))
        return epoch(found[0]["ts"]) if found else None

    def footprint(self):
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        return {"rss_kib": int(fields["VmRSS"].split()[0]), "threads": int(fields["Threads"])}


class Deletions:
    """`etcdctl watch --prefix ELECTION/`: the arrival time of each DELETE."""

    def __init__(self, member):
        self.times = []
        self.proc = subprocess.Popen([str(ETCDCTL_BIN), "--endpoints", member.url, "watch",
                                      "--prefix", ELECTION + "/"], stdout=subprocess.PIPE,
                                     text=True)
        started.append((self.proc, False))
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            if line.strip() == "DELETE":
                self.times.append(time.time())

    def after(self, t0):
        later = [t for t in self.times if t >= t0]
        return later[0] if later else None


def leader_of(candidates, t0, timeout):
    """(candidate, time) of the first "became leader" at or after t0 among `candidates`."""
    def first():
        led = [(c.led_at(t0), c) for c in candidates if c.proc.poll() is None]
        led = [(t, c) for t, c in led if t is not None]
        return min(led, key=lambda x: x[0]) if led else None
    t, c = wait_for("a new leader", first, timeout, interval=0.005)
    return c, t


def measure(kind, member, directory, sidecar_bin, prof):
    deletions = Deletions(member)
    candidates = [Candidate(kind, f"{kind}-{i}", member, directory, sidecar_bin).start()
                  for i in range(3)]
    leader, _ = leader_of(candidates, 0, D + 5)
    out = {"handover_s": [], "failover_after_expiry_s": [], "failover_expiry_s": []}

    # requests and footprint, idle, before any disturbance
    time.sleep(2 * P)
    c0, t0 = member.counters(), time.monotonic()
    time.sleep(prof["window_s"])
    c1, t1 = member.counters(), time.monotonic()
    calls, messages = ((b - a) / (t1 - t0) * 60 / len(candidates) for a, b in zip(c0, c1))
    follower = next(c for c in candidates if c is not leader)
    out["calls_per_min_per_candidate"] = round(calls, 1)
    out["messages_per_min_per_candidate"] = round(messages, 1)
    out["leader"], out["follower"] = leader.footprint(), follower.footprint()

    def replace(old):
        old.proc.wait(timeout=10)
        fresh = Candidate(kind, old.identity, member, directory, sidecar_bin).start()
        candidates[candidates.index(old)] = fresh

    for rep in range(prof["handovers"]):
        t0 = time.time()
        leader.proc.send_signal(signal.SIGTERM)
        new, t1 = leader_of([c for c in candidates if c is not leader], t0, D + 5)
        out["handover_s"].append(t1 - t0)
        replace(leader)
        leader = new
        time.sleep(2 * P)
    for rep in range(prof["failovers"]):
        time.sleep(2 * P)
        t0 = time.time()
        leader.proc.kill()
        new, t1 = leader_of([c for c in candidates if c is not leader], t0, 2 * D + 5)
        deleted = wait_for("the leader's key deleted", lambda: deletions.after(t0), 5)
        out["failover_expiry_s"].append(deleted - t0)
        out["failover_after_expiry_s"].append(t1 - deleted)
        log(f"etcd {kind}: kill -9 -> deletion {deleted - t0:.3f}s -> new leader "
            f"{(t1 - deleted) * 1000:.1f} ms")
        replace(leader)
        leader = new
    for c in candidates:
        c.proc.send_signal(signal.SIGTERM)
    for c in candidates:
        c.proc.wait(timeout=10)
    deletions.proc.kill()
    log(f"etcd {kind}: handover p50 {summary(out['handover_s'])['p50'] * 1000:.1f} ms; "
        f"{out['messages_per_min_per_candidate']} etcd messages/min per candidate")
    return {"handover_s": summary(out["handover_s"]),
            "failover_after_expiry_s": summary(out["failover_after_expiry_s"]),
            "failover_expiry_s": summary(out["failover_expiry_s"]),
            "calls_per_min_per_candidate": out["calls_per_min_per_candidate"],
            "messages_per_min_per_candidate": out["messages_per_min_per_candidate"],
            "leader": out["leader"], "follower": out["follower"], "raw": out}


# bench/run's server for this section (settings.SectionServer).
ETCD_SERVER = "one etcd member (tests/realkube's etcd, plain HTTP on loopback)"


def build_etcdgo():
    subprocess.run([str(ROOT / "bench/etcdgo/build.sh"), str(ETCDGO_BIN)], check=True)


def run_etcd(sidecar_bin, profile, results):
    for b in (REALKUBE_BIN / "etcd", ETCDCTL_BIN):
        if not os.access(b, os.X_OK):
            raise Failure(f"{b} not found: tests/realkube/build.sh and tests/etcdctl/build.sh")
    prof = PROFILE[profile]
    res = results["etcd"] = {"timings": f"D={D}s R={R}s P={P}s", **prof,
                             "loadavg_start": loadavg()}
    version = subprocess.run([str(REALKUBE_BIN / "etcd"), "--version"], capture_output=True,
                             text=True).stdout.splitlines()[0]
    res["etcd"] = version
    for kind in ("leasehold", "etcd-election"):
        with tempfile.TemporaryDirectory(prefix=f"leasehold-bench-etcd-{kind}-") as d:
            member = Member(Path(d))
            try:
                res[kind] = measure(kind, member, Path(d), sidecar_bin, prof)
            finally:
                member.proc.kill()
                member.proc.wait(timeout=10)
    check(res["leasehold"]["handover_s"]["n"] == prof["handovers"], "every handover measured")
    res["loadavg_end"] = loadavg()


def etcd_markdown(E):
    L, G = E["leasehold"], E["etcd-election"]

    def ms(x, key):
        s = x[key]
        return f"{s['p50'] * 1000:.1f} / {s['p99'] * 1000:.1f} ms"

    def foot(x, role):
        f = x[role]
        return f"{f['rss_kib'] / 1024:.1f} MiB, {f['threads']} threads"
    rows = [
        (f"SIGTERM of the leader -> next leader, p50 / p99 ({E['handovers']} each)",
         ms(L, "handover_s"), ms(G, "handover_s")),
        (f"kill -9: the key's deletion (lease expired on the server) -> next leader, p50 / p99 "
         f"({E['failovers']} each)", ms(L, "failover_after_expiry_s"),
         ms(G, "failover_after_expiry_s")),
        ("kill -9 -> the key's deletion, p50", f"{L['failover_expiry_s']['p50']:.2f} s",
         f"{G['failover_expiry_s']['p50']:.2f} s"),
        (f"etcd gRPC calls / messages per minute per candidate, 3 idle candidates "
         f"({E['window_s']} s; leasehold keeps alive every P, the Go session every D/3)",
         f"{L['calls_per_min_per_candidate']:.0f} / {L['messages_per_min_per_candidate']:.0f}",
         f"{G['calls_per_min_per_candidate']:.0f} / {G['messages_per_min_per_candidate']:.0f}"),
        ("leader: RSS, threads", foot(L, "leader"), foot(G, "leader")),
        ("follower: RSS, threads", foot(L, "follower"), foot(G, "follower")),
    ]
    md = [f"## On etcd (issue 25): 3 candidates, {E['timings']}, {E['etcd']}", "",
          "| measure | leasehold --store etcd | etcd's concurrency.Election (Go, bench/etcdgo) |",
          "|---|---|---|"]
    md += ["| " + " | ".join(r) + " |" for r in rows]
    md += ["", f"Goals (leasehold, p99): the next leader within "
           f"{GOALS['etcd_failover_after_expiry_p99_s'] * 1000:.0f} ms of the deletion, "
           f"SIGTERM handover within {GOALS['etcd_handover_p99_s'] * 1000:.0f} ms."]
    return "\n".join(md)
