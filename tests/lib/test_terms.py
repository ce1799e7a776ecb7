#!/usr/bin/env python3
"""The chaos checks on synthetic samples and Lease histories: they must flag what is unsafe and
nothing else (each false alarm seen in a real run became a case here)."""
import tempfile
import unittest
from datetime import datetime, timezone
from pathlib import Path

from leasehold_testing.fenced_store import FencedStore
from leasehold_testing.terms import (check_history_tokens, check_store, check_terms,
                                     history_terms, own_end, sampled_terms)
from leasehold_testing.timings import R

BASE = 1796014755.0


def iso(t):
    return datetime.fromtimestamp(BASE + t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Inc:
    def __init__(self, label, identity, rate=1.0, ended_by=None):
        self.label, self.identity, self.rate, self.ended_by = label, identity, rate, ended_by
        self.samples = []

    def true(self, t, token, valid_until, acquired, took=0.001, renewed=None):
        self.samples.append((BASE + t, BASE + t + took, {
            "leader": True, "fencingToken": token, "validUntil": iso(valid_until),
            "acquireTime": iso(acquired),
            "renewTime": iso(renewed if renewed is not None else acquired)}))
        return self

    def false(self, t):
        self.samples.append((BASE + t, BASE + t + 0.001, {"leader": False}))
        return self


def record(t, holder, token, acquired, renewed, kind="MODIFIED"):
    return (BASE + t, kind, str(int(t * 1000) + 2), {
        "holderIdentity": holder, "leaseTransitions": token,
        "acquireTime": iso(acquired) if acquired is not None else None,
        "renewTime": iso(renewed), "leaseDurationSeconds": 2})


class SampledTerms(unittest.TestCase):
    def check(self, incs, releases=None):
        return check_terms(sampled_terms(incs, releases), "samples")[0]

    def test_clean_handover_passes(self):
        a = Inc("a#0", "a").true(0.1, 0, 1.6, 0.0).true(0.4, 0, 1.9, 0.0).false(2.0)
        b = Inc("b#0", "b").true(2.5, 1, 4.0, 2.4)
        self.assertEqual(self.check([a, b]), [])

    def test_a_promise_counts_even_after_false(self):
        # a promised validUntil 2.6 (then was paused and said false): b starting at 2.5 overlaps.
        a = Inc("a#0", "a").true(1.1, 0, 2.6, 0.0).false(3.0)
        b = Inc("b#0", "b").true(2.55, 1, 4.0, 2.5)
        self.assertTrue(any("claims overlap" in f for f in self.check([a, b])))

    def test_a_killed_leader_keeps_its_promise(self):
        a = Inc("a#0", "a").true(1.1, 0, 2.6, 0.0)
        a.samples.append((BASE + 1.2, BASE + 1.2, {"exited": -9}))
        b = Inc("b#0", "b").true(2.55, 1, 4.0, 2.5)
        self.assertTrue(any("claims overlap" in f for f in self.check([a, b])))

    def test_tokens_must_go_up(self):
        a = Inc("a#0", "a").true(0.1, 3, 1.6, 0.0)
        b = Inc("b#0", "b").true(2.5, 3, 4.0, 2.4)
        self.assertTrue(any("token did not go up" in f for f in self.check([a, b])))

    def test_same_claim_seen_twice_is_one_claim(self):
        # "renewal confirmed after a gap": true, false, true again with the same token.
        a = Inc("a#0", "a").true(0.1, 0, 1.6, 0.0).false(1.7).true(1.8, 0, 3.2, 0.0)
        self.assertEqual(self.check([a]), [])

    def test_fast_clock_reacquiring_its_own_lease_is_not_an_overlap(self):
        # Seen in the long run (seed 992602132, scenario 209): a process at x1.05 answered
        # validUntil 5.576 for token 1 but, on its own clock, stopped claiming at ~5.50 and
        # re-acquired its expired lease (token 2) at 5.527. Same process, after its own end.
        a = Inc("a#0", "a", rate=1.05).true(4.07, 1, 5.576, 2.361).true(5.54, 2, 7.0, 5.527)
        self.assertEqual(self.check([a]), [])
        # The same answers from a process with a true clock would be a real bug.
        b = Inc("b#0", "b").true(4.07, 1, 5.576, 2.361).true(5.54, 2, 7.0, 5.527)
        self.assertTrue(any("claims overlap" in f for f in self.check([b])))

    def test_fast_clock_promise_still_counts_against_others(self):
        a = Inc("a#0", "a", rate=1.05).true(4.07, 1, 5.576, 2.361)
        b = Inc("b#0", "b").true(5.54, 2, 7.0, 5.527)
        self.assertTrue(any("claims overlap" in f for f in self.check([a, b])))

    def test_slow_clock_end_is_later_than_its_valid_until(self):
        self.assertAlmostEqual(own_end(BASE + 1.5, BASE, BASE, 0.5), BASE + 3.0)
        self.assertAlmostEqual(own_end(BASE + 1.5, BASE, BASE, 1.0), BASE + 1.5)

    def test_slow_clock_answer_across_a_sigstop_is_bounded_by_its_quick_siblings(self):
        # Seen in the long run (seed 56777507, scenario 82): a process at x0.95 really stopped
        # claiming token 1 at ~5.000 and re-acquired (token 2) at 5.004. One answer based on
        # the same renewal took 169 ms (SIGSTOP): alone, it bounds the end only by 5.0089.
        # Here: deadline 5.000; a quick answer at 4.0 (validUntil 4.95) and a slow one computed
        # at 4.2 but asked at 4.031 (validUntil 4.96).
        def term1(inc):
            return (inc.true(4.0, 1, 4.95, 3.0, renewed=3.5)
                    .true(4.031, 1, 4.96, 3.0, took=0.169, renewed=3.5))
        a = term1(Inc("a#0", "a", rate=0.95)).true(5.01, 2, 6.4, 5.004, renewed=5.004)
        self.assertEqual(self.check([a]), [])
        # Without the quick answer, the bound is all there is: flagged, as it must be.
        slow = Inc("a#0", "a", rate=0.95).true(4.031, 1, 4.96, 3.0, took=0.169, renewed=3.5)
        slow.true(5.01, 2, 6.4, 5.004, renewed=5.004)
        self.assertTrue(any("claims overlap" in f for f in self.check([slow])))
        # A real early re-acquisition (at 4.99, before the deadline at 5.000) is still caught.
        early = term1(Inc("a#0", "a", rate=0.95)).true(5.0, 2, 6.4, 4.99, renewed=4.99)
        self.assertTrue(any("claims overlap" in f for f in self.check([early])))
        # Answers based on an earlier renewal bound only that renewal's deadline.
        later = (Inc("a#0", "a", rate=0.95).true(3.0, 1, 4.2, 3.0, renewed=2.8)
                 .true(4.031, 1, 4.96, 3.0, took=0.169, renewed=3.5)
                 .true(5.01, 2, 6.4, 5.004, renewed=5.004))
        self.assertTrue(any("claims overlap" in f for f in self.check([later])))

    def test_a_release_retracts_the_claim(self):
        a = Inc("a#0", "a", ended_by="term").true(0.1, 0, 1.6, 0.0).false(0.31)
        b = Inc("b#0", "b").true(0.36, 1, 1.9, 0.305)
        self.assertTrue(self.check([a, b]))  # without the release record: overlap
        self.assertEqual(self.check([a, b], {("a", 0): BASE + 0.30}), [])

    def test_a_shard_move_retracts_only_in_shard_mode(self):
        # A running member drops and releases a shard that moves (no SIGTERM): a retraction
        # only with every_release_retracts (chaos --shards); otherwise its validUntil counts.
        a = Inc("a#0", "a").true(0.1, 0, 1.6, 0.0).false(0.31)
        b = Inc("b#0", "b").true(0.36, 1, 1.9, 0.305)
        rel = {("a", 0): BASE + 0.30}
        self.assertTrue(self.check([a, b], rel))
        terms = sampled_terms([a, b], rel, every_release_retracts=True)
        self.assertEqual(check_terms(terms, "samples")[0], [])
        # ... and the release still ends it: b starting before it is an overlap.
        early = Inc("b#0", "b").true(0.36, 1, 1.9, 0.2)
        terms = sampled_terms([a, early], rel, every_release_retracts=True)
        self.assertTrue(check_terms(terms, "samples")[0])


class HistoryTerms(unittest.TestCase):
    def test_terms_tokens_and_model_overlap(self):
        recs = [record(0.0, "a", 0, 0.0, 0.0, "ADDED"), record(0.3, "a", 0, 0.0, 0.3),
                record(2.4, "b", 1, 2.4, 2.4), record(2.7, "b", 1, 2.4, 2.7)]
        terms = history_terms(recs)
        self.assertEqual([(t.identity, t.token) for t in terms], [("a", 0), ("b", 1)])
        self.assertAlmostEqual(terms[0].end, BASE + 0.3 + R)
        self.assertEqual(check_terms(terms, "h")[0], [])
        self.assertEqual(check_history_tokens(recs), [])
        # b taking over while a's last renewal + R has not passed
        bad = recs[:2] + [record(1.0, "b", 1, 1.0, 1.0)]
        self.assertTrue(check_terms(history_terms(bad), "h")[0])

    def test_same_identity_restarted_is_a_new_term(self):
        recs = [record(0.0, "a", 0, 0.0, 0.0), record(2.5, "a", 1, 2.5, 2.5)]
        terms = history_terms(recs)
        self.assertEqual(len(terms), 2)
        self.assertEqual(check_terms(terms, "h")[0], [])
        early = [record(0.0, "a", 0, 0.0, 0.0), record(1.0, "a", 1, 1.0, 1.0)]
        self.assertTrue(check_terms(history_terms(early), "h")[0])

    def test_new_term_without_new_token(self):
        recs = [record(0.0, "a", 4, 0.0, 0.0), record(2.5, "b", 4, 2.5, 2.5)]
        self.assertTrue(check_history_tokens(recs))

    def test_release_ends_the_term(self):
        recs = [record(0.0, "a", 0, 0.0, 0.0), record(0.5, "", 0, None, 0.5),
                record(0.51, "b", 1, 0.51, 0.51)]
        terms = history_terms(recs)
        self.assertAlmostEqual(terms[0].end, BASE + 0.5)
        self.assertEqual(check_terms(terms, "h")[0], [])


class Store(unittest.TestCase):
    def test_fenced_writes_and_audit(self):
        with tempfile.TemporaryDirectory() as d:
            s = FencedStore(Path(d) / "f.db")
            self.assertTrue(s.write(1, "a#0", "a"))
            self.assertTrue(s.write(1, "a#0", "a"))
            self.assertTrue(s.write(2, "b#0", "b"))
            self.assertFalse(s.write(1, "a#0", "a"))  # stale: fenced off
            rows = s.rows()
            s.close_thread()
        terms = history_terms([record(0, "a", 1, 0, 0), record(3, "b", 2, 3, 3)])
        self.assertEqual(check_store(rows, terms), [])
        wrong = history_terms([record(0, "c", 1, 0, 0), record(3, "b", 2, 3, 3)])
        self.assertTrue(any("gave token 1" in f for f in check_store(rows, wrong)))


if __name__ == "__main__":
    unittest.main()
