"""Kubernetes time stamps as the tests read them."""
from datetime import datetime, timezone


def epoch(text, _cache={}):
    """A Kubernetes MicroTime ("2026-11-30T10:05:02.123456Z") or Time (whole seconds,
    "2026-11-30T10:05:02Z", as a container's startedAt/finishedAt) as seconds since the epoch."""
    v = _cache.get(text)
    if v is None:
        v = datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ" if "." in text else
                              "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()
        if len(_cache) > 100000:
            _cache.clear()
        _cache[text] = v
    return v
