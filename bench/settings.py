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
    # etcd (issue 25): the next leader after the server expired a killed leader's lease, and
    # SIGTERM handover, both p99
    "etcd_failover_after_expiry_p99_s": 0.050,
    "etcd_handover_p99_s": 0.010,
    "failover_p99_minus_D_s": 0.100,
    "handover_p99_s": 0.100,
    "request_p99_s": 0.020,
    "api_per_min_3": 35,
    "rss_kb": 8 * 1024,
    "threads": 2,
    "cpu_percent": 0.1,
    "http_ratio": 0.5,
    "paced_p99_us": 1000.0,
    # scale (issue 16): leasehold/client-go kube-apiserver CPU at the largest point; etcd reads
    # per minute each follower causes (the goal is 0; this is the noise the windows allow);
    # takeover p50 at the largest point minus alone; per-Lease requests/min within 60/P +- 10%
    "scale_apiserver_cpu_ratio": 0.5,
    "scale_follower_etcd_reads": 0.1,
    "scale_takeover_delta_s": 0.010,
    "scale_per_lease_tolerance": 0.10,
    # renew (issue 40): Lease writes per Lease at I = 15s over today's (P = 2s); kube-apiserver
    # CPU at D=60s R=40s I=15s with --fast-failover over client-go's at 15s/10s/2s
    "renew_writes_ratio": 0.25,
    "renew_apiserver_cpu_ratio": 0.3,
}
SECTIONS = ("load", "failover", "handover", "request", "http", "startup")
# Only when named (--only scale): hundreds of sidecars on the real API server, minutes long.
# Only when named (--only shards): issue 15's goals (shards.py).
# Only when named, alone (--only node): a single-node cluster with a real kubelet (node.py).
# Only when named (--only renew): issue 40's timings beside today's and client-go's (renew.py).
# Only when named, alone (--only zookeeper): beside kazoo's Election on one server (zookeeper.py).
EXTRA_SECTIONS = ("scale", "shards", "node", "etcd", "renew", "zookeeper")
VERBS = ("get", "list", "watch", "create", "update", "patch", "delete")

# scale: replicas on one Lease, Lease counts x per_lease replicas, the window of each point and
# implementation (the issue wishes 5 minutes at full size; 2 cores shared with other work fit
# 60 s: --scale-window sets another), settle after every Lease is led, the idle window, the
# takeover repetitions, how long every Lease may take to get a leader.
SCALE_FULL = dict(replicas=(3, 10, 30, 100), leases=(1, 10, 30), per_lease=10, window_s=60,
                  settle_s=10, idle_s=30, reps=10, startup_timeout_s=120)
SCALE_QUICK = dict(replicas=(1, 3), leases=(1, 2), per_lease=3, window_s=10, settle_s=3,
                   idle_s=5, reps=2, startup_timeout_s=60)

# renew: Scale's keys for its one point (leases x per_lease replicas), measured for each of its
# three contenders over the window (120 s: 8 renewals of a Lease at I = 15s, 60 at P = 2s).
RENEW_FULL = dict(replicas=(), leases=(30,), per_lease=10, window_s=120, settle_s=10, idle_s=30,
                  startup_timeout_s=120)
RENEW_QUICK = dict(replicas=(), leases=(2,), per_lease=3, window_s=30, settle_s=3, idle_s=5,
                   startup_timeout_s=60)

# shards: repetitions of join / SIGTERM / kill -9 (scaled timings), the API cost window and the
# settle before it (default timings).
SHARDS_FULL = dict(reps=10, window_s=60, settle_s=10)
SHARDS_QUICK = dict(reps=2, window_s=10, settle_s=3)

PROFILES = {
    # reps: failover/handover repetitions; load_s: API load window; cpu_s: idle CPU window;
    # wrk_s: each wrk run; paced_s: the 1,000 req/s run; startup: repetitions; scale: above.
    "full": dict(reps=30, load_s=300, cpu_s=60, wrk_s=10, paced_s=30, startup=10,
                 scale=SCALE_FULL, shards=SHARDS_FULL, renew=RENEW_FULL),
    "quick": dict(reps=8, load_s=60, cpu_s=60, wrk_s=5, paced_s=10, startup=5,
                  scale=SCALE_QUICK, shards=SHARDS_QUICK, renew=RENEW_QUICK),
    "smoke": dict(reps=1, load_s=8, cpu_s=5, wrk_s=1, paced_s=1, startup=1, scale=SCALE_QUICK,
                  shards=SHARDS_QUICK, renew=RENEW_QUICK),
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


class SectionServer:
    """bench/run's server for a section that brings up its own (--only node: a single-node
    cluster; --only etcd: an etcd member): nothing to start, nothing shared."""

    def __init__(self, kind):
        self.kind = kind

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def describe(self):
        return {"kind": self.kind}

    @staticmethod
    def forbidden():
        return []

    @staticmethod
    def envs():
        return []
