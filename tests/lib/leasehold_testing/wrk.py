"""The one wrk runner: /leader under load (tests/load, the bench's http section)."""
import re
import subprocess

from .checks import Failure

_UNITS_US = {"us": 1.0, "ms": 1000.0, "s": 1e6}
_SOCKET_ERRORS = re.compile(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)")


def parse(text):
    """wrk --latency's report as numbers: rps, requests, latency_us {"50%": us, ...}, non2xx,
    socket_errors (their sum) and socket_errors_by_kind."""
    out = {"rps": None, "requests": None, "latency_us": {}, "non2xx": 0, "socket_errors": 0,
           "socket_errors_by_kind": {}}
    for line in text.splitlines():
        parts = line.split()
        if line.startswith("Requests/sec:"):
            out["rps"] = float(parts[1])
        elif len(parts) == 2 and parts[0].endswith("%") and \
                parts[0][:-1].replace(".", "").isdigit():
            for unit in ("us", "ms", "s"):
                if parts[1].endswith(unit):
                    out["latency_us"][parts[0]] = float(parts[1][:-len(unit)]) * _UNITS_US[unit]
                    break
        elif "Non-2xx or 3xx responses:" in line:
            out["non2xx"] = int(parts[-1])
        elif "requests in" in line:
            out["requests"] = int(parts[0])
        else:
            m = _SOCKET_ERRORS.search(line)
            if m:
                kinds = dict(zip(("connect", "read", "write", "timeout"), map(int, m.groups())))
                out["socket_errors_by_kind"] = kinds
                out["socket_errors"] = sum(kinds.values())
    return out


def run(url, connections, seconds, threads=1, timeout=None):
    """wrk -t THREADS -c CONNECTIONS -d SECONDS --latency [--timeout T] URL; the parsed report
    plus the connections and the raw text. A failed run or an unreadable report is a Failure."""
    argv = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency",
            *(["--timeout", f"{timeout}s"] if timeout else []), url]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 30)
    res = parse(r.stdout)
    if r.returncode != 0 or res["rps"] is None or res["requests"] is None:
        raise Failure(f"{' '.join(argv)}: exit {r.returncode}: {r.stderr.strip() or r.stdout}")
    res.update(connections=connections, raw=r.stdout)
    return res
