#!/usr/bin/env python3
"""Shard mode's checks (leasehold_testing.shard_sampler) on synthetic /shards samples: they
must flag a double owner and a token that does not go up, and nothing else."""
import unittest

from leasehold_testing.checks import Failure
from leasehold_testing.shard_sampler import ShardObserver


def answer(*owned):
    return {"identity": "x", "group": "g", "shards": 4, "members": 2,
            "owned": [{"shard": s, "lease": f"g-{s}", "fencingToken": t} for s, t in owned]}


def observer(samples):
    obs = ShardObserver([])
    obs.samples = [(name, pid, t, t + 0.005, st) for name, pid, t, st in samples]
    return obs


class ShardSamplerTest(unittest.TestCase):
    def test_a_clean_handover_passes(self):
        obs = observer([("a", 1, 0.0, answer((0, 1))), ("a", 1, 0.1, answer((0, 1))),
                        ("a", 1, 0.2, answer()), ("b", 2, 0.25, answer((0, 2))),
                        ("b", 2, 0.3, answer((0, 2)))])
        self.assertEqual(obs.check_safety(), 2)

    def test_two_owners_at_once_fail(self):
        obs = observer([("a", 1, 0.0, answer((0, 1))), ("b", 2, 0.05, answer((0, 2))),
                        ("a", 1, 0.1, answer((0, 1))), ("b", 2, 0.2, answer((0, 2)))])
        with self.assertRaisesRegex(Failure, "claimed by two at once"):
            obs.check_safety()

    def test_answers_whose_windows_merely_touch_are_not_proof(self):
        # a's only sure span ends before b's starts: no overlap is proven.
        obs = observer([("a", 1, 0.0, answer((0, 1))), ("b", 2, 0.001, answer((0, 2)))])
        self.assertEqual(obs.check_safety(), 2)

    def test_a_token_that_does_not_go_up_fails(self):
        obs = observer([("a", 1, 0.0, answer((0, 3))), ("a", 1, 0.1, answer()),
                        ("b", 2, 0.2, answer((0, 3)))])
        with self.assertRaisesRegex(Failure, "did not go up"):
            obs.check_safety()

    def test_the_same_term_shown_again_by_the_same_process_passes(self):
        obs = observer([("a", 1, 0.0, answer((0, 3))), ("a", 1, 0.1, answer()),
                        ("a", 1, 0.2, answer((0, 3))), ("a", 1, 0.3, None)])
        self.assertEqual(obs.check_safety(), 2)

    def test_a_restarted_process_is_another_term(self):
        obs = observer([("a", 1, 0.0, answer((0, 3))), ("a", 2, 0.5, answer((0, 3)))])
        with self.assertRaisesRegex(Failure, "did not go up"):
            obs.check_safety()


if __name__ == "__main__":
    unittest.main()
