"""The application side of a chaos run: a FencedWriter per sidecar process reads /leader and,
when leader, (maybe pauses, then) writes (token, seq) to a FencedStore, SQLite with the
conditional write of the README: `UPDATE fence SET token = :t WHERE token <= :t`."""
import sqlite3
import threading
import time

from .leader_sampler import LeaderClient


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
