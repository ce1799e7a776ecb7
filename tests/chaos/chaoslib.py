"""Building blocks for the chaos, soak and load runs (Python standard library only).

On top of tests/integration/harness.py (Env, Sidecar, timings), which is imported, not copied:

- Incarnation: one sidecar *process* (a slot = one API client/token, an identity, a generation).
  A restarted replica is a new incarnation, so claims are never attributed to the wrong process.
- Sampler: one thread per incarnation asking GET /leader every ~10 ms over a keep-alive
  connection. One thread each, so a SIGSTOPped sidecar (whose kernel still accepts connections
  and then never answers) cannot stall the sampling of the others.
- FencedWriter + FencedStore: the application side. A writer per incarnation reads /leader and,
  when leader, (maybe pauses, then) writes (token, seq) to SQLite with the conditional write of
  the README: `UPDATE fence SET token = :t WHERE token <= :t`.
- LeaseHistory: a watch on the Lease (as admin) that records every write the API server applied,
  resuming from the last resourceVersion when cut. It is the ground truth for terms and tokens,
  including terms the samplers could not see.
- sampled_terms / history_terms / check_*: the safety checks (see their docstrings for what
  sampling can and cannot prove).
- proc_stats: RSS, open fds and threads of a pid from /proc (soak).
"""
import http.client
import json
import os
import signal
import sqlite3
import ssl
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "integration"))
import harness  # noqa: E402  (tests/integration/harness.py)
from harness import D, P, R  # noqa: E402,F401

ROUNDING = 0.001  # MicroTime has microseconds; allow 1 ms for rounding and clock reads


def epoch(text, _cache={}):
    """A Kubernetes MicroTime ("2026-11-30T10:05:02.123456Z") as seconds since the epoch."""
    v = _cache.get(text)
    if v is None:
        v = datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
            tzinfo=timezone.utc).timestamp()
        if len(_cache) > 100000:
            _cache.clear()
        _cache[text] = v
    return v


# Ports for the processes we start: below the ephemeral range (see harness.free_port).
pick_port = harness.free_port
_ephemeral_low = harness._ephemeral_low


def port_collision(inc):
    """The process could not listen (a test-infrastructure race, not a sidecar failure)."""
    return inc.proc is not None and inc.proc.returncode == 2 and \
        "Address already in use" in inc.logs()


class Incarnation:
    """One sidecar process. `slot` picks the API user (its own token: faults and counters
    can address it), `identity` is --identity, `gen` counts restarts of the slot."""

    def __init__(self, env, slot, identity, gen, lease, logdir, rate=1.0, extra_args=(),
                 timings=None):
        env_vars = {}
        if rate != 1.0:
            env_vars = {"LEASEHOLD_TEST_HOOKS": "1", "LEASEHOLD_TEST_CLOCK_RATE": f"{rate:g}"}
        self.sc = harness.Sidecar(env, identity, extra_args=extra_args, user=f"replica-{slot}",
                                  lease=lease, env_vars=env_vars)
        self.sc.port, self.sc.probe_port = pick_port(), pick_port()
        a = self.sc.args
        a[a.index("--http-address") + 1] = f"127.0.0.1:{self.sc.port}"
        a[a.index("--probe-address") + 1] = f"127.0.0.1:{self.sc.probe_port}"
        if timings:  # replace the harness's scaled timings (soak uses D=1s)
            i = self.sc.args.index("--lease-duration")
            self.sc.args[i:i + 6] = timings
        self.sc.log_path = Path(logdir) / f"{identity}.g{gen}.log"
        self.env = env
        self.slot, self.identity, self.gen, self.rate = slot, identity, gen, rate
        self.label = f"{identity}#{gen}"
        self.client = env.client_name(f"replica-{slot}")
        self.stopped = False          # SIGSTOPped by us right now
        self.ended_by = None          # "kill" / "term" / "teardown": we ended it
        self.term_sent_at = None      # when we sent SIGTERM
        self.samples = []             # (t_start, t_end, status dict | None | {"exited": rc})
        self.latest = None            # last successful status
        self.logf = None

    @property
    def proc(self):
        return self.sc.proc

    @property
    def port(self):
        return self.sc.port

    def start(self):
        """Starts the process without waiting for it to serve (the sampler copes)."""
        self.logf = open(self.sc.log_path, "ab")
        self.sc.proc = subprocess.Popen(self.sc.args, stdout=self.logf, stderr=subprocess.STDOUT,
                                        env=self.sc.env_vars)
        self.env.processes.append(self.sc.proc)
        return self

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig):
        if self.alive():
            try:
                self.proc.send_signal(sig)
                return True
            except OSError:
                pass
        return False

    def kill(self, why):
        if self.alive():
            self.ended_by = self.ended_by or why
            self.signal(signal.SIGCONT)
            self.proc.kill()
        self.stopped = False

    def reap(self, timeout=5):
        if self.proc is None:
            return None
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        if self.proc in self.env.processes:
            self.env.processes.remove(self.proc)
        if self.logf:
            self.logf.close()
            self.logf = None
        return rc

    def is_leader(self):
        st = self.latest
        return bool(st and st.get("leader"))

    def logs(self):
        return self.sc.logs()


