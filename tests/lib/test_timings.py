#!/usr/bin/env python3
"""LEASEHOLD_TEST_SLOWDOWN (leasehold_testing.timings): unset, the timings and flags are exactly
the release ones; a factor stretches D, R, P, their flags and slack() alike, D in whole seconds
(the sidecar refuses anything else); a bad value fails at import, naming the variable."""
import json
import os
import subprocess
import sys
import unittest

from leasehold_testing.timings import SLOWDOWN_VARIABLE, duration_flag, slowdown_from

SHOW = ("import json; from leasehold_testing import D, R, P, TIMINGS; "
        "from leasehold_testing.timings import SLOWDOWN, slack; "
        "print(json.dumps([D, R, P, TIMINGS, SLOWDOWN, slack(1.0)]))")


def imported_with(value):
    """What the package says in a fresh interpreter with the variable unset (None) or set."""
    env = {k: v for k, v in os.environ.items() if k != SLOWDOWN_VARIABLE}
    if value is not None:
        env[SLOWDOWN_VARIABLE] = value
    return subprocess.run([sys.executable, "-c", SHOW], env=env, capture_output=True, text=True)


class Slowdown(unittest.TestCase):
    def test_unset_is_exactly_the_release_timings(self):
        r = imported_with(None)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout),
                         [2.0, 1.5, 0.3, ["--lease-duration", "2s", "--renew-deadline", "1500ms",
                                          "--retry-period", "300ms"], 1.0, 1.0])
        self.assertEqual(slowdown_from({}), 1.0)
        self.assertEqual(slowdown_from({SLOWDOWN_VARIABLE: ""}), 1.0)
        self.assertEqual(slowdown_from({SLOWDOWN_VARIABLE: "1"}), 1.0)

    def test_a_factor_stretches_everything_alike(self):
        r = imported_with("3")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout),
                         [6.0, 4.5, 0.9, ["--lease-duration", "6s", "--renew-deadline", "4500ms",
                                          "--retry-period", "900ms"], 3.0, 3.0])

    def test_the_factor_is_rounded_up_so_that_d_is_whole_seconds(self):
        self.assertEqual(slowdown_from({SLOWDOWN_VARIABLE: "2.2"}), 2.5)
        self.assertEqual(slowdown_from({SLOWDOWN_VARIABLE: " 1.5 "}), 1.5)
        r = imported_with("1.2")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)[3], ["--lease-duration", "3s", "--renew-deadline",
                                                   "2250ms", "--retry-period", "450ms"])

    def test_a_bad_value_names_the_variable(self):
        for bad in ["abc", "0.5", "0", "-2", "nan", "inf", "3s"]:
            with self.assertRaisesRegex(ValueError, SLOWDOWN_VARIABLE):
                slowdown_from({SLOWDOWN_VARIABLE: bad})
        r = imported_with("fast")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(f"{SLOWDOWN_VARIABLE}='fast'", r.stderr)

    def test_duration_flags(self):
        self.assertEqual([duration_flag(s) for s in (2.0, 1.5, 0.3, 6.0, 0.45, 1.0)],
                         ["2s", "1500ms", "300ms", "6s", "450ms", "1s"])


if __name__ == "__main__":
    unittest.main()
