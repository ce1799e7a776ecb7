#!/usr/bin/env python3
"""leasehold_testing's Observer, port picker, TcpProxy and AuditLog: the Observer's safety check
on synthetic samples must flag overlapping claims (including a restarted process against its
previous life) and nothing else; the proxy's faults and the audit counters do what RealEnv
relies on."""
import json
import socket
import tempfile
import threading
import time
import unittest
from datetime import datetime, timezone
from pathlib import Path

from leasehold_testing import AuditLog, Failure, Observer, TcpProxy, free_port
from leasehold_testing.ports import ephemeral_low

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
    obs = Observer([])
    obs.samples = list(samples)
    return obs


class ObserverChecks(unittest.TestCase):
    def test_clean_handover_passes(self):
        obs = observer([true(0.1, "a#0", 0, 1.6, 0.0), false(1.7, "a#0"),
                        true(2.0, "b#0", 1, 3.5, 1.9)])
        self.assertEqual([t[2:] for t in obs.check_safety()], [["a#0", 0], ["b#0", 1]])

    def test_overlap_is_flagged(self):
        obs = observer([true(0.1, "a#0", 0, 1.6, 0.0), true(1.0, "b#0", 1, 2.5, 0.9)])
        with self.assertRaisesRegex(Failure, "claims overlap"):
            obs.check_safety()

    def test_a_kill_ends_the_claim_a_restart_is_a_new_incarnation(self):
        # a#0 killed at 0.5 (its validUntil 1.6 dies with it), a#1 leads from 0.8: fine.
        ok = observer([true(0.1, "a#0", 0, 1.6, 0.0), exited(0.5, "a#0", -9),
                       true(0.9, "a#1", 1, 2.4, 0.8)])
        ok.check_safety()
        # a#0 still claimed when a#1 started: a restart is checked like anybody else.
        bad = observer([true(0.1, "a#0", 0, 1.6, 0.0), true(0.9, "a#1", 1, 2.4, 0.8)])
        with self.assertRaisesRegex(Failure, "a#0 .* a#1"):
            bad.check_safety()

    def test_a_release_ends_the_claim_at_the_send_of_its_last_true_answer(self):
        # a#0 answers true to a request sent at 1.000 that arrives at 1.004, after b#0's term
        # began (1.002), then exits cleanly (a release): the answer was computed before the
        # release, so no overlap (the arrival rule flagged this in a loaded ctest -j2 run).
        late = (BASE + 1.000, BASE + 1.004, "a#0", {
            "leader": True, "fencingToken": 0, "validUntil": iso(1.5), "acquireTime": iso(0.0)})
        ok = observer([true(0.1, "a#0", 0, 1.5, 0.0), late, exited(1.010, "a#0", 0),
                       true(1.003, "b#0", 1, 2.5, 1.002)])
        ok.check_safety()
        # The same answer to a request SENT after b#0's term began is a double claim.
        sent_late = (BASE + 1.010, BASE + 1.011, "a#0", late[3])
        bad = observer([true(0.1, "a#0", 0, 1.5, 0.0), sent_late, exited(1.020, "a#0", 0),
                        true(1.003, "b#0", 1, 2.5, 1.002)])
        with self.assertRaisesRegex(Failure, "claims overlap"):
            bad.check_safety()

    def test_a_check_waits_for_an_answer_since_the_handover(self):
        # coordinated_yield on a loaded machine (the flake table): a#0 handed over at 1.27,
        # b#0 led from 1.289; checked before a#0's sampler had an answer from after that, a#0
        # still claimed up to its validUntil (1.9). wait_sampled_since waits for that answer.
        class Running:
            def __init__(self, name):
                self.name, self.proc = name, object()

            def alive(self):
                return True

        obs = observer([true(0.1, "a#0", 1, 1.6, 0.0), true(1.2, "a#0", 1, 1.9, 0.0),
                        true(1.3, "b#0", 2, 2.8, 1.289)])
        obs.sidecars = [Running("a"), Running("b")]
        with self.assertRaisesRegex(Failure, "claims overlap: a#0 .* until .*900"):
            obs.check_safety()
        with self.assertRaisesRegex(Failure, "an answer of every running sidecar"):
            obs.wait_sampled_since(BASE + 1.3, timeout=0.05)
        obs.samples.append(false(1.31, "a#0"))
        obs.wait_sampled_since(BASE + 1.3, timeout=0.05)
        obs.check_safety()

    def test_tokens_must_go_up(self):
        obs = observer([true(0.1, "a#0", 3, 1.6, 0.0), false(1.7, "a#0"),
                        true(2.0, "b#0", 3, 3.5, 1.9)])
        with self.assertRaisesRegex(Failure, "token did not go up"):
            obs.check_safety()


class FreePort(unittest.TestCase):
    def test_ports_are_distinct_and_below_the_ephemeral_range(self):
        # The bench starts 26 sidecars (52 ports) in one process: random picks collided.
        ports = [free_port() for _ in range(300)]
        self.assertEqual(len(set(ports)), len(ports))
        self.assertTrue(all(p < ephemeral_low() for p in ports))