class LeaderClient:
    """GET /leader on a keep-alive connection; reconnects after any error."""

    def __init__(self, port, timeout=0.25):
        self.port, self.timeout, self.conn = port, timeout, None

    def get(self):
        try:
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
            self.conn.request("GET", "/leader")
            resp = self.conn.getresponse()
            body = resp.read()
            if resp.will_close:
                self.close()
            return json.loads(body) if resp.status == 200 else None
        except (OSError, http.client.HTTPException, ValueError):
            self.close()
            return None

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


class Sampler(threading.Thread):
    def __init__(self, inc, interval=0.01):
        super().__init__(daemon=True)
        self.inc, self.interval = inc, interval
        self.stop_event = threading.Event()
        self.client = LeaderClient(inc.port)

    def run(self):
        inc = self.inc
        while not self.stop_event.is_set():
            rc = inc.proc.poll()
            if rc is not None:
                t = time.time()
                inc.samples.append((t, t, {"exited": rc}))
                break
            t0 = time.time()
            st = self.client.get()
            inc.samples.append((t0, time.time(), st))
            if st is not None:
                inc.latest = st
            self.stop_event.wait(self.interval)
        self.client.close()

    def stop(self):
        self.stop_event.set()


class FencedStore:
    """SQLite with the README's conditional write: a token lower than the highest seen is
    rejected. Every attempt is logged (accepted or not) for the audit."""

    def __init__(self, path):
        self.path = str(path)
        self.local = threading.local()
        c = self._conn()
        c.execute("CREATE TABLE IF NOT EXISTS fence (id INTEGER PRIMARY KEY, token INTEGER)")
        c.execute("INSERT OR IGNORE INTO fence VALUES (1, -1)")
        c.execute("CREATE TABLE IF NOT EXISTS writes (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
                  "token INTEGER, writer TEXT, identity TEXT, t REAL, accepted INTEGER)")
        self.lock = threading.Lock()
        self.conns = []

    def _conn(self):
        c = getattr(self.local, "conn", None)
        if c is None:
            c = sqlite3.connect(self.path, timeout=10, isolation_level=None,
                                check_same_thread=False)
            c.execute("PRAGMA journal_mode=WAL")
            c.execute("PRAGMA synchronous=OFF")
            self.local.conn = c
        return c

    def write(self, token, writer, identity):
        c = self._conn()
        c.execute("BEGIN IMMEDIATE")
        try:
            cur = c.execute("UPDATE fence SET token = ? WHERE id = 1 AND token <= ?",
                            (token, token))
            ok = cur.rowcount == 1
            c.execute("INSERT INTO writes (token, writer, identity, t, accepted) "
                      "VALUES (?, ?, ?, ?, ?)", (token, writer, identity, time.time(), int(ok)))
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise
        return ok

    def close_thread(self):
        c = getattr(self.local, "conn", None)
        if c is not None:
            c.close()
            self.local.conn = None

    def rows(self):
        c = sqlite3.connect(self.path, timeout=10)
        try:
            return c.execute("SELECT seq, token, writer, identity, t, accepted FROM writes "
                             "ORDER BY seq").fetchall()
        finally:
            c.close()


class FencedWriter(threading.Thread):
    """The main container of one incarnation: read /leader; when leader, maybe pause (usually a
    few ms, sometimes 0.3-2.5 s, a GC pause between the check and the write), then write."""

    def __init__(self, inc, store, rng):
        super().__init__(daemon=True)
        self.inc, self.store, self.rng = inc, store, rng
        self.stop_event = threading.Event()
        self.client = LeaderClient(inc.port)
        self.accepted = self.rejected = 0

    def run(self):
        try:
            while not self.stop_event.is_set() and self.inc.proc.poll() is None:
                st = self.client.get()
                if not (st and st.get("leader")):
                    self.stop_event.wait(0.03)
                    continue
                r = self.rng.random()
                if r < 0.03:
                    time.sleep(self.rng.uniform(0.3, 2.5))
                elif r < 0.3:
                    time.sleep(self.rng.uniform(0, 0.02))
                if self.store.write(st["fencingToken"], self.inc.label, self.inc.identity):
                    self.accepted += 1
                else:
                    self.rejected += 1
                self.stop_event.wait(0.01)
        finally:
            self.client.close()
            self.store.close_thread()

    def stop(self):
        self.stop_event.set()


