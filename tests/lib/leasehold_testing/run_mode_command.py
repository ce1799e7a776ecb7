#!/usr/bin/env python3
"""The command that the run-mode scenarios and the chaos runner's run-mode flavour run under
`leasehold run` (leasehold_testing.run_mode): what a legacy singleton does, with a journal for
the checks.

At start it appends {"event": "start", token, identity, lease, shard, shards (LEASEHOLD_SHARD and
LEASEHOLD_SHARDS as ints, null outside shard mode), pid, pgid, supervisor (its parent's pid),
grandchild, t} to the
journal (JSON lines, appended whole; t is wall-clock seconds), starts a grandchild that must
die with the group (`sh -c 'sleep 1000 & wait'`), then writes its token to the fenced SQLite
store every --write-interval seconds, 50 ms by default (leasehold_testing.FencedStore: a token
lower than the highest seen is rejected; in shard mode one store per shard:
run_mode.store_for). On SIGTERM it appends {"event": "term"} and exits 0 after --term-delay
seconds, unless --ignore-term. --crash-after S exits with --crash-code after S seconds."""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

from leasehold_testing.fenced_store import FencedStore
from leasehold_testing.run_mode import store_for


def append(journal, record):
    record["t"] = time.time()
    line = (json.dumps(record) + "\n").encode()
    fd = os.open(journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--journal", required=True)
    ap.add_argument("--store", required=True)
    ap.add_argument("--term-delay", type=float, default=0.0)
    ap.add_argument("--ignore-term", action="store_true")
    ap.add_argument("--crash-after", type=float)
    ap.add_argument("--crash-code", type=int, default=7)
    # Seconds between fenced writes (shard mode runs 8 per replica: a lighter load).
    ap.add_argument("--write-interval", type=float, default=0.05)
    args = ap.parse_args()

    token = int(os.environ["LEASEHOLD_FENCING_TOKEN"])
    identity = os.environ["LEASEHOLD_IDENTITY"]
    shard = int(os.environ["LEASEHOLD_SHARD"]) if "LEASEHOLD_SHARD" in os.environ else None
    shards = int(os.environ["LEASEHOLD_SHARDS"]) if "LEASEHOLD_SHARDS" in os.environ else None
    pid = os.getpid()
    terminating = []

    def on_term(signo, frame):
        if not terminating:
            terminating.append(time.monotonic())
            append(args.journal, {"event": "term", "pid": pid, "signal": signo})

    signal.signal(signal.SIGTERM, signal.SIG_IGN if args.ignore_term else on_term)
    # The grandchild inherits SIGTERM's disposition from here: ignored with --ignore-term.
    grandchild = subprocess.Popen(["sh", "-c", "sleep 1000 & wait"])
    append(args.journal, {"event": "start", "token": token, "identity": identity,
                          "lease": os.environ.get("LEASEHOLD_LEASE"), "shard": shard,
                          "shards": shards, "pid": pid,
                          "pgid": os.getpgid(0), "supervisor": os.getppid(),
                          "grandchild": grandchild.pid})
    store = FencedStore(store_for(args.store, shard))
    started = time.monotonic()
    while True:
        now = time.monotonic()
        if terminating and now - terminating[0] >= args.term_delay:
            sys.exit(0)
        if args.crash_after is not None and now - started >= args.crash_after:
            append(args.journal, {"event": "crash", "pid": pid, "code": args.crash_code})
            os._exit(args.crash_code)
        store.write(token, identity, f"{identity}/{pid}")
        time.sleep(args.write_interval)


if __name__ == "__main__":
    main()