class EchoServer:
    """A TCP server on loopback that sends back what it gets (one thread per connection)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.received = []
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.echo, args=(c,), daemon=True).start()

    def echo(self, c):
        with c:
            while True:
                try:
                    data = c.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                self.received.append((time.monotonic(), data))
                c.sendall(data)

    def close(self):
        self.sock.close()


class TcpProxyFaults(unittest.TestCase):
    def setUp(self):
        self.echo = EchoServer()
        self.proxy = TcpProxy(self.echo.port, name="test")

    def tearDown(self):
        self.proxy.close()
        self.echo.close()

    def connect(self):
        c = socket.create_connection(("127.0.0.1", self.proxy.port), timeout=2)
        self.addCleanup(c.close)
        return c

    def test_forwards_bytes_untouched_both_ways(self):
        c = self.connect()
        payload = bytes(range(256)) * 300
        c.sendall(payload)
        got = b""
        while len(got) < len(payload):
            got += c.recv(65536)
        self.assertEqual(got, payload)

    def test_partition_holds_everything_and_heal_resets_what_it_held(self):
        c = self.connect()
        c.sendall(b"before")
        self.assertEqual(c.recv(100), b"before")
        self.proxy.partition()
        c.sendall(b"during")
        c.settimeout(0.5)
        with self.assertRaises(socket.timeout):
            c.recv(100)
        late = self.connect()  # accepted while partitioned, but nothing passes either
        late.sendall(b"late")
        late.settimeout(0.3)
        with self.assertRaises(socket.timeout):
            late.recv(100)
        self.assertNotIn(b"during", b"".join(d for _, d in self.echo.received))
        self.proxy.heal()
        for conn in (c, late):  # held connections are reset, what they held is lost
            conn.settimeout(2)
            with self.assertRaises((ConnectionResetError, BrokenPipeError)):
                conn.sendall(b"x")
                if not conn.recv(100):
                    raise ConnectionResetError("closed")
        fresh = self.connect()
        fresh.sendall(b"after")
        self.assertEqual(fresh.recv(100), b"after")
        self.assertNotIn(b"during", b"".join(d for _, d in self.echo.received))

    def test_reset_sends_rst(self):
        c = self.connect()
        c.sendall(b"hi")
        self.assertEqual(c.recv(100), b"hi")
        self.assertEqual(self.proxy.reset(), 1)
        with self.assertRaises(ConnectionResetError):
            c.recv(100)

    def test_latency_delays_requests_and_in_flight_sees_them(self):
        c = self.connect()
        c.sendall(b"warm")
        c.recv(100)
        self.proxy.set_latency(0.4, "up")
        t0 = time.monotonic()
        c.sendall(b"slow")
        time.sleep(0.1)
        self.assertEqual(self.proxy.in_flight(), 4)
        self.assertEqual(c.recv(100), b"slow")
        self.assertGreaterEqual(time.monotonic() - t0, 0.39)
        self.assertEqual(self.proxy.in_flight(), 0)
        # A chunk keeps the delay it arrived with, even if the client closes meanwhile.
        c.sendall(b"last")
        c.close()
        time.sleep(0.6)
        self.assertEqual(self.echo.received[-1][1], b"last")

    def test_upstream_down_is_a_reset(self):
        self.proxy.retarget(free_port())  # nothing listens there
        with self.assertRaises((ConnectionResetError, BrokenPipeError)):
            c = self.connect()  # the reset may even beat connect() back
            c.settimeout(2)
            c.sendall(b"x")
            if not c.recv(100):
                raise ConnectionResetError("closed")


class AuditCounters(unittest.TestCase):
    def test_counts_each_request_once_by_user_and_verb(self):
        def ev(aid, user, verb, stage, code, resource="leases"):
            return json.dumps({"auditID": aid, "stage": stage, "verb": verb,
                               "user": {"username": user}, "responseStatus": {"code": code},
                               "objectRef": {"resource": resource}})
        lines = [ev("1", "a", "update", "ResponseComplete", 200),
                 ev("2", "a", "watch", "ResponseStarted", 200),
                 ev("3", "b", "get", "ResponseComplete", 404),
                 ev("2", "a", "watch", "ResponseComplete", 200),   # the same watch ending
                 ev("4", "b", "watch", "ResponseComplete", 403),   # refused, never started
                 ev("6", "a", "watch", "ResponseStarted", 403),    # refused, both stages
                 ev("6", "a", "watch", "ResponseComplete", 403),
                 ev("5", "b", "create", "ResponseComplete", 201, resource="events")]
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "audit.log"
            path.write_text("\n".join(lines) + "\n" + '{"partial": ')
            log = AuditLog(path)
            events = log.events()
            self.assertEqual(AuditLog.counters_of(events), {
                "a": {"update": 1, "watch": 2}, "b": {"get": 1, "watch": 1, "create": 1}})
            self.assertEqual(AuditLog.counters_of(events, by_resource=True)["b"],
                             {"get:leases": 1, "watch:leases": 1, "create:events": 1})
            offset = len("\n".join(lines[:3])) + 1
            self.assertEqual(AuditLog.counters_of(log.events(offset)),
                             {"b": {"watch": 1, "create": 1}, "a": {"watch": 1}})


if __name__ == "__main__":
    unittest.main()
