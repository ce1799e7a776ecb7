"""bench/run --only zookeeper's kazoo contender: kazoo's Election recipe (Debian's python3-kazoo,
run by /usr/bin/python3) as a careful kazoo program writes it.

    /usr/bin/python3 bench/kazoo_candidate.py SERVERS PATH IDENTITY SESSION_TIMEOUT_S

A KazooClient asking for SESSION_TIMEOUT_S, Election(PATH, IDENTITY).run(lead) in a thread of
its own; the main thread waits for SIGTERM (blocked in every thread, taken by sigwait, so no
handler runs inside kazoo's waits). On SIGTERM: a leader ends its term (lead() returns, the
recipe's Lock deletes its node), a queued candidate cancels its acquire (the Lock deletes its
node), then zk.stop() closes the session. A term also ends when the connection is lost.

Prints one JSON line per event, {"t": time.time(), "msg": ...}: "zookeeper session established"
(sessionId in hex as ZooKeeper's `cons` prints it), "queued" (its node is in), "became leader",
"resigned", "stopped"."""
import json
import signal
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import CancelledError
from kazoo.protocol.states import KazooState


def say(msg, **kw):
    print(json.dumps({"t": time.time(), "msg": msg, **kw}), flush=True)


def main():
    servers, path, identity, timeout = sys.argv[1:5]
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})  # inherited by kazoo's threads
    zk = KazooClient(servers, timeout=float(timeout))
    zk.start(timeout=30)
    say("zookeeper session established", sessionId=hex(zk.client_id[0]))
    stop = threading.Event()

    def listener(state):
        if state == KazooState.LOST:  # the session is gone: so is the node
            stop.set()
    zk.add_listener(listener)
    election = zk.Election(path, identity)

    def lead():
        say("became leader", node=election.lock.node)
        stop.wait()
        say("resigned")

    def campaign():
        try:
            election.run(lead)
        except CancelledError:
            pass

    worker = threading.Thread(target=campaign, name="campaign")
    worker.start()

    def queued():  # the recipe sets lock.node once its create is answered
        while election.lock.node is None and worker.is_alive():
            time.sleep(0.002)
        say("queued", node=election.lock.node)
    threading.Thread(target=queued, daemon=True).start()

    signal.sigwait({signal.SIGTERM})
    stop.set()
    election.cancel()
    worker.join(timeout=10)
    zk.stop()
    zk.close()
    say("stopped")


if __name__ == "__main__":
    main()
