#!/usr/bin/env python3
"""A writer that only its leader's fencing token lets through: SQLite or PostgreSQL.

    fenced_writer.py --sqlite PATH          [--url URL] [--writer NAME] [--work-time S] ...
    fenced_writer.py --postgres CONNINFO    (libpq conninfo, e.g. "host=/run/pg dbname=app")
    fenced_writer.py --sqlite PATH --report (print the journal and the fence, then exit)

Each round: ask the sidecar (GET /leader). While leader, take its fencingToken, do the work
(--work-time seconds; the time between reading the token and writing), then append one row to
`journal` with a conditional write that the database rejects when it has already seen a higher
token:

    fence(id = 1, max_token)      the highest token the database has accepted
    journal(seq, token, writer, item, written_at)

    one transaction:  UPDATE fence SET max_token = :token WHERE id = 1 AND max_token <= :token
                      -- 0 rows: a newer leader has written: ROLLBACK, rejected
                      INSERT INTO journal (token, writer, item) VALUES (:token, :writer, :item)

Why the database and not a check of /leader just before writing: a process can be paused
(GC, SIGSTOP, a frozen VM, a slow disk) between any check and the write, for longer than the
lease. Only the storage sees writes in their real order, so only it can refuse the old leader.
Tokens only go up while the Lease exists (deleting the Lease resets them to 0).

Python standard library only (sqlite3); PostgreSQL through the `psql` client, so no driver is
needed. Output: one line per event, e.g.
    writer w0: token 3: item 7 ACCEPTED as seq 12
    writer w1: token 2: item 4 REJECTED (the database has seen token 3)
"""
import argparse
import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request


