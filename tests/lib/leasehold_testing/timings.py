"""The scaled timings of the integration, chaos, load and deploy runs: D=2s, R=1.5s, P=0.3s, so
scenarios take seconds.

LEASEHOLD_TEST_SLOWDOWN=F (a number >= 1, default 1) stretches them for a slower build or
machine: D, R, P and the sidecar flags in TIMINGS are F times as long (the flags in whole
milliseconds), and slack(seconds) is F times the machine time a test allows for its own work.
F is rounded up to a multiple of 0.5 (SLOWDOWN), since D = 2 s x F must be whole seconds (the
Lease stores leaseDurationSeconds; the sidecar refuses anything else).
Under ASan the sidecars and the test API server run 2-3x slower, and a shard group's 16 Leases
per replica renewed every P no longer fit in 2 cores at P = 0.3 s; at F = 3 every renewal, request
deadline (R/2 in the product) and expiry is three times as long, so the same scenario asks the
same of the product with a third of the load. Unset, everything is exactly as at F = 1. A test
derives its bounds from D, R, P and slack(), never from bare seconds, so that they stretch
together."""
import math
import os

SLOWDOWN_VARIABLE = "LEASEHOLD_TEST_SLOWDOWN"


def slowdown_from(environ):
    """The factor in `environ` (1.0 when unset or empty), rounded up to a multiple of 0.5; a
    ValueError naming the variable when it is not a finite number >= 1."""
    text = environ.get(SLOWDOWN_VARIABLE, "").strip()
    if not text:
        return 1.0
    try:
        value = float(text)
    except ValueError:
        value = None
    # 1 at least: a smaller factor would shorten the timings below what the release build has
    # been shown to need; not inf or nan, which would make every bound meaningless.
    if value is None or not 1.0 <= value < float("inf"):
        raise ValueError(f"{SLOWDOWN_VARIABLE}={text!r}: expected a number >= 1 (the factor the "
                         "test timings are stretched by, e.g. 3 under ASan)")
    # Up to a multiple of 0.5: D = 2 s x F in whole seconds.
    return math.ceil(value * 2) / 2


def duration_flag(seconds):
    """`seconds` as the sidecar's flags take it: whole seconds as "2s" (as the flags always were),
    anything else in whole milliseconds ("1500ms", "4500ms"), which the duration parser takes
    exactly."""
    ms = round(seconds * 1000)
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"


SLOWDOWN = slowdown_from(os.environ)


def slack(seconds):
    """The machine's part of a bound: `seconds` of work as the release build needs it on the
    shared 2-core CI machine (a process start, an API round trip, a poll that sees a change),
    times SLOWDOWN (to the millisecond, so that it prints as it reads: 0.9, not 0.8999...)."""
    return round(seconds * SLOWDOWN, 3)


def scaled(seconds):
    """`seconds` of the release timings, times SLOWDOWN, in whole milliseconds: D, R and P are
    exactly what their flags say."""
    return round(seconds * SLOWDOWN * 1000) / 1000


D, R, P = scaled(2.0), scaled(1.5), scaled(0.3)
TIMINGS = ["--lease-duration", duration_flag(D), "--renew-deadline", duration_flag(R),
           "--retry-period", duration_flag(P)]
