#!/usr/bin/env python3
"""Shard mode's checks (leasehold_testing.shard_sampler) on synthetic /shards samples: they
must flag a double owner and a token that does not go up, and nothing else; the balance check
(balance_of, what the scenarios and the chaos runner's --shards wait for) must flag an unowned
shard, a shard owned twice, a count outside floor/ceil, a member count that is not M and a
silent replica, and pass a balanced group; wait_balanced must return the owners that the
balanced answers named, not those of a later read."""
import unittest
from unittest import mock

from leasehold_testing.checks import Failure
from leasehold_testing import shard_sampler
from leasehold_testing.shard_sampler import ShardObserver, balance_of, wait_balanced


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


def group(counts, members=None, n=None):
    """{name: /shards answer}: replica j owns the next counts[j] shards, all seeing `members`."""
    out, next_shard = {}, 0
    for j, c in enumerate(counts):
        st = answer(*[(next_shard + i, 1) for i in range(c)])
        st["members"] = len(counts) if members is None else members
        out[f"r{j}"] = st
        next_shard += c
    return out


class BalanceTest(unittest.TestCase):
    def test_floor_or_ceil_each_passes(self):
        self.assertIsNone(balance_of(group([6, 5, 5]), 16))
        self.assertIsNone(balance_of(group([4, 4, 4, 4]), 16))

    def test_a_count_outside_floor_ceil_fails(self):
        self.assertRegex(balance_of(group([7, 5, 4]), 16), "unbalanced")

    def test_an_unowned_shard_fails(self):
        self.assertRegex(balance_of(group([5, 5, 5]), 16), r"unowned \[15\]")

    def test_a_shard_owned_twice_fails(self):
        g = group([6, 5, 5])
        g["r2"]["owned"].append({"shard": 0, "lease": "g-0", "fencingToken": 2})
        self.assertRegex(balance_of(g, 16), "owned twice {0: ")

    def test_a_stale_member_count_fails(self):
        # balanced by count, but one replica still counts a gone member: not settled yet
        g = group([6, 5, 5])
        g["r1"]["members"] = 4
        self.assertRegex(balance_of(g, 16), "r1 sees 4 members, not 3")

    def test_a_silent_replica_fails(self):
        g = group([8, 8])
        g["r1"] = None
        self.assertRegex(balance_of(g, 16), r"no answer from \['r1'\]")


class FakeReplica:
    def __init__(self, name):
        self.name = name

    def alive(self):
        return True


class WaitBalancedTest(unittest.TestCase):
    def test_returns_the_owners_of_the_answers_judged_balanced(self):
        # The first round of answers is balanced; every later one has shard 11 between owners
        # (r2 released it, nobody took it yet), as a loaded machine may show right after.
        balanced = group([6, 5, 5])
        moving = group([6, 5, 5])
        moving["r2"]["owned"] = [o for o in moving["r2"]["owned"] if o["shard"] != 11]
        reads = {"count": 0}

        def shards_of(sidecar, timeout=0.5):
            reads["count"] += 1
            return (balanced if reads["count"] <= 3 else moving)[sidecar.name]
        with mock.patch.object(shard_sampler, "shards_of", shards_of):
            got = wait_balanced([FakeReplica(f"r{j}") for j in range(3)], 16, timeout=1)
        self.assertEqual(got, {i: "r0" if i < 6 else "r1" if i < 11 else "r2" for i in range(16)})


if __name__ == "__main__":
    unittest.main()
