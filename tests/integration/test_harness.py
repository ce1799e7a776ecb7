#!/usr/bin/env python3
"""harness.Observer's safety check on synthetic samples: it must flag overlapping claims
(including a restarted process against its previous life) and nothing else."""
import sys
import unittest
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402

BASE = 1796014755.0


def iso(t):
    return datetime.fromtimestamp(BASE + t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def true(t, who, token, valid_until, acquired):
    return (BASE + t, BASE + t + 0.001, who, {
        "leader": True, "fencingToken": token, "validUntil": iso(valid_until),
        "acquireTime": iso(acquired)})


def false(t, who):
    return (BASE + t, BASE + t + 0.001, who, {"leader": False})


def exited(t, who, rc):
    return (BASE + t, BASE + t, who, {"exited": rc})


def observer(samples):
    obs = harness.Observer([])
    obs.samples = list(samples)
    return obs


class ObserverChecks(unittest.TestCase):
    def test_clean_handover_passes(self):
        obs = observer([true(0.1, "a#0", 0, 1.6, 0.0), false(1.7, "a#0"),
                        true(2.0, "b#0", 1, 3.5, 1.9)])
        self.assertEqual([t[2:] for t in obs.check_safety()], [["a#0", 0], ["b#0", 1]])

    def test_overlap_is_flagged(self):
        obs = observer([true(0.1, "a#0", 0, 1.6, 0.0), true(1.0, "b#0", 1, 2.5, 0.9)])
        with self.assertRaisesRegex(harness.Failure, "claims overlap"):
            obs.check_safety()

    def test_a_kill_ends_the_claim_a_restart_is_a_new_incarnation(self):
        # a#0 killed at 0.5 (its validUntil 1.6 dies with it), a#1 leads from 0.8: fine.
        ok = observer([true(0.1, "a#0", 0, 1.6, 0.0), exited(0.5, "a#0", -9),
                       true(0.9, "a#1", 1, 2.4, 0.8)])
        ok.check_safety()
        # a#0 still claimed when a#1 started: a restart is checked like anybody else.
        bad = observer([true(0.1, "a#0", 0, 1.6, 0.0), true(0.9, "a#1", 1, 2.4, 0.8)])
        with self.assertRaisesRegex(harness.Failure, "a#0 .* a#1"):
            bad.check_safety()

    def test_tokens_must_go_up(self):
        obs = observer([true(0.1, "a#0", 3, 1.6, 0.0), false(1.7, "a#0"),
                        true(2.0, "b#0", 3, 3.5, 1.9)])
        with self.assertRaisesRegex(harness.Failure, "token did not go up"):
            obs.check_safety()


class FreePort(unittest.TestCase):
    def test_ports_are_distinct_and_below_the_ephemeral_range(self):
        # The bench starts 26 sidecars (52 ports) in one process: random picks collided.
        ports = [harness.free_port() for _ in range(300)]
        self.assertEqual(len(set(ports)), len(ports))
        self.assertTrue(all(p < harness._ephemeral_low() for p in ports))


if __name__ == "__main__":
    unittest.main()
