#!/usr/bin/env python3
"""The examples against real sidecars and the test API server (leasehold_testing.Env).

    test_examples.py --sidecar BIN --apiserver BIN SCENARIO...   (poller, fencing_sqlite,
                                                                  fencing_postgres, or all)

poller            2 sidecars + examples/poller: only the leader's poller works; after the
                  leader's sidecar stops (SIGTERM), the other poller takes over.
fencing_sqlite    3 sidecars + 3 examples/fenced-writer on one SQLite file. The leader's writer
                  reads its token and starts working; the test SIGSTOPs that writer and its
                  sidecar before the write, past the lease duration. A new leader writes with a
                  higher token. SIGCONT: the zombie writes with its old token and the database
                  REJECTS it. Every write a writer saw accepted is in the database, nothing else
                  is, and tokens never go down in commit order.
fencing_postgres  the same against a throwaway PostgreSQL cluster (initdb + pg_ctl in a temp
                  dir); skipped (exit 0, "SKIP") only when PostgreSQL is not installed.
"""
import argparse
import re
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import pgtemp  # noqa: E402
from leasehold_testing import D, P, Env, Failure, check, log, the_leader, wait_for  # noqa: E402
from leasehold_testing.paths import ROOT  # noqa: E402
from leasehold_testing.proc import state as process_state  # noqa: E402

POLLER = ROOT / "examples/poller/poller.py"
WRITER = ROOT / "examples/fenced-writer/fenced_writer.py"
SKIP = 77  # ctest SKIP_RETURN_CODE


class Skip(Exception):
    pass


class App:
    """An example app process next to one sidecar, output in a log file."""

    def __init__(self, env, sidecar, name, argv):
        self.env, self.sidecar, self.name = env, sidecar, name
        self.log_path = env.dir / f"{name}.log"
        self.logf = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, *map(str, argv), "--url",
             f"http://127.0.0.1:{sidecar.port}/leader"],
            stdout=self.logf, stderr=subprocess.STDOUT)
        env.processes.append(self.proc)

    def lines(self):
        try:
            return self.log_path.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return []

    def stopped(self):
        return process_state(self.proc.pid) == "T"

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=10)


# --- poller ----------------------------------------------------------------------------------


def poller(env):
    sidecars = env.start_sidecars(2)
    leader = the_leader(sidecars, timeout=D + P + 3)
    apps = {s.name: App(env, s, f"poller-{s.name}", [POLLER, "--interval", "0.2", "--name",
                                                     f"poller-{s.name}"]) for s in sidecars}
    lead_app = apps[leader.name]
    other = next(s for s in sidecars if s is not leader)
    wait_for("3 work items by the leader's poller",
             lambda: sum("work item" in ln for ln in lead_app.lines()) >= 3, 10)
    wait_for("2 rounds of the follower's poller", lambda: len(apps[other.name].lines()) >= 2, 10)
    check(not any("work item" in ln for ln in apps[other.name].lines()),
          f"the follower's poller must not work: {apps[other.name].lines()}")
    log("leader's poller:\n  " + "\n  ".join(lead_app.lines()[-3:]))
    log("follower's poller:\n  " + "\n  ".join(apps[other.name].lines()[-2:]))
    before = len(apps[other.name].lines())
    leader.signal(signal.SIGTERM)
    leader.wait()
    wait_for("the other poller to take over",
             lambda: any("work item" in ln for ln in apps[other.name].lines()[before:]), 5)
    after = apps[other.name].lines()[before:]
    log("after the leader's sidecar stopped, the other poller:\n  " + "\n  ".join(after[-3:]))
    for a in apps.values():
        a.stop()
    check(any("stopping after" in ln for ln in lead_app.lines()), "poller exits on SIGTERM")


# --- fencing ---------------------------------------------------------------------------------

WORKING = re.compile(r"leader with token (\d+): working \S+ on item (\d+)")
ACCEPTED = re.compile(r"token (\d+): item (\d+) ACCEPTED as seq (\d+)")
REJECTED = re.compile(r"token (\d+): item (\d+) REJECTED \(the database has seen token (\d+)\)")


def results(app, pattern):
    return [tuple(int(x) for x in m.groups()) for ln in app.lines()
            for m in [pattern.search(ln)] if m]


def pause_before_write(leader_app, tries=10):
    """SIGSTOPs the writer while it holds a token and has not started writing, then returns
    (token, item). Retries when the pause landed after the write had begun."""
    for _ in range(tries):
        def working_now():
            lines = leader_app.lines()
            m = WORKING.search(lines[-1]) if lines else None
            return m if m else None
        m = wait_for("the leader's writer to start working", working_now, 10, interval=0.005)
        leader_app.proc.send_signal(signal.SIGSTOP)
        wait_for("the writer to be stopped", leader_app.stopped, 2, interval=0.001)
        lines = leader_app.lines()
        if WORKING.search(lines[-1]) and WORKING.search(lines[-1]).groups() == m.groups():
            return int(m.group(1)), int(m.group(2))
        leader_app.proc.send_signal(signal.SIGCONT)  # too late: it had begun writing; again
        time.sleep(0.05)
    raise Failure("could not pause the writer between reading its token and writing")


