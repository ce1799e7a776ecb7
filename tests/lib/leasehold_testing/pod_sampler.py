"""The samplers inside a pod: a pod's sidecar answers /leader on 127.0.0.1 of the pod's network
namespace only (the chart's --http-address), so the threads that ask it, as its app does, first
move into that namespace. setns(CLONE_NEWNET) moves only the calling thread: every other thread
of the test stays on the host's network."""
import ctypes
import os
import threading
import time

from .fenced_store import FencedWriter
from .leader_sampler import LeaderClient

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def enter_netns(fd, what):
    """Moves the calling thread into the network namespace open at FD (WHAT names it in the
    error)."""
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns into {what}'s network namespace: {os.strerror(err)}")


class _Running:
    """The Observer's and FencedWriter's view of a pod's process: the kubelet restarts it, so it
    never ends for them; its incarnations are told apart by the identity each answer names."""

    @staticmethod
    def poll():
        return None


class PodSidecar:
    """One pod's sidecar, for the Observer (add(..., sampler=PodSampler)) and a PodFencedWriter:
    name (the pod's), port (inside the pod), and its network namespace, held open from here on
    (an fd of /proc/PID/ns/net of any process in the pod), so that the sampling survives the
    restart of the process it was taken from. close() lets it go."""

    def __init__(self, name, ns_path, port=4040):
        self.name, self.port = name, port
        self.netns = os.open(ns_path, os.O_RDONLY)
        self.proc = _Running()
        self.label = name
        self.identity = None  # the last identity its /leader named (a FencedWriter's record)
        # Identities the test killed with SIGKILL: their claims last until the validUntil they
        # answered (their app may act on them that long). Any other process that stops
        # answering exited at SIGTERM, which releases: its claim ended at the send of its last
        # true answer (the Observer's rule for a clean exit).
        self.killed = set()
        # Identities killed under --fast-failover, whose contract ends a claim with the process
        # (the app's connection to /leader or /leader/watch fails at once): their claims end at
        # the first request that found nobody listening (the Observer's rule for a kill).
        self.died = set()

    def close(self):
        os.close(self.netns)


class PodSampler(threading.Thread):
    """leader_sampler.Sampler's contract (the Observer's record(sidecar, proc, t0, t1, st)) for
    a PodSidecar: the thread enters the pod's network namespace, then asks 127.0.0.1:port; the
    `proc` it records is the identity of the process that answered (the last one named, for an
    answer that failed), so that a restarted sidecar is a new incarnation. A refused connection
    after an answer is that process's clean exit, unless the test killed it."""

    def __init__(self, sidecar, interval=0.01, record=None, follow=True, timeout=0.25,
                 keep_alive=True, path="/leader"):
        super().__init__(daemon=True)
        del follow  # a pod's sampler always follows its next process
        self.sidecar, self.interval, self.record = sidecar, interval, record
        self.stop_event = threading.Event()
        self.client = LeaderClient(sidecar.port, timeout, keep_alive, path)

    def run(self):
        enter_netns(self.sidecar.netns, self.sidecar.name)
        identity = None
        while not self.stop_event.is_set():
            t0 = time.time()
            st = self.client.get()
            if st is not None and st.get("identity"):
                identity = st["identity"]
                self.sidecar.identity = identity
            if (isinstance(self.client.error, ConnectionRefusedError) and identity is not None
                    and identity not in self.sidecar.killed):
                # Nothing listens on the port: the process that answered last has exited
                # (SIGKILL: its claim ends now; else a clean exit, which released).
                self.record(self.sidecar, identity, t0, t0,
                            {"exited": 137 if identity in self.sidecar.died else 0})
            else:
                self.record(self.sidecar, identity, t0, time.time(), st)
            self.stop_event.wait(self.interval)
        self.client.close()

    def stop(self):
        self.stop_event.set()


class PodFencedWriter(FencedWriter):
    """The fenced writer of the chaos runs (read /leader; when leader, maybe pause, then write
    the token to the FencedStore) as an app in a pod: from inside the pod's network namespace."""

    def run(self):
        enter_netns(self.inc.netns, self.inc.name)
        super().run()
