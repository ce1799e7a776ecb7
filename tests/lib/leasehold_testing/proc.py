"""The /proc sampler: what the kernel says about a process under test (the soak's flat-line
check, the bench's footprint and idle CPU, a stopped writer in the examples' test)."""
import os
from pathlib import Path


def footprint(pid):
    """RSS figures (kB: VmRSS, VmHWM, RssAnon, RssFile; Pss and Private from smaps_rollup when
    readable), threads and open fds of a process; None once it is gone."""
    try:
        status = {}
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            k, _, v = line.partition(":")
            status[k] = v.strip()
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, ValueError):
        return None

    def kb(k):
        return int(status[k].split()[0]) if k in status else None
    rollup = {}
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
            k, _, v = line.partition(":")
            rollup[k.strip()] = int(v.split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return {"VmRSS_kB": kb("VmRSS"), "VmHWM_kB": kb("VmHWM"), "RssAnon_kB": kb("RssAnon"),
            "RssFile_kB": kb("RssFile"), "Pss_kB": rollup.get("Pss"),
            "Private_kB": (rollup.get("Private_Clean", 0) + rollup.get("Private_Dirty", 0))
            if rollup else None,
            "threads": int(status["Threads"]), "fds": fds}


def rss_kb(pid):
    """VmRSS alone (kB), cheap enough to read for hundreds of processes a second (the scale
    bench); None once the process is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def state(pid):
    """The process state letter of /proc/PID/stat ("R", "S", "T" when stopped, ...), or None
    once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def cpu_ticks(pid):
    """utime + stime in clock ticks (fields 14 and 15 of /proc/PID/stat): kept when a thread
    exits, at 10 ms resolution."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def cpu_ns(pid):
    """On-CPU time in ns of every thread: /proc/PID/schedstat is the main thread's alone, and a
    Go program (client-go) does its work on other threads. A thread that exits takes its time
    with it (cpu_ticks keeps it, at 10 ms resolution)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            total += int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def children(pid):
    """The pids of a process's children (of every thread)."""
    out = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            out += [int(c) for c in Path(f"/proc/{pid}/task/{tid}/children").read_text().split()]
        except OSError:
            pass
    return out