def fencing(env, db_args, label, report):
    sidecars = env.start_sidecars(3)
    leader = the_leader(sidecars, timeout=D + P + 3)
    apps = {s.name: App(env, s, f"writer-{s.name}",
                        [WRITER, *db_args, "--writer", s.name, "--interval", "0.1",
                         "--work-time", "0.8"]) for s in sidecars}
    zombie = apps[leader.name]
    wait_for("two accepted writes by the leader", lambda: len(results(zombie, ACCEPTED)) >= 2,
             15)
    token, item = pause_before_write(zombie)
    leader.signal(signal.SIGSTOP)  # the zombie's sidecar too: it cannot renew any more
    t_pause = time.monotonic()
    log(f"{label}: paused {leader.name} (sidecar and writer) holding token {token}, "
        f"about to write item {item}")
    others = [s for s in sidecars if s is not leader]
    new = the_leader(others, timeout=D + P + 3)
    new_app = apps[new.name]
    wait_for("an accepted write by the new leader",
             lambda: any(t > token for t, _, _ in results(new_app, ACCEPTED)), 15)
    new_token = next(t for t, _, _ in results(new_app, ACCEPTED) if t > token)
    paused_for = time.monotonic() - t_pause
    check(paused_for > D, f"the pause ({paused_for:.1f}s) must outlast the lease ({D}s)")
    log(f"{label}: {new.name} leads with token {new_token} and has written; resuming the "
        f"zombie after {paused_for:.1f}s")
    leader.signal(signal.SIGCONT)
    zombie.proc.send_signal(signal.SIGCONT)
    rejected = wait_for("the zombie's write to be answered",
                        lambda: [r for r in results(zombie, REJECTED) if r[1] == item]
                        or [r for r in results(zombie, ACCEPTED) if r[1] == item], 15)
    check(rejected[0][0] == token and len(rejected[0]) == 3 and
          any(r[1] == item for r in results(zombie, REJECTED)),
          f"the zombie's write with token {token} must be rejected: {zombie.lines()[-5:]}")
    check(rejected[0][2] >= new_token, f"rejected because of a higher token: {rejected}")
    log(f"{label}: zombie: " + next(ln for ln in zombie.lines() if "REJECTED" in ln
                                     and f"item {item} " in ln))
    time.sleep(0.5)  # a few more rounds: the woken writer is a follower now
    for a in apps.values():
        a.stop()
    check(not any(t == token and i > item for t, i, _ in results(zombie, ACCEPTED)),
          "the zombie must not write again with its old token")

    # The database against what the writers saw.
    rows = report()
    in_db = {(w, i): (seq, t) for seq, t, w, i, _ in rows}
    claimed = {(a.sidecar.name, i): (seq, t) for a in apps.values()
               for t, i, seq in results(a, ACCEPTED)}
    lost = sorted(set(claimed) - set(in_db))
    phantom = sorted(set(in_db) - set(claimed))
    check(not lost, f"accepted writes missing from the database: {lost}")
    check(not phantom, f"rows nobody saw accepted: {phantom}")
    check(all(in_db[k] == v for k, v in claimed.items()), "seq/token mismatch")
    check((leader.name, item) not in in_db, "the zombie's rejected write is in the database")
    tokens = [t for _, t, _, _, _ in rows]
    check(tokens == sorted(tokens), f"tokens went down in commit order: {tokens}")
    check(len(set(tokens)) >= 2, f"two terms expected in the journal: {tokens}")
    n_rej = sum(len(results(a, REJECTED)) for a in apps.values())
    log(f"{label}: {len(rows)} rows, tokens {sorted(set(tokens))}, {n_rej} rejected, "
        "none lost")
    log(f"{label}: journal (last 4 rows):\n  " + "\n  ".join(
        f"seq={s} token={t} writer={w} item={i}" for s, t, w, i, _ in rows[-4:]))


JOURNAL_ROW = re.compile(r"^seq=(\d+) token=(\d+) writer=(\S+) item=(\d+) at=(\S+)$")


def journal(db_args):
    """The journal as `fenced_writer.py --report` prints it: (seq, token, writer, item, at) in
    commit order. The first call also creates the schema, before the writers race to."""
    r = subprocess.run([sys.executable, str(WRITER), *db_args, "--report"], capture_output=True,
                       text=True, timeout=60)
    check(r.returncode == 0, f"fenced_writer.py --report: {r.stdout}{r.stderr}")
    rows = []
    for line in r.stdout.splitlines():
        m = JOURNAL_ROW.match(line)
        if m:
            seq, token, writer, item, at = m.groups()
            rows.append((int(seq), int(token), writer, int(item), at))
    return rows


def fencing_sqlite(env):
    db_args = ["--sqlite", str(env.dir / "journal.db")]
    journal(db_args)
    fencing(env, db_args, "sqlite", lambda: journal(db_args))


def fencing_postgres(env):
    try:
        pg = pgtemp.TempPostgres()
    except pgtemp.Unavailable as e:
        raise Skip(str(e)) from e
    with pg:
        log(f"postgres {pg.version()} up in {pg.started:.1f}s at {pg.dir}")
        db_args = ["--postgres", pg.conninfo]
        journal(db_args)
        fencing(env, db_args, "postgres", lambda: journal(db_args))


SCENARIOS = {"poller": poller, "fencing_sqlite": fencing_sqlite,
             "fencing_postgres": fencing_postgres}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sidecar", required=True)
    ap.add_argument("--apiserver", required=True)
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    names = list(SCENARIOS) if args.names in ([], ["all"]) else args.names
    failed, skipped = [], []
    for name in names:
        log(f"=== {name}")
        t0 = time.monotonic()
        try:
            with Env(args.sidecar, args.apiserver) as env:
                SCENARIOS[name](env)
            log(f"PASS {name} ({time.monotonic() - t0:.1f}s)")
        except Skip as e:
            log(f"SKIP {name}: {e}")
            skipped.append(name)
        except Exception as e:  # noqa: BLE001 - report every failure, then exit non-zero
            log(f"FAIL {name}: {type(e).__name__}: {e}")
            failed.append(name)
    if failed:
        return 1
    return SKIP if skipped and len(skipped) == len(names) else 0


if __name__ == "__main__":
    sys.exit(main())