class SQLiteStore:
    SCHEMA = """
        CREATE TABLE IF NOT EXISTS fence (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            max_token INTEGER NOT NULL);
        INSERT OR IGNORE INTO fence (id, max_token) VALUES (1, -1);
        CREATE TABLE IF NOT EXISTS journal (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            token INTEGER NOT NULL,
            writer TEXT NOT NULL,
            item INTEGER NOT NULL,
            written_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')));
    """

    def __init__(self, path):
        # Autocommit mode: transactions are explicit. timeout: wait for the other writer's lock.
        self.db = sqlite3.connect(path, timeout=30, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.executescript(self.SCHEMA)

    def write(self, token, writer, item):
        """(True, seq) when accepted, (False, highest token seen) when fenced off."""
        cur = self.db.cursor()
        cur.execute("BEGIN IMMEDIATE")  # take the write lock now: no interleaving writer
        try:
            cur.execute("UPDATE fence SET max_token = :token WHERE id = 1 AND max_token <= :token",
                        {"token": token})
            if cur.rowcount != 1:
                highest = cur.execute("SELECT max_token FROM fence WHERE id = 1").fetchone()[0]
                cur.execute("ROLLBACK")
                return False, highest
            cur.execute("INSERT INTO journal (token, writer, item) VALUES (?, ?, ?)",
                        (token, writer, item))
            seq = cur.lastrowid
            cur.execute("COMMIT")
            return True, seq
        except BaseException:
            cur.execute("ROLLBACK")
            raise

    def rows(self):
        return self.db.execute(
            "SELECT seq, token, writer, item, written_at FROM journal ORDER BY seq").fetchall()

    def highest(self):
        return self.db.execute("SELECT max_token FROM fence WHERE id = 1").fetchone()[0]


class PostgresStore:
    SCHEMA = """
        CREATE TABLE IF NOT EXISTS fence (
            id integer PRIMARY KEY CHECK (id = 1),
            max_token bigint NOT NULL);
        INSERT INTO fence (id, max_token) VALUES (1, -1) ON CONFLICT DO NOTHING;
        CREATE TABLE IF NOT EXISTS journal (
            seq bigserial PRIMARY KEY,
            token bigint NOT NULL,
            writer text NOT NULL,
            item bigint NOT NULL,
            written_at timestamptz NOT NULL DEFAULT now());
    """
    # One statement, so one transaction: the UPDATE locks the fence row (a concurrent writer
    # waits, then re-checks the WHERE against the new max_token) and the INSERT only runs for
    # the row the UPDATE returned.
    WRITE = """
        WITH f AS (
            UPDATE fence SET max_token = :token WHERE id = 1 AND max_token <= :token
            RETURNING max_token)
        INSERT INTO journal (token, writer, item) SELECT :token, :'writer', :item FROM f
        RETURNING seq;
    """

    def __init__(self, conninfo):
        self.psql = shutil.which("psql")
        if not self.psql:
            raise SystemExit("fenced_writer: psql not found (Debian: postgresql-client)")
        self.conninfo = conninfo
        self.sql(self.SCHEMA + "SET client_min_messages = warning;")

    def sql(self, text, **variables):
        args = [self.psql, "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-d", self.conninfo]
        for k, v in variables.items():
            args += ["-v", f"{k}={v}"]
        r = subprocess.run(args + ["-f", "-"], input="SET client_min_messages = warning;\n"
                           + text, capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise RuntimeError(f"psql: {r.stderr.strip()}")
        return [ln for ln in r.stdout.splitlines() if ln]

    def write(self, token, writer, item):
        out = self.sql(self.WRITE, token=int(token), writer=writer, item=int(item))
        if out:
            return True, int(out[0])
        return False, self.highest()

    def rows(self):
        at = "to_char(written_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
        out = self.sql(f"SELECT seq, token, writer, item, {at} FROM journal ORDER BY seq;")
        rows = []
        for line in out:
            seq, token, writer, item, at = line.split("|")
            rows.append((int(seq), int(token), writer, int(item), at))
        return rows

    def highest(self):
        return int(self.sql("SELECT max_token FROM fence WHERE id = 1;")[0])


def ask(url):
    try:
        with urllib.request.urlopen(url, timeout=1.0) as resp:
            return json.load(resp)
    except (urllib.error.URLError, OSError, ValueError):
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    db = ap.add_mutually_exclusive_group(required=True)
    db.add_argument("--sqlite", metavar="PATH")
    db.add_argument("--postgres", metavar="CONNINFO")
    ap.add_argument("--url", default="http://127.0.0.1:4040/leader")
    ap.add_argument("--writer", default="writer")
    ap.add_argument("--interval", type=float, default=1.0, help="seconds between rounds")
    ap.add_argument("--work-time", type=float, default=0.2,
                    help="seconds between reading the token and writing (the work)")
    ap.add_argument("--report", action="store_true", help="print the journal and exit")
    args = ap.parse_args()

    store = SQLiteStore(args.sqlite) if args.sqlite else PostgresStore(args.postgres)
    if args.report:
        for seq, token, writer, item, at in store.rows():
            print(f"seq={seq} token={token} writer={writer} item={item} at={at}")
        print(f"fence: highest token accepted = {store.highest()}")
        return 0

    stop = False

    def on_signal(signum, frame):
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    def say(text):
        print(f"writer {args.writer}: {text}", flush=True)

    item = 0
    was_leader = None
    while not stop:
        st = ask(args.url)
        leader = bool(st and st.get("leader"))
        if leader:
            item += 1
            token = st["fencingToken"]
            say(f"leader with token {token}: working {args.work_time:g}s on item {item}")
            # Anything can stall here, for any time. The database has the last word.
            time.sleep(args.work_time)
            say(f"token {token}: writing item {item}")
            ok, value = store.write(token, args.writer, item)
            if ok:
                say(f"token {token}: item {item} ACCEPTED as seq {value}")
            else:
                say(f"token {token}: item {item} REJECTED (the database has seen token {value})")
        elif was_leader is not False:
            who = (st or {}).get("name") or "nobody"
            say("sidecar not answering: idle" if st is None
                else f"follower (leader: {who}, token {st.get('fencingToken')}): idle")
        was_leader = leader
        time.sleep(args.interval)
    say("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
