"""What every test step uses: a timestamped log line, the Failure a check raises, and waiting
for a condition with a deadline."""
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
