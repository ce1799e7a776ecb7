"""The chart's values as numbers: its durations ("15s", "500ms") and Kubernetes resource
quantities (memory "32Mi", CPU "100m"), for the tests that run what the chart renders."""
import re

from .checks import check


def parse_duration(text):
    """Seconds of a chart duration: a number with ms, s or m."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m)", str(text))
    check(m, f"cannot read the chart's duration {text!r}")
    return float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60}[m.group(2)]


def memory_bytes(q):
    """Bytes of a memory quantity (a plain number, or with k, M, G, Ki, Mi, Gi)."""
    m = re.fullmatch(r"(\d+)(Ki|Mi|Gi|k|M|G)?", str(q))
    check(m, f"cannot read the memory quantity {q!r}")
    mult = {None: 1, "k": 1000, "M": 10**6, "G": 10**9, "Ki": 1024, "Mi": 1024**2,
            "Gi": 1024**3}[m.group(2)]
    return int(m.group(1)) * mult


def millicpu(q):
    """Thousandths of a core of a CPU quantity ("250m" or "0.5")."""
    q = str(q)
    return int(q[:-1]) if q.endswith("m") else int(float(q) * 1000)
