"""PodWatch: the Observer and a fenced writer per pod of a namespace on the single-node cluster,
for as long as a node test runs (test_node_chart.py, test_node_migration.py)."""
import random
import threading
import time

from .checks import Failure, check
from .fenced_store import FencedStore
from .observer import Observer
from .pod_sampler import PodFencedWriter, PodSampler
from .terms import check_store


class PodWatch:
    """Pods join as their Deployment makes them: a thread looks for new ones every 0.5 s and
    samples each from the moment the container that answers /leader runs
    (NodeCluster.pod_sidecar; a term that began before its first sample still starts at its
    acquireTime for the Observer)."""

    def __init__(self, cluster, store_path=None, seed=24):
        """STORE_PATH: the fenced store's file; None: no fenced writers (a measurement)."""
        self.cluster = cluster
        self.store = FencedStore(store_path) if store_path else None
        self.observer = Observer([])
        self.sidecars = {}  # pod name -> PodSidecar
        self.pods = {}  # pod name -> the pod as it was when its sampling began
        self.writers = []
        self.rng = random.Random(seed)
        self.stop_event = threading.Event()
        self.finder = threading.Thread(target=self._find, daemon=True)
        self.error = None

    def __enter__(self):
        self.observer.__enter__()
        self.add_running()
        self.finder.start()
        return self

    def __exit__(self, *exc):
        self.stop_event.set()
        self.finder.join()
        for w in self.writers:
            w.stop()
        for w in self.writers:
            w.join()
        self.observer.__exit__(*exc)
        for s in self.sidecars.values():
            s.close()

    def _find(self):
        while not self.stop_event.wait(0.5):
            try:
                self.add_running()
            except Failure as e:  # a pod gone between the listing and the runtime's answer
                self.error = e

    def add_running(self):
        """Samples every pod whose answering container runs and is not sampled yet."""
        for pod in self.cluster.pods():
            name = pod["metadata"]["name"]
            if name in self.sidecars:
                continue
            try:
                sidecar = self.cluster.pod_sidecar(pod)
            except Failure:
                continue  # not running yet
            self.sidecars[name], self.pods[name] = sidecar, pod
            self.observer.add(sidecar, sampler=PodSampler)
            if self.store is None:
                continue
            w = PodFencedWriter(sidecar, self.store, random.Random(self.rng.random()))
            w.start()
            self.writers.append(w)

    def first_true(self, since, above, but=None):
        """(seconds from SINCE to the arrival of the first answer leader=true with a token
        above ABOVE, from any identity but BUT, that answer), or None."""
        with self.observer.lock:
            found = [(t1, st) for t0, t1, _, st in self.observer.samples
                     if t0 >= since and st and st.get("leader") and st["fencingToken"] > above
                     and st.get("identity") != but]
        if not found:
            return None
        t1, st = min(found, key=lambda x: x[0])
        return t1 - since, st

    def last_answer(self, sidecar, since=0.0):
        """SIDECAR's (PodSidecar's) last answer to a request sent after SINCE, or None."""
        with self.observer.lock:
            found = [(t0, st) for t0, _, _, st in self.observer.samples
                     if t0 >= since and st and st.get("identity") == sidecar.identity]
        return max(found, key=lambda x: x[0])[1] if found else None

    def leader(self, holder):
        """(PodSidecar, answer) of the pod whose identity is HOLDER (the Lease's holderIdentity)
        once its last answer, to a request sent in the last 0.3 s, says leader=true; else
        None."""
        sidecar = next((s for s in self.sidecars.values() if s.identity == holder), None)
        answer = sidecar and self.last_answer(sidecar, time.time() - 0.3)
        return (sidecar, answer) if answer and answer.get("leader") else None

    def leadership(self, since, until):
        """(terms that began in [SINCE, UNTIL], seconds of it that no claim covered)."""
        with self.observer.lock:
            terms = self.observer.terms()
        began = [t for t in terms if since <= t[0] <= until]
        covered, edge = 0.0, since
        for start, end, _, _ in sorted(terms):
            start, end = max(start, edge), min(end, until)
            if end > start:
                covered += end - start
                edge = end
        return began, (until - since) - covered

    def check(self):
        """The Observer's safety check and the fenced store's: (terms, writes accepted,
        writes rejected); without a store, (terms, None, None)."""
        terms = self.observer.check_safety()
        if self.store is None:
            return terms, None, None
        rows = self.store.rows()
        failures = check_store(rows, [])
        check(not failures, "the fenced store: " + "; ".join(failures))
        accepted = sum(1 for r in rows if r[5])
        check(accepted > 0, "no fenced write was accepted: the writers never saw a leader")
        return terms, accepted, len(rows) - accepted

    def check_and_say(self):
        """check(), then the sentence the node tests end with."""
        terms, accepted, rejected = self.check()
        return (f"the samplers: {len(terms)} terms, no two claims overlap, tokens "
                f"{[t[3] for t in terms]}; the fenced store accepted {accepted} writes and "
                f"rejected {rejected}, never a lower token")
