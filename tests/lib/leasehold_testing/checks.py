"""What every test step uses: a timestamped log line, the Failure a check raises, waiting for a
condition with a deadline, and running named steps one after the other (run_steps)."""
import time


def log(*args):
    print(f"[{time.strftime('%H:%M:%S')}]", *args, flush=True)


class Failure(Exception):
    pass


def check(cond, message):
    if not cond:
        raise Failure(message)


def wait_for(what, fn, timeout, interval=0.02):
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise Failure(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def run_steps(names, run_one, errors=(Failure,)):
    """Runs the named steps in order (`run_one(name)`); a step that raises one of `errors` fails
    on its own and the others still run. Prints a line per step and PASS or FAILED: <names>;
    returns the exit status."""
    failed = []
    for name in names:
        log(f"=== {name}")
        t0 = time.monotonic()
        try:
            run_one(name)
            log(f"PASS {name} ({time.monotonic() - t0:.1f}s)")
        except errors as e:
            log(f"FAIL {name}: {e}")
            failed.append(name)
    log("FAILED: " + " ".join(failed) if failed else "PASS")
    return 1 if failed else 0
