"""Load on a pod's sidecar from inside its network namespace: many SSE clients on
/leader/watch (held open, read as they come) and a few threads asking /leader as fast as they
can, as a busy app would. The node test of the chart's memory limit uses it."""
import selectors
import socket
import threading

from .leader_sampler import LeaderClient
from .pod_sampler import enter_netns


class PodLoad:
    """STREAMS SSE clients and ASKERS /leader loops on 127.0.0.1:port of the pod whose network
    namespace PodSidecar SIDECAR holds. stop() returns what they saw."""

    def __init__(self, sidecar, streams, askers):
        self.sidecar, self.streams, self.askers = sidecar, streams, askers
        self.stop_event = threading.Event()
        self.lock = threading.Lock()
        self.seen = {"streams_open": 0, "streams_refused": 0, "streams_closed": 0,
                     "events": 0, "answers": 0, "errors": 0}
        self.threads = [threading.Thread(target=self._watchers, daemon=True)] + [
            threading.Thread(target=self._ask, daemon=True) for _ in range(askers)]
        self.ready = threading.Event()

    def __enter__(self):
        for t in self.threads:
            t.start()
        self.ready.wait(60)
        return self

    def __exit__(self, *exc):
        self.stop()

    def count(self, key, n=1):
        with self.lock:
            self.seen[key] += n

    def snapshot(self):
        with self.lock:
            return dict(self.seen)

    def _watchers(self):
        enter_netns(self.sidecar.netns, self.sidecar.name)
        sel = selectors.DefaultSelector()
        request = b"GET /leader/watch HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        for _ in range(self.streams):
            try:
                s = socket.create_connection(("127.0.0.1", self.sidecar.port), timeout=5)
                s.sendall(request)
                s.setblocking(False)
                sel.register(s, selectors.EVENT_READ)
                self.count("streams_open")
            except OSError:
                self.count("streams_refused")
        self.ready.set()
        while not self.stop_event.is_set() and sel.get_map():
            for key, _ in sel.select(timeout=0.2):
                try:
                    data = key.fileobj.recv(65536)
                except OSError:
                    data = b""
                if not data:  # closed by the sidecar (over its connection limit, or dropped)
                    sel.unregister(key.fileobj)
                    key.fileobj.close()
                    self.count("streams_closed")
                    continue
                self.count("events", data.count(b"data:"))
        for key in list(sel.get_map().values()):
            key.fileobj.close()
        sel.close()

    def _ask(self):
        enter_netns(self.sidecar.netns, self.sidecar.name)
        client = LeaderClient(self.sidecar.port, timeout=2)
        while not self.stop_event.is_set():
            self.count("answers" if client.get() is not None else "errors")
        client.close()

    def stop(self):
        self.stop_event.set()
        for t in self.threads:
            t.join()
        return self.snapshot()
