"""Stalls of the whole machine, seen by a probe that has nothing to do with the tests.

A test of real processes measures the product in wall time: a handover within D, a SIGKILL at
the drain timeout. When the machine itself stops (the virtual machine paused by its host, the
disk not answering), every process stops with it, the product, its control plane and the test,
and a bound derived from the timings fails through nobody's fault. The probe makes that
visible: scripts/test.sh runs it beside the stages, and it notes every time its own 20 ms sleep
took much longer, or a small write to a file in the report folder did. A failed scenario
names the stalls that overlapped it (scenario_runner, checks.run_steps); wait_for gives a wait
back the time the machine stood still; the run ends with the list.

    python3 tests/lib/leasehold_testing/machine_stalls.py probe --log FILE --parent PID
    python3 tests/lib/leasehold_testing/machine_stalls.py summary FILE

(as a file, not with -m: the package imports it, and standard library only, so that the probe
starts without the rest of the package).

The log (LEASEHOLD_STALL_LOG, set by test.sh) has a line per stall: wall-clock end, seconds,
kind (sleep: the probe was not scheduled; write: a 64-byte write blocked), and the pressure
stall information of the moment (/proc/pressure, avg10). A probe process is not the product:
a stall of the product's own loop does not show here, so a product bug cannot hide behind it."""
import argparse
import os
import signal
import sys
import time

STALL_LOG_VARIABLE = "LEASEHOLD_STALL_LOG"
PERIOD = 0.02
# What counts as a stall: far beyond a busy 2-core machine's scheduling delay (tens of ms), well
# below the timings' slack (0.5 s and up).
THRESHOLD = 0.25


def _pressure():
    parts = []
    for kind in ("cpu", "io", "memory"):
        try:
            with open(f"/proc/pressure/{kind}") as f:
                parts.append(f"{kind}={f.readline().split()[1].split('=')[1]}")
        except (OSError, IndexError):
            pass
    return " ".join(parts) or "-"


def probe(log_path, parent, max_seconds):
    """Notes stalls in `log_path` until `parent` is gone or `max_seconds` have passed."""
    scratch_path = log_path + ".scratch"
    scratch = os.open(scratch_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        _probe(log_path, parent, max_seconds, scratch)
    finally:
        os.close(scratch)
        os.unlink(scratch_path)


def _probe(log_path, parent, max_seconds, scratch):
    end = time.monotonic() + max_seconds
    last_parent_check = 0.0
    writes = 0
    with open(log_path, "a", buffering=1) as log:
        last = time.monotonic()
        while last < end:
            time.sleep(PERIOD)
            now = time.monotonic()
            slept = now - last
            if slept - PERIOD > THRESHOLD:
                log.write(f"{time.time():.3f}\t{slept - PERIOD:.3f}\tsleep\t{_pressure()}\n")
            t0 = time.monotonic()
            os.write(scratch, b"x" * 64)
            wrote = time.monotonic() - t0
            if wrote > THRESHOLD:
                log.write(f"{time.time():.3f}\t{wrote:.3f}\twrite\t{_pressure()}\n")
            writes += 1
            if writes % 5000 == 0:
                os.ftruncate(scratch, 0)
                os.lseek(scratch, 0, os.SEEK_SET)
            last = time.monotonic()
            if last - last_parent_check > 1.0:
                last_parent_check = last
                try:
                    os.kill(parent, 0)
                except ProcessLookupError:
                    break


class Stall:
    def __init__(self, end, seconds, kind, pressure):
        self.end, self.seconds, self.kind, self.pressure = end, seconds, kind, pressure

    @property
    def start(self):
        return self.end - self.seconds

    def __str__(self):
        at = time.strftime("%H:%M:%S", time.localtime(self.start))
        what = ("the probe's 20 ms sleep" if self.kind == "sleep"
                else "the probe's 64-byte write")
        return f"{self.seconds:.2f}s from {at} ({what}; pressure {self.pressure})"


def read(path=None):
    """Every stall in the log (`path`, else $LEASEHOLD_STALL_LOG); [] without one."""
    path = path or os.environ.get(STALL_LOG_VARIABLE)
    if not path:
        return []
    stalls = []
    try:
        with open(path) as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) == 4:
                    try:
                        stalls.append(Stall(float(parts[0]), float(parts[1]), parts[2], parts[3]))
                    except ValueError:
                        continue
    except OSError:
        return []
    return stalls


def between(t0, t1, path=None):
    """The stalls that overlapped the wall-clock interval [t0, t1]."""
    return [s for s in read(path) if s.end >= t0 and s.start <= t1]


def seconds_between(t0, t1, path=None):
    """How long the machine stood still within [t0, t1] (overlapping stalls counted once)."""
    total, covered_to = 0.0, t0
    for s in sorted(between(t0, t1, path), key=lambda s: s.start):
        lo, hi = max(s.start, covered_to), min(s.end, t1)
        if hi > lo:
            total += hi - lo
            covered_to = hi
    return total


def describe(t0, t1, path=None):
    """A sentence for a failure's message, or "" when the machine did not stall."""
    found = between(t0, t1, path)
    if not found:
        return ""
    return ("; the whole machine stalled meanwhile (every process, not only this test's: "
            + ", ".join(str(s) for s in found) + ")")


def summary(path):
    stalls = read(path)
    if not stalls:
        return "machine stalls: none (no stall of the probe over 0.25 s)"
    longest = max(stalls, key=lambda s: s.seconds)
    lines = [f"machine stalls: {len(stalls)} (the probe beside the tests stood still over "
             f"{THRESHOLD}s); the longest {longest}"]
    lines += [f"  {s}" for s in stalls[:20]]
    if len(stalls) > 20:
        lines.append(f"  ... {len(stalls) - 20} more in {path}")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("probe")
    p.add_argument("--log", required=True)
    p.add_argument("--parent", type=int, required=True, help="stop when this process is gone")
    p.add_argument("--max-seconds", type=float, default=4 * 3600)
    s = sub.add_parser("summary")
    s.add_argument("log")
    args = ap.parse_args()
    if args.command == "probe":
        probe(args.log, args.parent, args.max_seconds)
    else:
        print(summary(args.log))


if __name__ == "__main__":
    main()