class LeaseHistory(threading.Thread):
    """Every version of one Lease as the API server applied it, from a watch (as admin) that
    resumes from the last resourceVersion when the stream ends. `gap` is set if the server's
    history window no longer had the versions needed to resume (the checks then say so)."""

    def __init__(self, env, lease, namespace=None, port=None):
        super().__init__(daemon=True)
        self.env, self.lease = env, lease
        self.ns = namespace or env.namespace
        self.port = port or env.port  # RealEnv: a kube-apiserver, or a proxy in front of one
        self.records = []  # (t_received, type, resourceVersion, spec)
        self.rv = None
        self.gap = False
        self.stop_event = threading.Event()
        self.sock = None
        self.errors = []
        self.ctx = ssl.create_default_context(cafile=str(env.ca_path))
        self.token = env.tokens["admin"]
        self.connected = threading.Event()
        self.reconnects = 0

    def _request(self, path, timeout):
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx,
                                           timeout=timeout)
        conn.request("GET", path, headers={"Authorization": f"Bearer {self.token}"})
        sock = conn.sock  # getresponse() drops it from conn when the answer says close
        return conn, conn.getresponse(), sock

    def run(self):
        base = f"/apis/coordination.k8s.io/v1/namespaces/{self.ns}/leases"
        sel = f"fieldSelector=metadata.name%3D{self.lease}"
        while not self.stop_event.is_set():
            try:
                if self.rv is None:
                    conn, resp, _ = self._request(f"{base}?{sel}", 5)
                    body = json.loads(resp.read())
                    conn.close()
                    for item in body.get("items", []):
                        self._add("LISTED", item)
                    self.rv = body["metadata"]["resourceVersion"]
                conn, resp, sock = self._request(
                    f"{base}?watch=1&{sel}&resourceVersion={self.rv}&timeoutSeconds=3600", 5)
                self.sock = sock
                sock.settimeout(None)  # a stopped API server must not end the watch
                if resp.status != 200:
                    raise ValueError(f"watch answered {resp.status}")
                self.connected.set()
                while not self.stop_event.is_set():
                    line = resp.readline()
                    if not line:
                        break
                    ev = json.loads(line)
                    if ev["type"] == "ERROR":
                        self.gap = True  # 410: the versions in between are gone
                        self.rv = None
                        break
                    if ev["type"] == "BOOKMARK":
                        self.rv = ev["object"]["metadata"]["resourceVersion"]
                        continue
                    self._add(ev["type"], ev["object"])
                conn.close()
            except Exception as e:  # noqa: BLE001 - reconnect on anything, but say why
                self.errors.append(repr(e))
            if not self.stop_event.is_set():
                self.reconnects += 1
                self.stop_event.wait(0.05)

    def _add(self, kind, obj):
        rv = obj["metadata"]["resourceVersion"]
        if self.records and int(rv) <= int(self.records[-1][2]):
            return  # replayed
        self.records.append((time.time(), kind, rv, obj.get("spec", {})))
        self.rv = rv

    def stop(self):
        self.stop_event.set()
        if self.sock is not None:
            try:
                self.sock.shutdown(2)
            except OSError:
                pass


# ---- terms and checks ----------------------------------------------------------------------

class Term:
    __slots__ = ("start", "end", "who", "identity", "token", "last_true", "released_at", "src",
                 "acq", "end_own", "own_by_write")

    def __init__(self, start, end, who, identity, token, src):
        self.start, self.end, self.who, self.identity, self.token = start, end, who, identity, token
        self.last_true = start
        self.released_at = None
        self.src = src
        self.acq = None
        self.end_own = end  # when the process itself stops claiming (see sampled_terms)
        self.own_by_write = {}  # renewTime -> the tightest bound on that write's real deadline

    def bound_own_end(self, write, bound):
        """One answer's bound on when the process stops claiming on the strength of `write`
        (its renewTime). Every answer based on the same write has the same real deadline, so
        the tightest bound among them holds for all; the term ends at the latest write's."""
        if write is None:
            write = ("answer", len(self.own_by_write))  # unknown: this answer alone
        self.own_by_write[write] = min(bound, self.own_by_write.get(write, bound))
        self.end_own = max(self.own_by_write.values())

    def __repr__(self):
        return (f"{self.src} term {self.who} token {self.token} "
                f"[{self.start:.3f}, {self.end:.3f}]")


