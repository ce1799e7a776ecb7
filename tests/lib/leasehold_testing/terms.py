"""The safety checks of the chaos, soak and real runs: terms as the samplers saw them
(sampled_terms) and as the Lease's history recorded them (history_terms), and the checks on them
(check_terms, check_history_tokens, check_store); see their docstrings for what sampling can
and cannot prove; recheck runs them again on what a failed chaos scenario left behind
(`tests/chaos/run --recheck DIR/observations.json`)."""
import json
from pathlib import Path

from .kube_time import epoch
from .timings import R

ROUNDING = 0.001  # MicroTime has microseconds; allow 1 ms for rounding and clock reads


class Term:
    __slots__ = ("start", "end", "who", "identity", "token", "last_true", "released_at", "src",
                 "acq", "end_own", "own_by_write")

    def __init__(self, start, end, who, identity, token, src):
        self.start, self.end, self.who, self.identity, self.token = start, end, who, identity, token
        self.last_true = start
        self.released_at = None
        self.src = src
        self.acq = None
        self.end_own = end  # when the process itself stops claiming (see sampled_terms)
        self.own_by_write = {}  # renewTime -> the tightest bound on that write's real deadline

    def bound_own_end(self, write, bound):
        """One answer's bound on when the process stops claiming on the strength of `write`
        (its renewTime). Every answer based on the same write has the same real deadline, so
        the tightest bound among them holds for all; the term ends at the latest write's."""
        if write is None:
            write = ("answer", len(self.own_by_write))  # unknown: this answer alone
        self.own_by_write[write] = min(bound, self.own_by_write.get(write, bound))
        self.end_own = max(self.own_by_write.values())

    def __repr__(self):
        return (f"{self.src} term {self.who} token {self.token} "
                f"[{self.start:.3f}, {self.end:.3f}]")


def history_terms(records, rates=None, renew_deadline=R):
    """Terms as the API server recorded them. One term per acquisition (a new holder, or the
    same holder with a new acquireTime or token, e.g. a restarted process with the same
    identity). The claim of a term, by the algorithm's definition (leader only while now < send
    time of the last confirmed write + R): from its acquireTime (send time of the acquisition)
    to its last renewTime (send time of the last write that landed) + R, stretched by the
    holder's clock rate (a slow clock claims R/rate of real time). A release (holder "") ends it
    at the release's renewTime: the sidecar stops claiming before it builds the release write.
    This over-approximates every claim (applied writes whose answer was lost count too).
    """
    rates = rates or {}
    terms = []
    cur = None
    for t, kind, rv, spec in records:
        holder = spec.get("holderIdentity") or ""
        if kind == "DELETED":
            cur = None
            continue
        if not holder:
            if cur is not None and spec.get("renewTime"):
                cur.released_at = epoch(spec["renewTime"])
                cur.end = min(cur.end, cur.released_at)
            cur = None
            continue
        acq = spec.get("acquireTime")
        token = spec.get("leaseTransitions", 0)
        renew = epoch(spec["renewTime"]) if spec.get("renewTime") else t
        until = renew + renew_deadline / rates.get(holder, 1.0)
        if cur is None or (cur.identity, cur.token, cur.acq) != (holder, token, acq):
            # `who` names the term, not the identity: a restarted process may reuse the
            # identity, and its claims must not overlap those of its previous life either.
            cur = Term(epoch(acq) if acq else renew, until, f"{holder}/{token}", holder, token,
                       "lease")
            cur.acq = acq
            terms.append(cur)
        cur.end = max(cur.end, until)
    return terms


def sampled_terms(incarnations, releases=None, every_release_retracts=False):
    """Terms as a client polling every ~10 ms and trusting each answer's validUntil saw them.

    A claim is an answer leader=true with token T and validUntil V, computed between the
    request's start and end (t0 <= t <= t1). The term of an incarnation with token T runs
      from: its acquireTime (the wall time at which the acquisition was sent; the sidecar cannot
            have claimed before) or, if missing, the first t0;
      to:   the LARGEST validUntil it ever answered in that term: it promised leadership until
            then to whoever asked, and must not be contradicted by anybody else's claim, even if
            it later answered false (paused past its deadline) or was killed.
    One exception: a release (SIGTERM) retracts the claim. Then the end is the release write's
    renewTime from the Lease history (stamped after the sidecar stopped claiming), and we check
    separately that no answer that started after that instant said leader=true.
    every_release_retracts: shard mode, where a running member releases a shard that moves
    (dropped first: it stops claiming it at once), so any release retracts, not only SIGTERM's.

    What sampling cannot see: a term that begins and ends between two answers. Every term here
    lasts at least R = 1.5 s unless its holder was SIGSTOPped or killed right after acquiring, so
    such a term is one whose holder nobody could ask. The Lease history (history_terms) has every
    term the API server applied, so the same checks run on it too.
    """
    releases = releases or {}
    terms = []
    for inc in incarnations:
        cur = None
        for t0, t1, st in inc.samples:
            if st is None:
                continue
            if st.get("leader"):
                token = st["fencingToken"]
                v = epoch(st["validUntil"])
                own = own_end(v, t0, t1, inc.rate)
                if cur is None or cur.token != token:
                    start = epoch(st["acquireTime"]) if st.get("acquireTime") else t0
                    cur = Term(start, v, inc.label, inc.identity, token, "sampled")
                    terms.append(cur)
                cur.end = max(cur.end, v)
                cur.bound_own_end(st.get("renewTime"), own)
                cur.last_true = t1
            else:
                cur = None  # answered false (or exited): the term is over; its end stays max V
        for term in terms:
            if term.who == inc.label:
                rel = releases.get((inc.identity, term.token))
                if rel is not None and (inc.ended_by == "term" or every_release_retracts):
                    term.released_at = rel
                    term.end = min(term.end, rel)
                    term.end_own = min(term.end_own, rel)
    return sorted(terms, key=lambda x: x.start)


