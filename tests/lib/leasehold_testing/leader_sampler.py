"""The /leader sampler: one thread per sidecar process asking GET /leader every ~10 ms over a
keep-alive connection. One thread each, so a SIGSTOPped sidecar (whose kernel still accepts
connections and then never answers) cannot stall the sampling of the others."""
import http.client
import json
import threading
import time


class LeaderClient:
    """GET /leader on a keep-alive connection (cheaper than a connect per request, so the
    bench can poll every millisecond); reconnects after any error. keep_alive=False: a new
    connection per request."""

    def __init__(self, port, timeout=0.25, keep_alive=True, path="/leader"):
        self.port, self.timeout, self.keep_alive, self.conn = port, timeout, keep_alive, None
        self.path = path  # shard mode's samplers ask /shards
        self.error = None  # why the last get() returned None, when it was an exception

    def get(self):
        """The status dict, or None when nothing (or no 200) answered."""
        self.error = None
        try:
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
            self.conn.request("GET", self.path)
            resp = self.conn.getresponse()
            body = resp.read()
            if resp.will_close or not self.keep_alive:
                self.close()
            return json.loads(body) if resp.status == 200 else None
        except (OSError, http.client.HTTPException, ValueError) as e:
            self.error = e
            self.close()
            return None

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


class Sampler(threading.Thread):
    """Asks one sidecar's /leader every `interval` seconds over a LeaderClient and hands each
    outcome to `record(sidecar, proc, t0, t1, status)`: the status dict (request sent at t0,
    answered at t1), None when nothing or no 200 answered, and {"exited": rc} once per process
    when it has exited. With `follow` it goes on with the sidecar's next process (a Sidecar
    started again, as the Observer's are); without, it stops at the exit (an Incarnation is one
    process). The default `record` keeps an Incarnation's `samples` and `latest`. keep_alive:
    see LeaderClient."""

    def __init__(self, sidecar, interval=0.01, record=None, follow=False, timeout=0.25,
                 keep_alive=True, path="/leader"):
        super().__init__(daemon=True)
        self.sidecar, self.interval, self.follow = sidecar, interval, follow
        self.record = record or self.keep
        self.stop_event = threading.Event()
        self.client = LeaderClient(sidecar.port, timeout, keep_alive, path)
        args = list(getattr(sidecar, "args", []))
        self.identity = args[args.index("--identity") + 1] if "--identity" in args[:-1] else None
        self.foreign = None  # the identity of another process that answered on the port

    def ours(self, st):
        """`st` unless another process answered on the sidecar's port (its listen failed: a
        port taken by another test between the pick and the listen): then None, and the
        stranger is remembered for the failure message instead of sampled as a claim (session
        19's chaos.long scenario 58 sampled a phantom overlap that way)."""
        if st is None or self.identity is None or st.get("identity") in (None, self.identity):
            return st
        if self.foreign is None:
            self.foreign = st.get("identity")
            print(f"sampler: port {self.sidecar.port} of {self.identity} answered as "
                  f"{self.foreign}: another process holds the port", flush=True)
        return None

    @staticmethod
    def keep(inc, proc, t0, t1, st):
        inc.samples.append((t0, t1, st))
        if st is not None and "exited" not in st:
            inc.latest = st

    def run(self):
        done = None  # the process whose exit is recorded
        last = None  # the process sampled last
        while not self.stop_event.is_set():
            proc = self.sidecar.proc
            if (self.follow and last is not None and last is not proc and last is not done
                    and last.poll() is not None):
                # It exited and was started again between two looks (a request to it in flight
                # while the test restarted it: integration.real.ha_split, gate of 2026-12-07,
                # restarted 16 ms after its SIGTERM exit). Its exit first: unrecorded, a clean
                # exit's claim would run on to the last validUntil it answered, and overlap the
                # next holder's.
                t = time.time()
                self.record(self.sidecar, last, t, t, {"exited": last.returncode})
                done = last
            last = proc
            if proc is not None and proc is not done:
                rc = proc.poll()
                if rc is not None:
                    t = time.time()
                    self.record(self.sidecar, proc, t, t, {"exited": rc})
                    done = proc
                    if not self.follow:
                        break
                else:
                    t0 = time.time()
                    st = self.ours(self.client.get())
                    self.record(self.sidecar, proc, t0, time.time(), st)
            self.stop_event.wait(self.interval)
        self.client.close()

    def stop(self):
        self.stop_event.set()