def history_terms(records, rates=None, renew_deadline=R):
    """Terms as the API server recorded them. One term per acquisition (a new holder, or the
    same holder with a new acquireTime or token, e.g. a restarted process with the same
    identity). The claim of a term, by the algorithm's definition (leader only while now < send
    time of the last confirmed write + R): from its acquireTime (send time of the acquisition)
    to its last renewTime (send time of the last write that landed) + R, stretched by the
    holder's clock rate (a slow clock claims R/rate of real time). A release (holder "") ends it
    at the release's renewTime: the sidecar stops claiming before it builds the release write.
    This over-approximates every claim (applied writes whose answer was lost count too).
    """
    rates = rates or {}
    terms = []
    cur = None
    for t, kind, rv, spec in records:
        holder = spec.get("holderIdentity") or ""
        if kind == "DELETED":
            cur = None
            continue
        if not holder:
            if cur is not None and spec.get("renewTime"):
                cur.released_at = epoch(spec["renewTime"])
                cur.end = min(cur.end, cur.released_at)
            cur = None
            continue
        acq = spec.get("acquireTime")
        token = spec.get("leaseTransitions", 0)
        renew = epoch(spec["renewTime"]) if spec.get("renewTime") else t
        until = renew + renew_deadline / rates.get(holder, 1.0)
        if cur is None or (cur.identity, cur.token, cur.acq) != (holder, token, acq):
            # `who` names the term, not the identity: a restarted process may reuse the
            # identity, and its claims must not overlap those of its previous life either.
            cur = Term(epoch(acq) if acq else renew, until, f"{holder}/{token}", holder, token,
                       "lease")
            cur.acq = acq
            terms.append(cur)
        cur.end = max(cur.end, until)
    return terms


def sampled_terms(incarnations, releases=None):
    """Terms as a client polling every ~10 ms and trusting each answer's validUntil saw them.

    A claim is an answer leader=true with token T and validUntil V, computed between the
    request's start and end (t0 <= t <= t1). The term of an incarnation with token T runs
      from: its acquireTime (the wall time at which the acquisition was sent; the sidecar cannot
            have claimed before) or, if missing, the first t0;
      to:   the LARGEST validUntil it ever answered in that term: it promised leadership until
            then to whoever asked, and must not be contradicted by anybody else's claim, even if
            it later answered false (paused past its deadline) or was killed.
    One exception: a release (SIGTERM) retracts the claim. Then the end is the release write's
    renewTime from the Lease history (stamped after the sidecar stopped claiming), and we check
    separately that no answer that started after that instant said leader=true.

    What sampling cannot see: a term that begins and ends between two answers. Every term here
    lasts at least R = 1.5 s unless its holder was SIGSTOPped or killed right after acquiring, so
    such a term is one whose holder nobody could ask. The Lease history (history_terms) has every
    term the API server applied, so the same checks run on it too.
    """
    releases = releases or {}
    terms = []
    for inc in incarnations:
        cur = None
        for t0, t1, st in inc.samples:
            if st is None:
                continue
            if st.get("leader"):
                token = st["fencingToken"]
                v = epoch(st["validUntil"])
                own = own_end(v, t0, t1, inc.rate)
                if cur is None or cur.token != token:
                    start = epoch(st["acquireTime"]) if st.get("acquireTime") else t0
                    cur = Term(start, v, inc.label, inc.identity, token, "sampled")
                    terms.append(cur)
                cur.end = max(cur.end, v)
                cur.bound_own_end(st.get("renewTime"), own)
                cur.last_true = t1
            else:
                cur = None  # answered false (or exited): the term is over; its end stays max V
        for term in terms:
            if term.who == inc.label:
                rel = releases.get((inc.identity, term.token))
                if rel is not None and inc.ended_by == "term":
                    term.released_at = rel
                    term.end = min(term.end, rel)
                    term.end_own = min(term.end_own, rel)
    return sorted(terms, key=lambda x: x.start)


def own_end(v, t0, t1, rate):
    """When a process whose monotonic clock runs at `rate` really stops claiming, given an answer
    with validUntil v computed at some wall instant w in [t0, t1]. The sidecar computes
    v = w + (remaining on its clock), and its clock covers that remaining time in
    remaining / rate of real time: the end is w + (v - w) / rate, maximised over w. For rate 1
    it is v itself. (A fast clock thus promises a validUntil up to 5% of R later than it really
    claims; a slow one keeps answering true past the validUntil it gave.) The bound is loose by
    (t1 - t0) x |1/rate - 1|: a request that spanned a SIGSTOP overstates it by several ms, so
    Term.bound_own_end keeps the tightest bound among the answers based on the same write."""
    if rate == 1.0:
        return v
    return max(w + (v - w) / rate for w in (t0, t1))


