"""What bench/run's sections share: the timings, goals and profiles, the run's modes (ours, then
the baseline) and client-go binary, the extra flags of --debug-logs, the processes to kill at the
end, and the percentile summary."""
import statistics
from pathlib import Path

from leasehold_testing.paths import ROOT

SCALED = {"D": 2.0, "R": 1.5, "P": 0.3}
SCALED_ARGS = ["--lease-duration", "2s", "--renew-deadline", "1500ms", "--retry-period", "300ms"]
DEFAULT_ARGS = ["--lease-duration", "15s", "--renew-deadline", "10s", "--retry-period", "2s"]
REALKUBE_BIN = ROOT / "build/realkube/bin"
CLIENTGO_BIN = ROOT / "build/bench/clientgo"  # --clientgo sets another
# Ours, then the baseline (--baseline sets it): "poll" (leasehold --follower-mode poll) or
# "client-go" (bench/clientgo, real client-go).
MODES = ["watch", "poll"]
BASELINE_LABEL = {
    "poll": "client-go behaviour (leasehold --follower-mode poll)",
    "client-go": "client-go {version} (bench/clientgo, measured)",
}
GOALS = {
    "failover_p99_minus_D_s": 0.100,
    "handover_p99_s": 0.100,
    "request_p99_s": 0.020,
    "api_per_min_3": 35,
    "rss_kb": 8 * 1024,
    "threads": 2,
    "cpu_percent": 0.1,
    "http_ratio": 0.5,
    "paced_p99_us": 1000.0,
}
SECTIONS = ("load", "failover", "handover", "request", "http", "startup")
VERBS = ("get", "list", "watch", "create", "update", "patch", "delete")

PROFILES = {
    # reps: failover/handover repetitions; load_s: API load window; cpu_s: idle CPU window;
    # wrk_s: each wrk run; paced_s: the 1,000 req/s run; startup: repetitions.
    "full": dict(reps=30, load_s=300, cpu_s=60, wrk_s=10, paced_s=30, startup=10),
    "quick": dict(reps=8, load_s=60, cpu_s=60, wrk_s=5, paced_s=10, startup=5),
    "smoke": dict(reps=1, load_s=8, cpu_s=5, wrk_s=1, paced_s=1, startup=1),
}

started = []  # (Popen, kill-the-process-group?) of everything we start outside Env
SIDECAR_EXTRA = []  # --debug-logs adds --log-level debug
CLIENTGO_EXTRA = []  # --debug-logs adds -v=4


def pct(values, p):
    """Percentile with linear interpolation (p in 0..100); None for no values."""
    if not values:
        return None
    v = sorted(values)
    k = (len(v) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def summary(values):
    return {"n": len(values), "min": min(values, default=None), "p50": pct(values, 50),
            "p90": pct(values, 90), "p99": pct(values, 99), "max": max(values, default=None),
            "mean": statistics.fmean(values) if values else None}


def loadavg():
    try:
        return Path("/proc/loadavg").read_text().split()[:3]
    except OSError:
        return None
