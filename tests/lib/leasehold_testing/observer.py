"""The Observer: samples every sidecar's /leader and checks that no two claims overlap."""
import threading
import time

from .checks import check, wait_for
from .kube_time import epoch
from .leader_sampler import Sampler
from .timings import slack

SAMPLE_TIMEOUT = 0.5  # seconds: a sampler's request to /leader


class Observer:
    """Samples every sidecar's /leader every ~10 ms and keeps claim intervals.

    One Sampler thread per sidecar (leader_sampler: 0.5 s timeout, on to the next process after
    a restart), so a SIGSTOPped one (whose requests hang until their timeout) delays only its
    own samples. A new connection per request, as the Observer always did (kept-alive
    connections delayed answers more on a loaded machine). A released claim ends at the SEND
    time of the last request answered leader=true: that answer was computed somewhere between
    its send and its arrival, and the release that followed retracted the claim. The arrival was
    the rule before, and flagged a correct SIGTERM handover in dropin.contrib_client_handover on
    a loaded machine: replica-1 answered true before it stopped claiming (13:34:39.5727), the
    answer reached the sampler after replica-2 had acquired (.5743), 2-3 ms late. A double claim
    is still caught: an answer leader=true to a request sent after another's term began.
    Each process a Sidecar runs is its own incarnation
    ("name#0", "name#1" after a restart): a restarted process's claims are checked against its
    previous life's like anybody else's.

    A claim is an answer leader=true with validUntil V to a request sent at t0 and answered at
    t1: the sidecar asserts leadership over [t0, V] (wall clock; all processes share this
    machine's clock); an answer without validUntil (client-go's elector in the migration test)
    claims [t0, t0]. Two claims by different incarnations must never overlap: we check the
    claimed intervals, not only coincident samples, so a gap between samples cannot hide a
    double claim.
    """

    def __init__(self, sidecars, interval=0.01):
        self.interval = interval
        self.samples = []  # (t0, t1, incarnation, status dict or None or {"exited": rc})
        self.samplers = []
        self.generations = {}  # name -> [proc, ...] in start order
        self.exited = set()    # incarnations whose exit is recorded
        self.lock = threading.Lock()
        self.running = False
        self.sidecars = []
        for s in sidecars:
            self.add(s)

    @classmethod
    def of_samples(cls, samples):
        """An Observer over samples another sampler took, (t0, t1, incarnation label, status)
        as _record keeps them: terms() and check_safety() on them. The chaos run's etcd flavour
        has a Sampler per process already (tests/chaos/scenario.py); a second would double the
        requests on a 2-core machine."""
        obs = cls([])
        obs.samples = list(samples)
        return obs

    def __enter__(self):
        self.running = True
        for s in self.samplers:
            s.start()
        return self

    def __exit__(self, *exc):
        for s in self.samplers:
            s.stop()
        for s in self.samplers:
            s.join()
        for s in self.sidecars:  # a last look, so exits that just happened are recorded
            proc = s.proc
            if proc is not None and proc.poll() is not None:
                t = time.time()
                self._record(s, proc, t, t, {"exited": proc.returncode})

    def add(self, sidecar, sampler=Sampler):
        """Samples SIDECAR from now on. sampler: Sampler's contract for another kind of
        sidecar (pod_sampler.PodSampler: a pod's, from inside its network namespace)."""
        self.sidecars = self.sidecars + [sidecar]
        sampler = sampler(sidecar, self.interval, record=self._record, follow=True,
                          timeout=SAMPLE_TIMEOUT, keep_alive=False)
        self.samplers.append(sampler)
        if self.running:
            sampler.start()

    def _label(self, sidecar, proc):
        with self.lock:
            procs = self.generations.setdefault(sidecar.name, [])
            if proc not in procs:
                procs.append(proc)
            return f"{sidecar.name}#{procs.index(proc)}"

    def _record(self, sidecar, proc, t0, t1, st):
        label = self._label(sidecar, proc)
        with self.lock:
            if st is not None and "exited" in st:
                if label in self.exited:
                    return
                self.exited.add(label)
            self.samples.append((t0, t1, label, st))

    def answers(self):
        return [st for _, _, _, st in self.samples if st is not None and "exited" not in st]

    def terms(self):
        """Each incarnation's terms: [start, end, incarnation, token].

        start: the term's acquireTime (written by the holder when it sent the acquisition: its
        claim cannot begin earlier) or the first request that got leader=true, whichever is
        earlier; for an answer without validUntil (client-go), the first request. end: the
        largest validUntil it answered, unless it later answered leader=false or exited cleanly
        (a release): then the send time of its last request answered
        leader=true (the class's comment says why not its arrival). A killed process claims
        nothing once dead.
        """
        terms = []
        current = {}
        for t0, t1, name, st in sorted(self.samples, key=lambda x: x[0]):
            term = current.get(name)
            if st and st.get("leader"):
                token = st["fencingToken"]
                # An answer without validUntil (client-go's elector, bench/clientgo) promises
                # nothing past the moment it was computed: its claim reaches its send time.
                vu = epoch(st["validUntil"]) if st.get("validUntil") else t0
                if term and term[3] == token:
                    term[1] = max(term[1], vu)
                    term[4] = t0
                    continue
                # acquireTime bounds the start only where the holder stamps it as it sends the
                # acquisition (leasehold). client-go (answers without validUntil) stamps it
                # before it reads the record it replaces: it can precede the release it follows.
                start = (min(t0, epoch(st["acquireTime"]))
                         if st.get("acquireTime") and st.get("validUntil") else t0)
                term = [start, vu, name, token, t0]
                current[name] = term
                terms.append(term)
            elif st is not None and "exited" in st and term:
                term[1] = min(term[1], term[4] if st["exited"] == 0 else t0)
                current.pop(name)
            elif st is not None and term:
                term[1] = min(term[1], term[4])  # answered false: it stopped before now
                current.pop(name)
        return [x[:4] for x in sorted(terms)]

    def check_safety(self):
        """No two incarnations claim at the same instant; tokens go up with each new term."""
        terms = self.terms()
        for i, b in enumerate(terms):
            for a in terms[:i]:
                if a[2] == b[2]:
                    continue
                check(b[0] >= a[1] - 0.001,  # validUntil is rounded to the microsecond
                      f"claims overlap: {a[2]} (token {a[3]}) claimed until {a[1]:.3f} but "
                      f"{b[2]} (token {b[3]}) from {b[0]:.3f}")
                check(b[3] > a[3], f"token did not go up: {a[2]}={a[3]} then {b[2]}={b[3]}")
        return terms

    def wait_sampled_since(self, t, timeout=None):
        """Waits until every sidecar still running has answered a request sent at or after `t`
        (its wall clock): check_safety then knows where each claim stood at `t`. The samplers
        trail the sidecars (a thread each, one request at a time), and until a holder that has
        just released or handed over answers again, its claim is the one its last answer gave
        it, up to its validUntil. Bound: a request in flight at `t` ends by its timeout, the
        next one is sent within `interval` and ends by its timeout too."""
        timeout = 2 * SAMPLE_TIMEOUT + self.interval + slack(1.0) if timeout is None else timeout

        def missing():
            with self.lock:
                answered = {label for t0, _, label, st in self.samples
                            if t0 >= t and st is not None and "exited" not in st}
            return [s.name for s in self.sidecars
                    if s.alive() and self._label(s, s.proc) not in answered]
        wait_for(f"an answer of every running sidecar to a request sent since {t:.3f}",
                 lambda: not missing(), timeout)

    def leaders_now(self):
        return [s for s in self.sidecars if s.alive() and s.leader()]
