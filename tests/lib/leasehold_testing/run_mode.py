"""Run mode seen from outside: every instance of the command that `leasehold run` supervisors
started, from /proc and the command's journal, and the checks that no two ran at once. Shared by
the run-mode integration scenarios (tests/integration/run_scenarios.py) and the chaos runner's
run-mode flavour (tests/chaos/run --run-mode).

The command is run_mode_command.py (beside this file; RUN_COMMAND): it appends a "start" record
(token, identity, pid, its supervisor's pid, grandchild) to a JSON-lines journal, keeps a
grandchild, writes its token to a FencedStore every 50 ms.

An instance runs from its fork (the kernel's start time, at 10 ms resolution, rounded down)
until no process of its group runs any more: each is gone, a zombie, or has a SIGKILL pending
(it executes nothing of its own after that, but on a loaded machine it may wait hundreds of ms
for the CPU to exit). The checks (`command_failures`):
  - no two instances ran at the same time ([start, stop] never overlap, across replicas);
  - every instance stopped by R (+ a tolerance for the 20 ms polling on a shared machine) after
    its supervisor's last successful write of that term (its "became leader"/"renewed" debug
    log lines: their time is after the write's send time, so the bound is if anything
    generous by a request's round trip);
  - no process of a stopped group survives (the grandchild and the sleep under it included);
  - no write with a token older than an instance already started was attempted, so none can
    have been accepted, and the accepted tokens never go down.
In shard mode (`leasehold run --shards N`) the journal's start record carries LEASEHOLD_SHARD
(Instance.shard) and every check is per shard: no two instances of one shard at once, each
stopped by R after its shard's last renewal (log lines with that "shard"), one fenced store per
shard (store_for).
"""
import json
import os
import threading
import time
from pathlib import Path

from .checks import log
from .fenced_store import FencedStore
from .kube_time import epoch
from .timings import R

RUN_COMMAND = Path(__file__).resolve().parent / "run_mode_command.py"
TICKS = os.sysconf("SC_CLK_TCK")


def store_for(store, shard):
    """The fenced store of one shard (shard None: the single Lease's, `store` itself)."""
    return Path(store) if shard is None else Path(f"{store}-shard{shard}")


def run_args(sidecar_args, run_flags, command):
    """`leasehold run [the sidecar's flags] [run flags] -- command` from a Sidecar's args;
    --log-level debug so that every renewal is in the log (`claims`)."""
    return [sidecar_args[0], "run", *sidecar_args[1:], "--log-level", "debug", *run_flags, "--",
            *command]


def journal_command(journal, store, *flags):
    """The command line of run_mode_command.py with its journal and fenced store."""
    return ["python3", str(RUN_COMMAND), "--journal", str(journal), "--store", str(store),
            *flags]


def claims(sidecar, shard=None):
    """(token, claim end in wall-clock seconds) for every confirmed write of a term in a
    supervisor's log: the log line's time + R; of one shard's Lease when `shard` is given."""
    out = []
    for line in sidecar.log_lines():
        if shard is not None and line.get("shard") != str(shard):
            continue
        if line.get("msg") in ("became leader", "renewed") and "token" in line:
            out.append((int(line["token"]), epoch(line["ts"]) + R))
    return out


def boot_to_wall():
    """Seconds to add to a CLOCK_BOOTTIME reading to get wall-clock time, now."""
    return time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)


def scan_proc():
    """pid -> (ppid, pgrp, state, start in wall-clock seconds) for every process."""
    offset = boot_to_wall()
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = text.rsplit(")", 1)[1].split()
        out[int(entry)] = (int(fields[1]), int(fields[2]), fields[0],
                           int(fields[19]) / TICKS + offset)
    return out


def cmdline(pid):
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def is_command(pid):
    """Whether `pid` runs run_mode_command.py: its argv is [python3, .../run_mode_command.py,
    ...]. Between fork and exec a child still shows its parent's argv, which for a supervisor
    names the command too (after `--`): the watchdog, or the command not yet executed."""
    argv = cmdline(pid).split("\0")
    return (len(argv) > 1 and os.path.basename(argv[0]).startswith("python")
            and argv[1].endswith("run_mode_command.py"))


def shard_of(pid):
    """LEASEHOLD_SHARD in the environment `pid` was executed with, None if none (or gone): a
    command killed before it wrote its journal record still names its shard."""
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    for item in env:
        if item.startswith(b"LEASEHOLD_SHARD="):
            return int(item.split(b"=", 1)[1])
    return None


SIGKILL_BIT = 1 << (9 - 1)


def doomed(pid):
    """Whether a SIGKILL is pending for `pid`: it runs no more of its own code, although on a
    loaded machine it may take a while to be scheduled, exit and become a zombie."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    for line in status.splitlines():
        if line.startswith(("SigPnd:", "ShdPnd:")) and int(line.split()[1], 16) & SIGKILL_BIT:
            return True
    return False


def running_in_group(pid, group):
    """Whether `pid` runs in process group `group`: not a zombie, no SIGKILL pending."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] != "Z" and int(fields[2]) == group and not doomed(pid)


