"""GET /leader/watch (text/event-stream: one `data: {json}` event on connect and on every change,
a `:` comment every 15 s) read the way the main container reads it."""
import json
import socket
import threading
import time

from .checks import wait_for


class EventStreamParser:
    """The answer fed in pieces as they arrive: the status line and headers, then the body
    (chunked or not) as events (time, dict) and comments (time, text), each stamped with the
    local time its last piece arrived."""

    def __init__(self):
        self.status_line = None
        self.headers = {}
        self.events = []    # (time, dict)
        self.comments = []  # (time, text)
        self.chunked = False
        self._raw = b""     # bytes not yet decoded: the head, or an incomplete chunk
        self._body = b""    # decoded body not yet split into lines
        self._data = []     # the data lines of the event being read

    def feed(self, data, now=None):
        now = time.time() if now is None else now
        self._raw += data
        if self.status_line is None:
            end = self._raw.find(b"\r\n\r\n")
            if end < 0:
                return
            lines = self._raw[:end].decode(errors="replace").split("\r\n")
            self.status_line = lines[0]
            for line in lines[1:]:
                k, _, v = line.partition(":")
                self.headers[k.strip().lower()] = v.strip()
            self.chunked = self.headers.get("transfer-encoding", "").lower() == "chunked"
            self._raw = self._raw[end + 4:]
        if self.chunked:
            while True:
                j = self._raw.find(b"\r\n")
                if j < 0:
                    break
                size = int(self._raw[:j].split(b";")[0] or b"0", 16)
                if len(self._raw) < j + 2 + size + 2:
                    break
                self._body += self._raw[j + 2:j + 2 + size]
                self._raw = self._raw[j + 2 + size + 2:]
        else:
            self._body += self._raw
            self._raw = b""
        while b"\n" in self._body:
            line, self._body = self._body.split(b"\n", 1)
            text = line.decode(errors="replace").rstrip("\r")
            if text.startswith(":"):
                self.comments.append((now, text[1:].strip()))
            elif text.startswith("data:"):
                self._data.append(text[5:].lstrip(" "))
            elif text == "" and self._data:
                self.events.append((now, json.loads("\n".join(self._data))))
                self._data = []


def request(path="/leader/watch"):
    """The request a client of the stream sends."""
    return (f"GET {path} HTTP/1.1\r\nHost: localhost\r\n"
            "Accept: text/event-stream\r\n\r\n").encode()


class SseClient(EventStreamParser):
    """One stream read by a thread of its own: also when the server closed it (closed_at)."""

    def __init__(self, port, path="/leader/watch"):
        super().__init__()
        self.opened_at = time.time()
        self.closed_at = None
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.sock.sendall(request(path))
        self.sock.settimeout(None)
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while True:
            try:
                chunk = self.sock.recv(65536)
            except OSError:
                chunk = b""
            if not chunk:
                self.closed_at = time.time()
                return
            with self.lock:
                self.feed(chunk)

    def snapshot(self):
        with self.lock:
            return list(self.events)

    def wait_event(self, what, pred, timeout, after=0):
        """The first event (time, dict) with index >= after that satisfies pred."""
        def found():
            for i, (t, ev) in enumerate(self.snapshot()):
                if i >= after and pred(ev):
                    return (t, ev)
            return None
        return wait_for(what, found, timeout, interval=0.005)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass
