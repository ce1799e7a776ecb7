#!/usr/bin/env python3
"""keep_failed_dir, the harness's LEASEHOLD_TEST_KEEP step: off unless asked, a copy under the
directory's own name, and a socket it cannot copy does not lose the rest."""
import os
import socket
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from leasehold_testing.sidecar_host import KEEP_VARIABLE, keep_failed_dir


class KeepFailedDir(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="testlib-keep-")
        self.root = Path(self.tmp.name)
        self.scenario = self.root / "leasehold-it-abc"
        (self.scenario / "stores").mkdir(parents=True)
        (self.scenario / "replica-0.log").write_text("line\n")
        (self.scenario / "stores" / "journal").write_text("entry\n")

    def tearDown(self):
        self.tmp.cleanup()

    def test_off_unless_the_variable_is_set(self):
        with mock.patch.dict(os.environ, {}, clear=True):
            self.assertIsNone(keep_failed_dir(self.scenario))
        with mock.patch.dict(os.environ, {KEEP_VARIABLE: ""}):
            self.assertIsNone(keep_failed_dir(self.scenario))

    def test_copies_under_its_own_name(self):
        keep = self.root / "kept" / "deeper"
        with mock.patch.dict(os.environ, {KEEP_VARIABLE: str(keep)}):
            out = keep_failed_dir(self.scenario)
        self.assertEqual(out, keep / "leasehold-it-abc")
        self.assertEqual((out / "replica-0.log").read_text(), "line\n")
        self.assertEqual((out / "stores" / "journal").read_text(), "entry\n")

    def test_a_socket_does_not_lose_the_rest(self):
        sock = socket.socket(socket.AF_UNIX)
        self.addCleanup(sock.close)
        sock.bind(str(self.scenario / "control.sock"))
        out = keep_failed_dir(self.scenario, keep_root=self.root / "kept")
        self.assertEqual((out / "replica-0.log").read_text(), "line\n")
        self.assertEqual((out / "stores" / "journal").read_text(), "entry\n")

    def test_an_unwritable_root_is_reported_not_raised(self):
        blocker = self.root / "a-file"
        blocker.write_text("")
        self.assertIsNone(keep_failed_dir(self.scenario, keep_root=blocker / "below"))


if __name__ == "__main__":
    unittest.main()
