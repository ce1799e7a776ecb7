#!/usr/bin/env python3
"""The machine-stall probe (leasehold_testing.machine_stalls): a stopped probe notes the time
it stood still, it ends with the process it watches, the log reads back as intervals (overlaps
counted once), and wait_for gives a wait back the time the machine stood still, no more."""
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from leasehold_testing import machine_stalls
from leasehold_testing.checks import Failure, check_took, wait_for


def start_probe(log, parent):
    return subprocess.Popen([sys.executable, machine_stalls.__file__, "probe", "--log", log,
                             "--parent", str(parent), "--max-seconds", "60"])


def write_log(path, lines):
    with open(path, "w") as f:
        for end, seconds, kind in lines:
            f.write(f"{end:.3f}\t{seconds:.3f}\t{kind}\tcpu=0.00 io=0.00 memory=0.00\n")


class InTempDir(unittest.TestCase):
    """A folder of its own, and the stall log's path in it."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="leasehold-stalls-")
        self.log = os.path.join(self.dir.name, "stalls.tsv")

    def tearDown(self):
        self.dir.cleanup()


class Probe(InTempDir):
    def test_a_stopped_probe_notes_how_long_it_stood_still(self):
        probe = start_probe(self.log, os.getpid())
        try:
            wait_for("the probe's scratch file", lambda: os.path.exists(self.log + ".scratch"), 10)
            time.sleep(0.1)
            self.assertEqual(machine_stalls.read(self.log), [])
            paused = 0.8
            probe.send_signal(signal.SIGSTOP)
            time.sleep(paused)
            probe.send_signal(signal.SIGCONT)
            stalls = wait_for("a stall in the log", lambda: machine_stalls.read(self.log), 10)
        finally:
            probe.kill()
            probe.wait()
        self.assertEqual(len(stalls), 1, [str(s) for s in stalls])
        self.assertEqual(stalls[0].kind, "sleep")
        # At least the pause less the probe's own period; no more than the pause plus a busy
        # machine's delay in stopping and waking it.
        self.assertGreaterEqual(stalls[0].seconds, paused - 2 * machine_stalls.PERIOD)
        self.assertLess(stalls[0].seconds, paused + 1.0)

    def test_the_probe_ends_with_its_parent(self):
        parent = subprocess.Popen(["sleep", "0.3"])
        probe = start_probe(self.log, parent.pid)
        parent.wait()
        # It looks once a second.
        self.assertEqual(probe.wait(timeout=10), 0)
        self.assertFalse(os.path.exists(self.log + ".scratch"))


class Reading(InTempDir):
    def test_intervals_overlaps_once_and_bad_lines_skipped(self):
        write_log(self.log, [(100.0, 3.0, "sleep"), (100.5, 1.0, "write"), (200.0, 0.5, "sleep")])
        with open(self.log, "a") as f:
            f.write("not a stall\nx\t1\tsleep\t-\n")
        self.assertEqual(len(machine_stalls.read(self.log)), 3)
        self.assertEqual([s.end for s in machine_stalls.between(96, 98, self.log)], [100.0])
        self.assertEqual(machine_stalls.between(101.5, 199.0, self.log), [])
        # 97..100 and 99.5..100.5 share half a second, counted once: 3.5 s, not 4.
        self.assertAlmostEqual(machine_stalls.seconds_between(90, 150, self.log), 3.5)
        self.assertAlmostEqual(machine_stalls.seconds_between(99, 150, self.log), 1.5)
        self.assertEqual(machine_stalls.describe(101.5, 199.0, self.log), "")
        text = machine_stalls.describe(90, 150, self.log)
        self.assertIn("the whole machine stalled", text)
        self.assertIn("3.00s from", text)
        self.assertTrue(machine_stalls.summary(self.log).startswith("machine stalls: 3 "))

    def test_no_log_no_stalls(self):
        self.assertEqual(machine_stalls.read(os.path.join(self.dir.name, "absent")), [])
        self.assertIn("none", machine_stalls.summary(os.path.join(self.dir.name, "absent")))


class WaitFor(InTempDir):
    def setUp(self):
        super().setUp()
        self.saved = os.environ.get(machine_stalls.STALL_LOG_VARIABLE)
        os.environ[machine_stalls.STALL_LOG_VARIABLE] = self.log

    def tearDown(self):
        if self.saved is None:
            os.environ.pop(machine_stalls.STALL_LOG_VARIABLE, None)
        else:
            os.environ[machine_stalls.STALL_LOG_VARIABLE] = self.saved
        super().tearDown()

    def true_after(self, seconds):
        at = time.monotonic() + seconds
        return lambda: time.monotonic() >= at

    def test_without_a_stall_the_timeout_holds(self):
        t0 = time.monotonic()
        with self.assertRaisesRegex(Failure, r"timed out after 0.2s waiting for it$"):
            wait_for("it", self.true_after(0.6), 0.2)
        self.assertLess(time.monotonic() - t0, 0.5)

    def test_a_stall_during_the_wait_is_given_back(self):
        # The machine stood still from before the wait until 0.5 s into it.
        write_log(self.log, [(time.time() + 0.5, 1.0, "sleep")])
        self.assertTrue(wait_for("it", self.true_after(0.6), 0.2))

    def test_only_the_stall_is_given_back(self):
        write_log(self.log, [(time.time() + 0.5, 1.0, "sleep")])
        t0 = time.monotonic()
        with self.assertRaisesRegex(Failure, r"timed out after 0.2s \(\+0.5\ds the machine"):
            wait_for("it", self.true_after(5), 0.2)
        self.assertLess(time.monotonic() - t0, 1.5)

    def test_check_took_allows_the_stall_between_its_ends_only(self):
        write_log(self.log, [(1000.0, 2.0, "sleep")])  # 998..1000
        check_took(997.0, 1000.5, 1.5, "in time")  # 3.5 s, 2 of them the machine's
        with self.assertRaisesRegex(Failure, r"took 3.500s, more than 1.4s \+ 2.00s the machine"):
            check_took(997.0, 1000.5, 1.4, "in time")
        with self.assertRaisesRegex(Failure, r"^in time: took 3.500s, more than 1.5s$"):
            check_took(1001.0, 1004.5, 1.5, "in time")
        with self.assertRaisesRegex(Failure, r"took 3.500s, less than 4s"):
            check_took(997.0, 1000.5, 5, "in time", least=4)


if __name__ == "__main__":
    unittest.main()
