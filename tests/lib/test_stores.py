#!/usr/bin/env python3
"""The conformance suite's stores (leasehold_testing.stores) are complete: every Store in STORES
is named as its key, implements what a scenario asks of a store, and has every bound, each a
positive number of seconds with the earliest takeover before the latest; and the ctest entries
(tests/conformance/CMakeLists.txt's conformance_stores) name exactly those stores, so that a
new store is neither left out of the gate nor registered without its class."""
import re
import unittest

from leasehold_testing.paths import ROOT
from leasehold_testing.stores import DEFAULT_STORES, STORES, Store

BOUNDS = ("first_leader", "earliest_takeover", "latest_takeover", "handover",
          "follows_after_wake", "follows_after_heal")
METHODS = ("__enter__", "scope", "first_token", "check_record", "base_args", "unreachable")


class Stores(unittest.TestCase):
    def test_every_store_is_complete(self):
        for name, kind in STORES.items():
            with self.subTest(store=name):
                self.assertEqual(kind.name, name)
                for m in METHODS:
                    self.assertIsNot(getattr(kind, m), getattr(Store, m), f"{name}.{m}")
                for b in BOUNDS:
                    value = getattr(kind, b, None)
                    self.assertIsInstance(value, (int, float), f"{name}.{b}")
                    self.assertGreater(value, 0, f"{name}.{b}")
                self.assertLess(kind.earliest_takeover, kind.latest_takeover, name)
                self.assertIsInstance(kind.consecutive_tokens, bool, name)

    def test_defaults_are_stores(self):
        self.assertTrue(set(DEFAULT_STORES) <= set(STORES))

    def test_ctest_registers_exactly_these_stores(self):
        text = (ROOT / "tests/conformance/CMakeLists.txt").read_text()
        found = re.search(r"set\(conformance_stores ([^)]*)\)", text)
        self.assertIsNotNone(found, "tests/conformance/CMakeLists.txt: set(conformance_stores ...)")
        self.assertEqual(sorted(found.group(1).split()), sorted(STORES))


if __name__ == "__main__":
    unittest.main()
