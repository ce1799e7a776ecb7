"""LeaseHistory: a watch on the Lease (as admin) that records every write the API server applied,
resuming from the last resourceVersion when cut. It is the ground truth for terms and tokens,
including terms the samplers could not see. start_history, stop_history and history_checks are
the integration scenarios' use of it (real_scenarios.py, coordinated_scenarios.py)."""
import http.client
import json
import ssl
import threading
import time

from .checks import check, wait_for
from .terms import check_history_tokens, check_terms, history_terms
from .timings import slack

# How long a write the API server has applied may take to reach `records`. It is on its way
# already (a replica has acted on it), so a healthy watch brings it in milliseconds; on a
# loaded machine it trailed a replica's /leader by tens of milliseconds (the flake table in
# tests/README.md). The bound only limits how long a broken watch goes unnoticed.
CATCH_UP = slack(5.0)


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

    def wait_for_write(self, what, predicate, timeout=CATCH_UP):
        """wait_for_record on this history's records."""
        return wait_for_record(self.records, what, predicate, timeout)

    def stop(self):
        self.stop_event.set()
        if self.sock is not None:
            try:
                self.sock.shutdown(2)
            except OSError:
                pass


def wait_for_record(records, what, predicate, timeout=CATCH_UP):
    """The spec of the first record whose spec satisfies `predicate`, once `records` (a
    LeaseHistory's, still growing) holds one; else Failure naming `what`. A history trails the
    API server (a watch, read by a thread of the test process), so a check on it must first
    wait for a write that the caller has seen take effect elsewhere (a replica leading with the
    token of its acquisition): the watch brings writes in resourceVersion order, so every write
    before that one is then in `records` too."""
    def found():
        return next((spec for _, _, _, spec in list(records) if predicate(spec)), None)
    return wait_for(f"the Lease history to hold {what}", found, timeout, interval=0.005)


def start_history(env, port=None, lease="demo"):
    """A LeaseHistory of `lease` whose watch is connected (else Failure)."""
    h = LeaseHistory(env, lease, port=port)
    h.start()
    check(h.connected.wait(10), f"the Lease history watch did not connect: {h.errors[:3]}")
    return h


def stop_history(h):
    h.stop()
    h.join(5)


def history_checks(history, records=None, what="lease history"):
    """The checks on the Lease as the server applied it (`records`, default every one): claims
    (acquireTime to last renewTime + R) never overlap, tokens only go up, every new term raises
    the token. Returns the terms."""
    check(not history.gap, "the Lease history has a gap (410 on the history watch)")
    records = history.records if records is None else records
    terms = history_terms(records)
    failures, _, _ = check_terms(terms, what)
    failures += check_history_tokens(records)
    check(not failures, "; ".join(failures[:3]))
    return terms
