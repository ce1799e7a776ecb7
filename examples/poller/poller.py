#!/usr/bin/env python3
"""The smallest useful leasehold client: poll /leader, do the work only while leader.

    poller.py [--url http://127.0.0.1:4040/leader] [--interval 1] [--name NAME]

Python standard library only; runs next to the sidecar in the same pod. Each round it asks the
sidecar and either does one unit of work (here: prints a line) or idles. It never caches "I am
leader": the answer is only good for this round. Work that must not run twice (a write to
shared storage) should also carry the fencing token, see examples/fenced-writer.

Exits 0 on SIGTERM/SIGINT.
"""
import argparse
import json
import signal
import sys
import time
import urllib.error
import urllib.request


def ask(url, timeout):
    """The sidecar's answer as a dict, or None when it does not answer (treat as follower)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return json.load(resp)
    except (urllib.error.URLError, OSError, ValueError):
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default="http://127.0.0.1:4040/leader")
    ap.add_argument("--interval", type=float, default=1.0, help="seconds between rounds")
    ap.add_argument("--name", default="poller", help="prefix of every output line")
    args = ap.parse_args()

    stop = False

    def on_signal(signum, frame):
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    done = 0
    while not stop:
        st = ask(args.url, timeout=min(1.0, args.interval))
        if st is None:
            print(f"{args.name}: sidecar not answering; not working", flush=True)
        elif st.get("leader"):
            done += 1
            # The work. Keep one unit shorter than the renew deadline, and check again before
            # the next one: leadership can end at any moment (validUntil says when at the latest).
            print(f"{args.name}: leader (token {st['fencingToken']}, valid until "
                  f"{st['validUntil']}): work item {done}", flush=True)
        else:
            holder = st.get("name") or st.get("holder") or "nobody"
            print(f"{args.name}: follower (leader: {holder}, token {st.get('fencingToken')}); "
                  "idle", flush=True)
        time.sleep(args.interval)
    print(f"{args.name}: stopping after {done} work items", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
