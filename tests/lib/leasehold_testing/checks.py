"""What every test step uses: a timestamped log line, the Failure a check raises, waiting for a
condition with a deadline, and running named steps one after the other (run_steps)."""
import time

from . import machine_stalls


def log(*args):
    print(f"[{time.strftime('%H:%M:%S')}]", *args, flush=True)


class Failure(Exception):
    pass


def check(cond, message):
    if not cond:
        raise Failure(message)


def check_took(start, end, most, message, least=None):
    """`end - start` (wall-clock seconds) at least `least` and at most `most` plus the time the
    whole machine stood still between them (machine_stalls): how long the product took, not how
    long a paused machine did. A failure says what it measured."""
    took = end - start
    if least is not None and took < least:
        raise Failure(f"{message}: took {took:.3f}s, less than {least}s")
    stalled = machine_stalls.seconds_between(start, end)
    if took > most + stalled:
        extra = f" + {stalled:.2f}s the machine stood still" if stalled else ""
        raise Failure(f"{message}: took {took:.3f}s, more than {most}s{extra}")


def wait_for(what, fn, timeout, interval=0.02):
    """`fn()`'s first true value, asked every `interval` for `timeout` seconds, plus the time
    the whole machine stood still meanwhile (machine_stalls): a wait measures the product, not
    a paused machine."""
    started = time.time()
    deadline = time.monotonic() + timeout
    given = 0.0
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            stalled = machine_stalls.seconds_between(started, time.time())
            if stalled <= given:
                extra = f" (+{given:.2f}s the machine stood still)" if given else ""
                raise Failure(f"timed out after {timeout}s{extra} waiting for {what}")
            deadline += stalled - given
            given = stalled
        time.sleep(interval)


def run_steps(names, run_one, errors=(Failure,)):
    """Runs the named steps in order (`run_one(name)`); a step that raises one of `errors` fails
    on its own and the others still run. Prints a line per step and PASS or FAILED: <names>;
    returns the exit status."""
    failed = []
    for name in names:
        log(f"=== {name}")
        t0, began = time.monotonic(), time.time()
        try:
            run_one(name)
            log(f"PASS {name} ({time.monotonic() - t0:.1f}s)")
        except errors as e:
            log(f"FAIL {name}: {e}{machine_stalls.describe(began, time.time())}")
            failed.append(name)
    log("FAILED: " + " ".join(failed) if failed else "PASS")
    return 1 if failed else 0
