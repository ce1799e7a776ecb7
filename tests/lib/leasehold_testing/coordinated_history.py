"""The Lease's history under kube-apiserver's coordinated-leader-election controller
(--coordinated; tests/integration/coordinated_scenarios.py), read from a LeaseHistory's records
(t_received, type, resourceVersion, spec).

A record that names a holder without acquireTime is the controller's decision, not a claim:
nobody claims on it. So is a release that prefers a replica (the controller set preferredHolder
on the held Lease; the preferred replica takes the release at once, which may beat the
controller's own naming write). The decided replica's own first write (acquireTime,
leaseTransitions + 1) starts its term. The controller may also name a replica that has just
released and left (renamed_after_release): that decision belongs to no term."""
from .checks import check


def claims_only(records):
    """The records that are not a decision naming a holder: what the term checks run on."""
    return [r for r in records if not (r[3].get("holderIdentity") and not r[3].get("acquireTime"))]


def named_by_controller(records, holder, after=0.0):
    """When the history saw the controller name `holder` (a record without acquireTime)."""
    for t, kind, rv, spec in records:
        if t >= after and spec.get("holderIdentity") == holder and not spec.get("acquireTime"):
            return t, spec
    return None, None


def decided_for(spec, holder):
    """A record that hands the Lease to `holder` without starting a term: the controller named
    it (holderIdentity, no acquireTime), or the Lease was released with `holder` preferred
    (the controller asked the old holder to yield to it; the Elector takes that at once, and
    may do so before the controller's own naming write, which then meets a 409). A release
    sets acquireTime, as client-go's does; it names no holder, so it starts no term."""
    if not spec.get("holderIdentity"):
        return spec.get("preferredHolder") == holder
    return spec.get("holderIdentity") == holder and not spec.get("acquireTime")


def own_write(holder, token):
    """A predicate on a spec: `holder`'s acquisition, the write that starts its term `token`."""
    return lambda spec: (spec.get("holderIdentity") == holder and bool(spec.get("acquireTime"))
                         and spec.get("leaseTransitions") == token)


def check_term_started_by_own_write(records, holder, token):
    """The controller decided for `holder` with the previous token; `holder`'s own write (with
    acquireTime) raised it; that write is the one the claim rests on. Only the decisions before
    that write belong to the term: the controller may name a replica again after it has left
    (renamed_after_release)."""
    specs = [spec for _, _, _, spec in records]
    own = [i for i, spec in enumerate(specs) if own_write(holder, token)(spec)]
    check(own, f"no write of {holder} with token {token} in the history")
    decided = [spec for spec in specs[:own[0]] if decided_for(spec, holder)]
    check(decided, f"the controller never decided for {holder} before its write with token "
                   f"{token} (no record naming it without acquireTime, no release preferring it)")
    check(decided[-1].get("leaseTransitions", 0) == token - 1,
          f"the controller's record keeps the old token: {decided[-1]}")


def renamed_after_release(records, holder):
    """How long after `holder` released the Lease the controller named it again (seconds, as
    the history received the records). The holder deletes its LeaseCandidate and only then
    releases, but the controller reads candidates and the Lease from two informer caches, each
    fed by a watch of its own, in no common order: when the release reaches its Lease cache
    before the deletion reaches its candidate cache, it names the replica that has just left
    (seen on a loaded machine: "had no holder, setting holder to" it 8 ms after its release).
    Nobody claims on that record; the controller elects again once the 5 s it writes have
    passed."""
    out, released, prev = [], None, {}
    for t, _, _, spec in records:
        if (released is None and not spec.get("holderIdentity")
                and prev.get("holderIdentity") == holder and prev.get("acquireTime")):
            released = t
        elif (released is not None and spec.get("holderIdentity") == holder
              and not spec.get("acquireTime")):
            out.append(t - released)
        prev = spec
    return out
