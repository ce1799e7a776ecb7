"""The sidecar's /metrics (Prometheus text format) as numbers."""


def parse(text):
    """{series: value}, a series being the name with its labels as printed
    ('leasehold_renewals_total{result="success"}'); comments and blank lines are skipped."""
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, _, value = line.rpartition(" ")
        try:
            out[name] = float(value)
        except ValueError:
            pass
    return out