def check_terms(terms, what):
    """No two claims overlap (other than one claim seen twice); tokens strictly increase from
    term to term. Returns (failures, the smallest gap between the start of a claim and the end
    of an earlier claim of another identity, the largest overlap found)."""
    failures = []
    min_gap = None
    max_overlap = 0.0
    for i, b in enumerate(terms):
        for a in terms[:i]:
            if a.who == b.who and a.token == b.token:
                continue  # the same claim, seen again after a blip (false, then true again)
            # Two terms of one process: it may start its next term once IT stopped claiming
            # (re-acquiring its own expired lease). Against any other process the promise made
            # to callers (validUntil) counts.
            a_end, b_end = (a.end_own, b.end_own) if a.who == b.who else (a.end, b.end)
            overlap = min(a_end, b_end) - max(a.start, b.start)
            if overlap > ROUNDING:
                failures.append(f"{what}: claims overlap by {overlap * 1000:.1f} ms: {a} / {b}")
            max_overlap = max(max_overlap, overlap if overlap > ROUNDING else 0.0)
            if b.token <= a.token:
                failures.append(f"{what}: token did not go up: {a} then {b}")
        prev = [a for a in terms[:i] if a.identity != b.identity]
        if prev:
            gap = b.start - max(a.end for a in prev)
            min_gap = gap if min_gap is None else min(min_gap, gap)
    return failures, min_gap, max_overlap


def check_history_tokens(records):
    """Every acquisition in the Lease's history raises leaseTransitions; nothing lowers it."""
    failures = []
    last = None
    prev_key = None
    for t, kind, rv, spec in records:
        if kind == "DELETED":
            failures.append(f"lease deleted at rv {rv} (tokens restart)")
            last, prev_key = None, None
            continue
        tr = spec.get("leaseTransitions", 0)
        holder = spec.get("holderIdentity") or ""
        if last is not None and tr < last:
            failures.append(f"leaseTransitions went down {last} -> {tr} at rv {rv}")
        key = (holder, spec.get("acquireTime"))
        if holder and prev_key is not None and key != prev_key and last is not None \
                and tr <= last:
            failures.append(f"new term without a new token at rv {rv}: {holder} token {tr}")
        if holder:
            prev_key = key
        last = tr
    return failures


def check_store(rows, hist_terms):
    """The fenced store accepted no token lower than one it had already accepted; each accepted
    token belongs to the process that held that term in the Lease's history."""
    failures = []
    highest = None
    holders = {}
    for t in hist_terms:
        holders.setdefault(t.token, set()).add(t.identity)
    for seq, token, writer, identity, t, accepted in rows:
        if accepted:
            if highest is not None and token < highest:
                failures.append(f"store accepted token {token} after {highest} (seq {seq})")
            highest = token if highest is None else max(highest, token)
            if hist_terms and identity not in holders.get(token, ()):
                failures.append(f"store accepted token {token} from {writer}, but the Lease "
                                f"gave token {token} to {sorted(holders.get(token, ()))}")
        elif highest is not None and token >= highest:
            failures.append(f"store rejected token {token} though the highest was {highest}")
    return failures


# ---- /proc -----------------------------------------------------------------------------------

def proc_stats(pid):
    """(rss bytes, open fds, threads) of a live process, or None."""
    try:
        rss = threads = None
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith("Threads:"):
                    threads = int(line.split()[1])
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        return rss, fds, threads
    except (OSError, ValueError):
        return None


def recheck(path):
    """The term checks of a failed scenario again, from its observations.json (written by
    `run` next to the logs): the overlap and token checks on the samples and on the Lease
    history. Returns the failures."""
    from types import SimpleNamespace
    data = json.loads(Path(path).read_text())
    incs = [SimpleNamespace(**i) for i in data["incarnations"]]
    records = data["records"]
    hterms = history_terms(records, {i.identity: i.rate for i in incs})
    releases = {(t.identity, t.token): t.released_at for t in hterms if t.released_at}
    failures = check_terms(sampled_terms(incs, releases), "samples")[0]
    if not data.get("history_gap"):
        failures += check_terms(hterms, "lease history")[0]
    return failures + check_history_tokens(records)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "recheck":
        raise SystemExit("usage: chaoslib.py recheck FAILURES_DIR/observations.json")
    found = recheck(sys.argv[2])
    for line in found:
        print(line)
    print(f"recheck: {len(found)} failure(s)")
    sys.exit(1 if found else 0)
