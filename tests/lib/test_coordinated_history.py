#!/usr/bin/env python3
"""The --coordinated history checks on the Lease history of a real run (gate run of session 23,
integration.real.coordinated, 01:41 UTC, reconstructed from its logs): each term's decision is
the last one before the holder's own first write, and a naming after the holder's release (the
controller's candidate cache had not yet seen the deletion) belongs to no term."""
import unittest

from leasehold_testing.checks import Failure
from leasehold_testing.coordinated_history import (check_term_started_by_own_write,
                                                   claims_only, renamed_after_release)
from leasehold_testing.lease_history import wait_for_record

T = "2026-12-07T01:41:%09.6fZ"


def rec(t, holder, token, acquired=None, preferred=None):
    spec = {"holderIdentity": holder, "leaseTransitions": token, "renewTime": T % t}
    if acquired is not None:
        spec["acquireTime"] = T % acquired
    if preferred:
        spec["preferredHolder"] = preferred
    return (1796607660.0 + t, "MODIFIED", None, spec)


def gate_history():
    """01:41:06-21: replica-0 named, leads with 6, SIGTERM; replica-1 named, leads with 7,
    kill -9; replica-2 named 9.6 s later, leads with 8, SIGTERM: released at 21.528 and named
    again at 21.536 ("had no holder, setting holder to replica-2")."""
    records = [rec(5.9, "old-holder", 5, acquired=1.0), rec(6.172, "replica-0", 5),
               rec(9.167, "replica-0", 6, acquired=9.167), rec(9.467, "replica-0", 6, 9.167),
               rec(10.468, "", 6, acquired=10.468), rec(10.474, "replica-1", 6),
               rec(10.490, "replica-1", 7, acquired=10.490), rec(11.374, "replica-1", 7, 10.49),
               rec(21.2007, "replica-2", 7), rec(21.212, "replica-2", 8, acquired=21.212),
               rec(21.528, "", 8, acquired=21.528), rec(21.536, "replica-2", 8)]
    return [(t, kind, str(rv), spec) for rv, (t, kind, _, spec) in enumerate(records, 1)]


class TermChecks(unittest.TestCase):
    def test_a_naming_after_the_release_is_not_the_terms_decision(self):
        records = gate_history()
        for holder, token in (("replica-0", 6), ("replica-1", 7), ("replica-2", 8)):
            check_term_started_by_own_write(records, holder, token)

    def test_the_decision_before_the_own_write_must_keep_the_old_token(self):
        records = gate_history()
        t, kind, rv, spec = records[8]
        records[8] = (t, kind, rv, dict(spec, leaseTransitions=8))  # as if the controller raised it
        with self.assertRaisesRegex(Failure, "keeps the old token"):
            check_term_started_by_own_write(records, "replica-2", 8)

    def test_a_term_without_a_decision_before_it_fails(self):
        records = [r for r in gate_history() if not (r[3]["holderIdentity"] == "replica-1"
                                                   and "acquireTime" not in r[3])]
        with self.assertRaisesRegex(Failure, "never decided for replica-1 before"):
            check_term_started_by_own_write(records, "replica-1", 7)

    def test_a_term_without_its_own_write_fails(self):
        with self.assertRaisesRegex(Failure, "no write of replica-2 with token 9"):
            check_term_started_by_own_write(gate_history(), "replica-2", 9)

    def test_a_release_preferring_the_holder_is_a_decision(self):
        records = [rec(1.0, "replica-0", 1, acquired=0.5),
                   rec(1.1, "replica-0", 1, acquired=0.5, preferred="replica-2"),
                   rec(1.2, "", 1, acquired=1.2, preferred="replica-2"),
                   rec(1.3, "replica-2", 2, acquired=1.3)]
        check_term_started_by_own_write(records, "replica-2", 2)

    def test_renamed_after_release(self):
        records = gate_history()
        self.assertEqual([round(dt, 3) for dt in renamed_after_release(records, "replica-2")],
                         [0.008])
        self.assertEqual(renamed_after_release(records, "replica-0"), [])
        self.assertNotIn(records[-1], claims_only(records))


class WaitForRecord(unittest.TestCase):
    def test_a_record_already_held_is_returned(self):
        spec = wait_for_record(gate_history(), "replica-2's token 8",
                               lambda s: s.get("leaseTransitions") == 8, timeout=0.05)
        self.assertEqual(spec["holderIdentity"], "replica-2")

    def test_a_record_never_received_fails_naming_it(self):
        with self.assertRaisesRegex(Failure, "the Lease history to hold replica-2's token 9"):
            wait_for_record(gate_history(), "replica-2's token 9",
                            lambda s: s.get("leaseTransitions") == 9, timeout=0.05)


if __name__ == "__main__":
    unittest.main()