def own_end(v, t0, t1, rate):
    """When a process whose monotonic clock runs at `rate` really stops claiming, given an answer
    with validUntil v computed at some wall instant w in [t0, t1]. The sidecar computes
    v = w + (remaining on its clock), and its clock covers that remaining time in
    remaining / rate of real time: the end is w + (v - w) / rate, maximised over w. For rate 1
    it is v itself. (A fast clock thus promises a validUntil up to 5% of R later than it really
    claims; a slow one keeps answering true past the validUntil it gave.) The bound is loose by
    (t1 - t0) x |1/rate - 1|: a request that spanned a SIGSTOP overstates it by several ms, so
    Term.bound_own_end keeps the tightest bound among the answers based on the same write."""
    if rate == 1.0:
        return v
    return max(w + (v - w) / rate for w in (t0, t1))


def check_terms(terms, what):
    """No two claims overlap (other than one claim seen twice); tokens strictly increase from
    term to term. Returns (failures, the smallest gap between the start of a claim and the end
    of an earlier claim of another identity, the largest overlap found)."""
    failures = []
    min_gap = None
    max_overlap = 0.0
    for i, b in enumerate(terms):
        for a in terms[:i]:
            if a.who == b.who and a.token == b.token:
                continue  # the same claim, seen again after a blip (false, then true again)
            # Two terms of one process: it may start its next term once IT stopped claiming
            # (re-acquiring its own expired lease). Against any other process the promise made
            # to callers (validUntil) counts.
            a_end, b_end = (a.end_own, b.end_own) if a.who == b.who else (a.end, b.end)
            overlap = min(a_end, b_end) - max(a.start, b.start)
            if overlap > ROUNDING:
                failures.append(f"{what}: claims overlap by {overlap * 1000:.1f} ms: {a} / {b}")
            max_overlap = max(max_overlap, overlap if overlap > ROUNDING else 0.0)
            if b.token <= a.token:
                failures.append(f"{what}: token did not go up: {a} then {b}")
        prev = [a for a in terms[:i] if a.identity != b.identity]
        if prev:
            gap = b.start - max(a.end for a in prev)
            min_gap = gap if min_gap is None else min(min_gap, gap)
    return failures, min_gap, max_overlap


def check_history_tokens(records):
    """Every acquisition in the Lease's history raises leaseTransitions; nothing lowers it."""
    failures = []
    last = None
    prev_key = None
    for t, kind, rv, spec in records:
        if kind == "DELETED":
            failures.append(f"lease deleted at rv {rv} (tokens restart)")
            last, prev_key = None, None
            continue
        tr = spec.get("leaseTransitions", 0)
        holder = spec.get("holderIdentity") or ""
        if last is not None and tr < last:
            failures.append(f"leaseTransitions went down {last} -> {tr} at rv {rv}")
        key = (holder, spec.get("acquireTime"))
        if holder and prev_key is not None and key != prev_key and last is not None \
                and tr <= last:
            failures.append(f"new term without a new token at rv {rv}: {holder} token {tr}")
        if holder:
            prev_key = key
        last = tr
    return failures


def check_store(rows, hist_terms):
    """The fenced store accepted no token lower than one it had already accepted; each accepted
    token belongs to the process that held that term in the Lease's history."""
    failures = []
    highest = None
    holders = {}
    for t in hist_terms:
        holders.setdefault(t.token, set()).add(t.identity)
    for seq, token, writer, identity, t, accepted in rows:
        if accepted:
            if highest is not None and token < highest:
                failures.append(f"store accepted token {token} after {highest} (seq {seq})")
            highest = token if highest is None else max(highest, token)
            if hist_terms and identity not in holders.get(token, ()):
                failures.append(f"store accepted token {token} from {writer}, but the Lease "
                                f"gave token {token} to {sorted(holders.get(token, ()))}")
        elif highest is not None and token >= highest:
            failures.append(f"store rejected token {token} though the highest was {highest}")
    return failures


def recheck(path):
    """The term checks of a failed scenario again, from its observations.json (written by
    `run` next to the logs): the overlap and token checks on the samples and on the Lease
    history. Returns the failures."""
    from types import SimpleNamespace
    data = json.loads(Path(path).read_text())
    incs = [SimpleNamespace(**i) for i in data["incarnations"]]
    records = data["records"]
    hterms = history_terms(records, {i.identity: i.rate for i in incs})
    releases = {(t.identity, t.token): t.released_at for t in hterms if t.released_at}
    # The etcd flavour has no store history: its releases are the ones it derived (etcd_scenario)
    releases.update({(i, t): r for i, t, r in data.get("releases", [])})
    retracts = bool(data.get("every_release_retracts"))
    failures = check_terms(sampled_terms(incs, releases, retracts), "samples")[0]
    if not data.get("history_gap"):
        failures += check_terms(hterms, "lease history")[0]
    return failures + check_history_tokens(records)
