"""The /leader sampler: one thread per sidecar process asking GET /leader every ~10 ms over a
keep-alive connection. One thread each, so a SIGSTOPped sidecar (whose kernel still accepts
connections and then never answers) cannot stall the sampling of the others."""
import http.client
import json
import threading
import time


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
