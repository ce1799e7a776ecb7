"""Shard mode's sampler and checks: every replica's GET /shards asked every ~10 ms (one
leader_sampler.Sampler thread per replica, path /shards, following restarts), the claims per
shard rebuilt from the answers, and the two safety checks of issue 15:

  - no shard is ever claimed by two replicas at once. A sample proves a claim at some instant
    of [sent, answered]; a term (one replica process, one shard, one token) claims without a
    break from its first sample to its last, so it certainly claims over [first answered, last
    sent]. Two such sure spans of different terms that intersect are a double owner.
  - each shard's token goes up every term (terms ordered by their first sample).

Plus what the scenarios wait for: the current owner of every shard (owners) and balance
(balanced: every shard owned exactly once, by live members only, each floor(N/M) or ceil)."""
import json
import threading

from .checks import check, wait_for
from .http_calls import http_get
from .leader_sampler import Sampler
from .timings import slack


def shards_of(sidecar, timeout=None):
    """GET /shards as a dict, or None when it did not answer 200. The loop answers in
    milliseconds; the default deadline (0.5 s on release) is for a loaded machine."""
    if timeout is None:
        timeout = slack(0.5)
    code, body = http_get(sidecar.port, "/shards", timeout=timeout)
    return json.loads(body) if code == 200 else None


def owners(sidecars):
    """{shard: [names of the replicas whose /shards lists it now]}, and which did not answer."""
    out, silent = {}, []
    for s in sidecars:
        st = shards_of(s) if s.alive() else None
        if st is None:
            silent.append(s.name)
            continue
        for o in st["owned"]:
            out.setdefault(o["shard"], []).append(s.name)
    return out, silent


def answers_of(sidecars):
    """{replica name: its /shards dict now, or None when it is dead or did not answer}."""
    return {s.name: shards_of(s) if s.alive() else None for s in sidecars}


def balance_problem(sidecars, n):
    """None when the live `sidecars` own every one of the n shards exactly once, floor(n/M) or
    ceil(n/M) each, and all see M members; else what is wrong."""
    return balance_of(answers_of(sidecars), n)


def balance_of(answers, n):
    """balance_problem on answers already taken: {replica name: its /shards dict, or None when
    it did not answer}, every live member of the group in it (pure, unit-tested)."""
    m = len(answers)
    silent = [name for name, st in answers.items() if st is None]
    if silent:
        return f"no answer from {silent}"
    for name, st in answers.items():
        if st["members"] != m:
            return f"{name} sees {st['members']} members, not {m}"
    owned = {}
    for name, st in answers.items():
        for o in st["owned"]:
            owned.setdefault(o["shard"], []).append(name)
    missing = [i for i in range(n) if i not in owned]
    double = {i: who for i, who in owned.items() if len(who) > 1}
    if missing or double:
        return f"unowned {missing}, owned twice {double}"
    counts = {name: 0 for name in answers}
    for who in owned.values():
        counts[who[0]] += 1
    if any(c < n // m or c > -(-n // m) for c in counts.values()):
        return f"unbalanced: {counts}"
    return None


def wait_balanced(sidecars, n, timeout):
    """Waits until balance_problem is None; returns {shard: owner} as the answers that were
    judged balanced said (a second read could catch a shard between two owners)."""
    last = {}

    def ok():
        last["answers"] = answers_of(sidecars)
        last["why"] = balance_of(last["answers"], n)
        return last["why"] is None
    try:
        wait_for(f"{n} shards balanced over {[s.name for s in sidecars]}", ok, timeout)
    except Exception:
        check(False, f"not balanced after {timeout}s: {last.get('why')}")
    return owners_in(last["answers"])


def owners_in(answers):
    """{shard: owner} from balanced answers (balance_of returned None for them; pure)."""
    return {o["shard"]: name for name, st in answers.items() for o in st["owned"]}


class ShardObserver:
    """Samples every replica's /shards until stopped (with-statement); add() takes a replica
    started later, any number of them while it runs (the chaos runner adds every incarnation:
    one process each, follow=False, so its thread ends when the process does). check_safety()
    runs both checks over everything sampled."""

    def __init__(self, sidecars, interval=0.01):
        # Every 10 ms at any slowdown: the safety check sees no less for a slower build.
        self.interval = interval
        # A GET /shards that takes longer is no answer (proves nothing): 0.25 s on release.
        self.timeout = slack(0.25)
        self.lock = threading.Lock()
        self.samples = []  # (name, process id, t0, t1, status or None)
        self.samplers = []
        for s in sidecars:
            self.add(s, start=False)

    def __enter__(self):
        for t in self.samplers:
            t.start()
        self.started = True
        return self

    def __exit__(self, *exc):
        with self.lock:
            samplers = list(self.samplers)
        for t in samplers:
            t.stop()
        for t in samplers:
            t.join(slack(2))  # a request in flight ends by its timeout

    def add(self, sidecar, start=True, follow=True):
        t = Sampler(sidecar, self.interval, record=self._record, follow=follow,
                    timeout=self.timeout, path="/shards")
        with self.lock:
            self.samplers.append(t)
        if start:
            t.start()

    def _record(self, sidecar, proc, t0, t1, st):
        if st is not None and "exited" in st:
            st = None
        with self.lock:
            self.samples.append((sidecar.name, proc.pid, t0, t1, st))

    def terms(self):
        """{shard: [(who, pid, token, first_t0, first_t1, last_t0, last_t1)]} in order of start."""
        with self.lock:
            samples = list(self.samples)
        open_terms = {}  # (name, pid, shard) -> [token, first_t0, first_t1, last_t0, last_t1]
        done = {}
        for name, pid, t0, t1, st in samples:
            if st is None:
                continue  # no answer: proves nothing either way
            owned = {o["shard"]: o["fencingToken"] for o in st["owned"]}
            for key in [k for k in open_terms if k[0] == name and k[1] == pid]:
                shard = key[2]
                term = open_terms[key]
                if owned.get(shard) == term[0]:
                    term[3], term[4] = t0, t1
                    del owned[shard]
                else:
                    done.setdefault(shard, []).append((name, pid, *term))
                    del open_terms[key]
            for shard, token in owned.items():
                key = (name, pid, shard)
                if key in open_terms:  # a new token at once (a new term of the same process)
                    done.setdefault(shard, []).append((name, pid, *open_terms.pop(key)))
                open_terms[key] = [token, t0, t1, t0, t1]
        for (name, pid, shard), term in open_terms.items():
            done.setdefault(shard, []).append((name, pid, *term))
        for shard in done:
            done[shard].sort(key=lambda t: t[4])
        return done

    def check_safety(self):
        """Fails on a double owner or a token that did not go up; returns the number of terms."""
        all_terms = self.terms()
        count = 0
        for shard, terms in all_terms.items():
            count += len(terms)
            for i, a in enumerate(terms):
                for b in terms[i + 1:]:
                    a_sure = (a[4], a[5])  # first answered .. last sent
                    b_sure = (b[4], b[5])
                    if a_sure[0] <= a_sure[1] and b_sure[0] <= b_sure[1]:
                        check(a_sure[1] < b_sure[0] or b_sure[1] < a_sure[0],
                              f"shard {shard} claimed by two at once: {a} and {b}")
            # The same process may stop and resume showing one term (dropped, then assigned
            # back while it drained): the same token is fine there, nowhere else.
            for a, b in zip(terms, terms[1:]):
                same_term = a[2] == b[2] and a[:2] == b[:2]
                check(a[2] < b[2] or same_term,
                      f"shard {shard}: the token did not go up from {a} to {b}")
        return count
