#!/usr/bin/env python3
"""The run-mode command checks (leasehold_testing.run_mode.command_failures) on synthetic
instances: they must flag two commands running at once, a command that outlived its claim, a
survivor of a stopped group and a stale-token write, and nothing in a clean history."""
import os
import subprocess
import sys
import tempfile
import time
import unittest
from datetime import datetime, timezone
from pathlib import Path

from leasehold_testing.fenced_store import FencedStore
from leasehold_testing.run_mode import Instance, command_failures, is_command
from leasehold_testing.timings import R

BASE = time.time() - 100  # scan_proc looks at this machine's processes: no pid below matches


def iso(t):
    return datetime.fromtimestamp(BASE + t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Supervisor:
    """A supervisor's log: the confirmed writes of its terms ((token, seconds after BASE))."""

    def __init__(self, name, writes):
        self.name, self.writes = name, writes

    def log_lines(self):
        # (token, t) or, in shard mode, (token, t, shard): the shard's logger adds "shard".
        return [{"msg": "became leader" if i == 0 else "renewed", "token": w[0], "ts": iso(w[1]),
                 **({"shard": str(w[2])} if len(w) > 2 else {})}
                for i, w in enumerate(self.writes)]


def instance(sup, pid, token, start, stop, last_alive=None, shard=None):
    i = Instance(sup, pid, BASE + start)
    i.token, i.stop, i.shard = token, BASE + stop, shard
    i.last_alive = BASE + (last_alive if last_alive is not None else stop - 0.005)
    return i


# pids no process of this machine has (above pid_max's usual 4194304)
PID_A, PID_B = 9_000_001, 9_000_002


class CommandChecks(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.store = Path(self.dir.name) / "fenced.db"
        FencedStore(self.store)

    def tearDown(self):
        self.dir.cleanup()

    def failures(self, instances, tolerance=0.25):
        return command_failures(instances, self.store, tolerance)

    def test_a_clean_handover_passes(self):
        a = Supervisor("a", [(1, 0.0), (1, 0.3), (1, 0.6)])
        b = Supervisor("b", [(2, 3.0)])
        self.assertEqual(self.failures([instance(a, PID_A, 1, 0.01, 0.9),
                                        instance(b, PID_B, 2, 3.01, 4.0)]), [])

    def test_commands_of_different_shards_may_run_at_once(self):
        a = Supervisor("a", [(1, 0.0, 0), (1, 0.6, 0)])
        b = Supervisor("b", [(1, 0.0, 1), (1, 0.6, 1)])
        self.assertEqual(self.failures([instance(a, PID_A, 1, 0.01, 0.9, shard=0),
                                        instance(b, PID_B, 1, 0.02, 0.9, shard=1)]), [])

    def test_two_commands_of_one_shard_at_once_are_flagged(self):
        a = Supervisor("a", [(1, 0.0, 3), (1, 1.0, 3)])
        b = Supervisor("b", [(2, 1.5, 3)])
        found = self.failures([instance(a, PID_A, 1, 0.01, 2.0, shard=3),
                               instance(b, PID_B, 2, 1.51, 3.0, shard=3)])
        self.assertTrue(any("ran at the same time" in f for f in found), found)

    def test_a_shard_is_judged_by_its_own_renewals(self):
        # Shard 1's renewals go on; shard 0's ended at 0.3: its command outlived its claim.
        a = Supervisor("a", [(1, 0.0, 0), (1, 0.3, 0), (1, 0.0, 1), (1, 3.0, 1)])
        found = self.failures([instance(a, PID_A, 1, 0.01, 3.0, shard=0)])
        self.assertTrue(any("after its claim ended" in f for f in found), found)

    def test_two_commands_at_once_are_flagged(self):
        a = Supervisor("a", [(1, 0.0), (1, 1.0)])
        b = Supervisor("b", [(2, 1.5)])
        found = self.failures([instance(a, PID_A, 1, 0.01, 2.0),
                               instance(b, PID_B, 2, 1.51, 3.0)])
        self.assertTrue(any("ran at the same time" in f for f in found), found)

    def test_a_command_that_outlived_its_claim_is_flagged(self):
        a = Supervisor("a", [(1, 0.0)])
        found = self.failures([instance(a, PID_A, 1, 0.01, R + 0.4)])
        self.assertTrue(any("after its claim ended" in f for f in found), found)
        self.assertEqual(self.failures([instance(a, PID_A, 1, 0.01, R + 0.2)]), [])

    def test_a_command_without_a_confirmed_write_is_flagged(self):
        a = Supervisor("a", [(1, 0.0)])
        found = self.failures([instance(a, PID_A, 2, 0.01, 0.5)])
        self.assertTrue(any("no confirmed write of term 2" in f for f in found), found)

    def test_a_command_that_never_stopped_is_flagged(self):
        a = Supervisor("a", [(1, 0.0)])
        i = instance(a, PID_A, 1, 0.01, 0.5)
        i.stop = None
        self.assertTrue(any("never stopped" in f for f in self.failures([i])))

    def test_a_survivor_of_the_group_is_flagged(self):
        a = Supervisor("a", [(1, 0.0)])
        i = instance(a, os.getpgrp(), 1, 0.01, 0.5)  # this test's own group is alive
        self.assertTrue(any("of its group survive" in f for f in self.failures([i])))

    def test_a_stale_token_write_is_flagged(self):
        a = Supervisor("a", [(1, 0.0)])
        b = Supervisor("b", [(2, 3.0)])
        instances = [instance(a, PID_A, 1, 0.01, 0.9), instance(b, PID_B, 2, 3.01, 4.0)]
        store = FencedStore(self.store)
        store.write(2, "b", "b/1")
        store.write(1, "a", "a/1")  # token 1 after the instance with token 2 started
        found = self.failures(instances)
        self.assertTrue(any("stale token" in f for f in found), found)

    def test_no_instance_at_all_is_a_failure(self):
        self.assertEqual(self.failures([]), ["no command ever ran"])


class CommandRecognition(unittest.TestCase):
    def test_only_the_command_itself_counts_not_a_process_whose_argv_names_it(self):
        with tempfile.TemporaryDirectory() as d:
            script = Path(d) / "run_mode_command.py"
            script.write_text("import time\ntime.sleep(10)\n")
            command = subprocess.Popen([sys.executable, str(script), "--journal", "x"])
            # like a supervisor, or its child between fork and exec: the command after `--`
            supervisor = subprocess.Popen(["sh", "-c", "sleep 10", "--", "python3", str(script)])
            try:
                deadline = time.monotonic() + 5
                while time.monotonic() < deadline and not is_command(command.pid):
                    time.sleep(0.01)
                self.assertTrue(is_command(command.pid))
                self.assertFalse(is_command(supervisor.pid))
            finally:
                for p in (command, supervisor):
                    p.kill()
                    p.wait()


if __name__ == "__main__":
    unittest.main(verbosity=2)
