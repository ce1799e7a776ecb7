"""RunCluster: 3 `leasehold run` replicas (RunReplica) whose command
(leasehold_testing/run_mode_command.py) records its start in a shared journal and writes its
token to a fenced SQLite store, the Monitor over their commands, and the checks every run-mode
scenario ends with (run_mode.command_failures). Shared by the run-mode scenarios on the test API
server and the real kube-apiserver (tests/integration/run_scenarios.py) and on etcd
(etcd_scenarios.py, with an EtcdEnv's replicas). Timings are scaled: D=2s, R=1.5s, P=0.3s;
--kill-grace 500ms, --drain-timeout 3s."""
import signal
import time

from .checks import Failure, check, log, wait_for
from .fenced_store import FencedStore
from .run_mode import Monitor, claims, command_failures, journal_command, run_args
from .sidecar import Sidecar
from .timings import D, P, slack

KILL_GRACE, DRAIN_TIMEOUT = 0.5, 3.0
RUN_FLAGS = ["--kill-grace", "500ms", "--drain-timeout", "3s"]
# The Monitor polls every 20 ms on a machine shared with builds: "stopped by R" allows this much.
# The bound that matters for safety, D after the last renewal, is D - R = 0.5 s later still.
TOLERANCE = slack(0.25)
# What a signal takes to act and be seen: the supervisor's reaction (PR_SET_PDEATHSIG, its
# signal handler), the Monitor's next poll, a loaded machine. The bounds below that say "at once"
# allow this much; the others add it to the timing they check (kill grace, drain timeout, backoff).
AT_ONCE = slack(0.5)


class RunCommand:
    """What makes a sidecar class a run-mode replica: `leasehold run [its flags] [run flags] --
    command`, --log-level debug so that every renewal is in its log (claims)."""

    def __init__(self, env, name, command, run_flags, **kw):
        super().__init__(env, name, **kw)
        self.args = run_args(self.args, run_flags, command)

    def claims(self):
        return claims(self)

    def exit_code(self, timeout=10):
        """The process's exit status once it has ended (waits up to `timeout`)."""
        return self.reap(timeout)


class RunReplica(RunCommand, Sidecar):
    """A replica of Env or RealEnv (the Kubernetes store)."""


class RunCluster:
    """3 replicas of `leasehold run`, the journal, the fenced store, the Monitor."""

    def __init__(self, env, n=3, run_flags=(), command_flags=(), replica=None):
        """`replica(env, name, command, run_flags)`: one replica, not started (default
        RunReplica: a Sidecar of Env or RealEnv; EtcdEnv passes its own)."""
        replica = replica or RunReplica
        self.env = env
        self.journal = env.dir / "journal.jsonl"
        self.store_path = env.dir / "fenced.db"
        FencedStore(self.store_path)  # creates the tables before any command writes
        command = journal_command(self.journal, self.store_path, *command_flags)
        self.replicas = [replica(env, f"replica-{i}", command, [*RUN_FLAGS, *run_flags])
                         for i in range(n)]
        env.sidecars.extend(self.replicas)
        self.monitor = Monitor(self.replicas, self.journal)

    def __enter__(self):
        self.monitor.start()
        for r in self.replicas:
            r.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        if self.monitor.is_alive():
            self.monitor.finish()

    def leading_instance(self, timeout=D + P + 5, after=None):
        """The one running instance, once its journal record is in; with `after`, the first
        instance that started after it, running or already ended: the caller may have waited on
        `after`'s replica for longer than the next command runs (under ASan the leak check at
        exit holds a replica's exit back by over a second, and the crash scenario's command
        crashes 1 s after it starts). No two overlap: the Monitor's checks at the end say so."""
        def one():
            if after is not None:
                later = [i for i in self.monitor.all() if i.token is not None
                         and i.pid != after.pid and i.start > after.start]
                return later[0] if later else None
            running = [i for i in self.monitor.running() if i.token is not None]
            return running[0] if len(running) == 1 else None
        try:
            return wait_for("one running command", one, timeout)
        except Failure as e:
            # What the Monitor saw and whether it kept up: the cause of session 19's ASan
            # failure of `crash` (tests/README.md's flake table) is still open.
            raise Failure(f"{e}; {self.monitor.describe()}") from None

    def settled_leader(self, seconds=1.0):
        """The leading instance once it has run `seconds` more (its renewals under way): what a
        scenario then disturbs."""
        inst = self.leading_instance()
        time.sleep(seconds)
        return inst

    def stopped(self, inst, timeout):
        wait_for(f"{inst} to stop", lambda: inst.stop is not None, timeout)
        return inst

    def end(self, expected_codes=None):
        """SIGTERM to every live replica, their exit codes (checked against `expected_codes`,
        name -> code, for those given), then the common checks."""
        for r in self.replicas:
            if r.alive():
                r.signal(signal.SIGCONT)
                r.signal(signal.SIGTERM)
        codes = {r.name: r.exit_code(timeout=DRAIN_TIMEOUT + 10) for r in self.replicas}
        time.sleep(0.1)
        self.monitor.finish()
        log("exit codes:", codes)
        for name, code in (expected_codes or {}).items():
            check(codes[name] == code, f"{name} exited {codes[name]}, expected {code}")
        self.check_safety()
        return codes

    # ---- the checks every scenario ends with -------------------------------------------------
    def check_safety(self):
        instances = self.monitor.all()
        log("instances:", instances)
        failures = command_failures(instances, self.store_path, TOLERANCE)
        check(not failures, "; ".join(failures))


__all__ = ["AT_ONCE", "DRAIN_TIMEOUT", "KILL_GRACE", "RUN_FLAGS", "TOLERANCE", "RunCluster",
           "RunCommand", "RunReplica"]