def group_gone(group):
    """No process of the group runs: none left at all (kill(-group, 0) fails), or only zombies
    and processes with a SIGKILL pending."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return not any(pgrp == group and state != "Z" and not doomed(pid)
                   for pid, (_, pgrp, state, _) in scan_proc().items())


class Instance:
    """One run of the command. `replica`: the supervisor (a Sidecar) that started it;
    `last_alive`: the latest moment a process of the group was seen running; `stop`: the first
    moment none was."""

    def __init__(self, replica, pid, start):
        self.replica, self.pid, self.start = replica, pid, start
        self.members = {pid}
        self.last_alive = start
        self.stop = None
        self.token = None
        self.shard = None  # LEASEHOLD_SHARD from its journal record (shard mode)
        self.record = None  # its journal "start" record
        self.grandchild = None
        self.term_at = None

    def __repr__(self):
        stop = f"{self.stop:.3f}" if self.stop else "running"
        name = getattr(self.replica, "label", None) or getattr(self.replica, "name", "?")
        shard = f" shard {self.shard}" if self.shard is not None else ""
        return f"<{name}{shard} pid {self.pid} token {self.token} {self.start:.3f}..{stop}>"


class Monitor(threading.Thread):
    """Every 5 ms, whether each running command's group still runs (its known processes'
    /proc/PID/stat; when none does, kill(-group, 0) or a full scan decides); every 20 ms, the
    supervisors' new command children and group members in /proc and the new journal lines.
    `replicas` is the list of supervisors (Sidecars), which may grow while it runs (a chaos run
    restarts them)."""

    def __init__(self, replicas, journal):
        super().__init__(daemon=True)
        self.replicas, self.journal = replicas, Path(journal)
        self.instances = {}  # pid -> Instance
        self.events = []     # journal records
        self.offset = 0
        self.stop_event = threading.Event()
        self.lock = threading.Lock()
        # Its own pace, for a failure's message (describe): when the loop last went round and
        # its longest time between two rounds, which a blocked /proc read would show.
        self.last_round = None
        self.longest_gap = (0.0, None)

    def run(self):
        tick = 0
        while not self.stop_event.is_set():
            now = time.time()
            if self.last_round is not None and now - self.last_round > self.longest_gap[0]:
                self.longest_gap = (now - self.last_round, self.last_round)
            self.last_round = now
            if tick % 4 == 0:
                self.scan()
            self.watch_groups()
            tick += 1
            self.stop_event.wait(0.005)

    def describe(self):
        """What this Monitor saw and how it kept up, for a failed wait's message."""
        gap, at = self.longest_gap
        since = f"{time.time() - self.last_round:.2f}s ago" if self.last_round else "never"
        when = f" (from {at:.3f})" if at else ""
        return (f"monitor: alive={self.is_alive()}, last round {since}, longest gap between "
                f"rounds {gap:.2f}s{when}, instances {self.all()}")

    def watch_groups(self):
        with self.lock:
            running = [i for i in self.instances.values() if i.stop is None]
        for inst in running:
            before = time.time()
            if any(running_in_group(pid, inst.pid) for pid in list(inst.members)):
                inst.last_alive = before
            elif group_gone(inst.pid):
                inst.stop = time.time()
            else:
                self.scan()  # a member this monitor did not know yet

    def supervisors(self):
        return {r.proc.pid: r for r in list(self.replicas) if r.proc is not None}

    def scan(self):
        procs = scan_proc()
        with self.lock:
            supervisors = self.supervisors()
            for pid, (ppid, pgrp, state, start) in procs.items():
                if (ppid in supervisors and pid == pgrp and pid not in self.instances
                        and is_command(pid)):
                    self.instances[pid] = Instance(supervisors[ppid], pid, start)
                    self.instances[pid].shard = shard_of(pid)
                if state != "Z" and pgrp in self.instances:
                    self.instances[pgrp].members.add(pid)
            self.read_journal(procs, supervisors)

    def read_journal(self, procs, supervisors):
        if not self.journal.exists():
            return
        with open(self.journal, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        end = data.rfind(b"\n") + 1
        self.offset += end
        for line in data[:end].splitlines():
            record = json.loads(line)
            self.events.append(record)
            pid = record["pid"]
            inst = self.instances.get(pid)
            if inst is None and record["event"] == "start":
                # Started and (maybe) gone between two scans: its own record says when, and
                # which supervisor started it.
                replica = supervisors.get(record.get("supervisor"))
                start = procs[pid][3] if pid in procs else record["t"]
                inst = self.instances[pid] = Instance(replica, pid, start)
                inst.last_alive = record["t"]
            if inst is None:
                continue
            if record["event"] == "start":
                inst.token, inst.grandchild = record["token"], record["grandchild"]
                inst.shard, inst.record = record.get("shard"), record
                inst.last_alive = max(inst.last_alive, record["t"])
            elif record["event"] == "term":
                inst.term_at = record["t"]

    def finish(self):
        self.stop_event.set()
        self.join()
        self.scan()
        self.watch_groups()

    def of(self, replica):
        with self.lock:
            return sorted((i for i in self.instances.values() if i.replica is replica),
                          key=lambda i: i.start)

    def all(self):
        with self.lock:
            return sorted(self.instances.values(), key=lambda i: i.start)

    def running(self):
        return [i for i in self.all() if i.stop is None]


def command_failures(instances, store_path, tolerance, claim_bound=None):
    """The checks of the module docstring over every instance a Monitor saw (after finish()):
    a list of failures, empty when all hold. `claim_bound(instance, claim_end)` may widen "stopped
    by R" for one instance (a supervisor whose clock runs slow claims R of its own time)."""
    failures = []
    if not instances:
        return ["no command ever ran"]
    for i in instances:
        if i.stop is None:
            failures.append(f"{i} never stopped")
    # No overlap, across replicas (and within one: a restart follows the previous run), per
    # shard in shard mode.
    # Overlap is certain when b had surely started (its fork time, rounded down to the 10 ms
    # tick, + 10 ms) while a was still seen running; the two clocks read are the same.
    by_shard = {}
    for i in instances:
        by_shard.setdefault(i.shard, []).append(i)
    gaps = []
    for same in by_shard.values():
        for a, b in zip(same, same[1:]):
            if b.start + 0.01 < a.last_alive:
                failures.append(f"{a} and {b} ran at the same time: {b} started "
                                f"{a.last_alive - b.start:.3f}s before {a} was last seen running")
        gaps += [b.start - a.stop for a, b in zip(same, same[1:]) if a.stop]
    if gaps:
        log("gaps between instances (next fork - group gone, each to ~10 ms): "
            + ", ".join(f"{g:.3f}s" for g in gaps[:20]) + (" ..." if len(gaps) > 20 else ""))
    # Stopped by R after the last successful renewal of its term.
    worst = None
    for i in instances:
        if i.token is None or i.stop is None:
            continue
        if i.replica is None:
            failures.append(f"{i}: no supervisor known for it")
            continue
        ends = [end for token, end in claims(i.replica, i.shard)
                if token == i.token and end <= i.stop + R]
        if not ends:
            failures.append(f"{i}: no confirmed write of term {i.token} in its supervisor's log")
            continue
        claim_end = max(ends)
        bound = claim_bound(i, claim_end) if claim_bound else claim_end
        margin = bound - i.stop
        worst = margin if worst is None else min(worst, margin)
        if i.stop > bound + tolerance:
            failures.append(f"{i} stopped {i.stop - bound:.3f}s after its claim ended (R after "
                            f"the last renewal)")
    if worst is not None:
        log(f"every command stopped by its claim's end (+{tolerance}s); the closest by "
            f"{worst:.3f}s")
    # Nothing of a stopped group survives.
    procs = scan_proc()
    for i in instances:
        alive = [pid for pid, (_, pgrp, state, _) in procs.items()
                 if pgrp == i.pid and state != "Z" and not doomed(pid)]
        if alive:
            failures.append(f"{i}: processes {alive} of its group survive")
        if (i.grandchild and i.grandchild in procs and procs[i.grandchild][2] != "Z"
                and not doomed(i.grandchild)):
            failures.append(f"{i}: grandchild {i.grandchild} survives")
    # Fencing: no attempt with a token older than an instance that had already started (per
    # shard: each has its own tokens and store).
    accepted_n = rejected_n = stale_n = 0
    for shard, same in sorted(by_shard.items(), key=lambda kv: -1 if kv[0] is None else kv[0]):
        path = store_for(store_path, shard)
        rows = FencedStore(path).rows() if path.exists() else []
        accepted = [r for r in rows if r[5]]
        tokens = [r[1] for r in accepted]
        where = "" if shard is None else f"shard {shard}: "
        if tokens != sorted(tokens):
            failures.append(f"{where}accepted tokens went down")
        started = [(i.start, i.token) for i in same if i.token is not None]
        stale = [r for r in rows if any(start < r[4] and token > r[1] for start, token in started)]
        if stale:
            failures.append(f"{where}{len(stale)} write(s) with a stale token, first {stale[:3]}")
        accepted_n += len(accepted)
        rejected_n += len(rows) - len(accepted)
        stale_n += len(stale)
    log(f"commands: {len(instances)} instances; fenced writes: {accepted_n} accepted, "
        f"{rejected_n} rejected, {stale_n} stale")
    return failures
