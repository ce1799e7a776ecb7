"""Incarnation: one sidecar *process* of a chaos, soak or leak run (a slot = one API
client/token, an identity, a generation). A restarted replica is a new incarnation, so claims are
never attributed to the wrong process."""
import signal
import subprocess
from pathlib import Path

from .ports import free_port as pick_port
from .sidecar import Sidecar


def port_collision(inc):
    """The process could not listen (a test-infrastructure race, not a sidecar failure)."""
    return inc.proc is not None and inc.proc.returncode == 2 and \
        "Address already in use" in inc.logs()


class Incarnation:
    """One sidecar process. `slot` picks the API user (its own token: faults and counters
    can address it), `identity` is --identity, `gen` counts restarts of the slot."""

    def __init__(self, env, slot, identity, gen, lease, logdir, rate=1.0, extra_args=(),
                 timings=None):
        env_vars = {}
        if rate != 1.0:
            env_vars = {"LEASEHOLD_TEST_HOOKS": "1", "LEASEHOLD_TEST_CLOCK_RATE": f"{rate:g}"}
        self.sc = Sidecar(env, identity, extra_args=extra_args, user=f"replica-{slot}",
                         lease=lease, env_vars=env_vars)
        self.sc.port, self.sc.probe_port = pick_port(), pick_port()
        a = self.sc.args
        a[a.index("--http-address") + 1] = f"127.0.0.1:{self.sc.port}"
        a[a.index("--probe-address") + 1] = f"127.0.0.1:{self.sc.probe_port}"
        if timings:  # replace the harness's scaled timings (soak uses D=1s)
            i = self.sc.args.index("--lease-duration")
            self.sc.args[i:i + 6] = timings
        self.sc.log_path = Path(logdir) / f"{identity}.g{gen}.log"
        self.env = env
        self.slot, self.identity, self.gen, self.rate = slot, identity, gen, rate
        self.label = f"{identity}#{gen}"
        self.client = env.client_name(f"replica-{slot}")
        self.stopped = False          # SIGSTOPped by us right now
        self.ended_by = None          # "kill" / "term" / "teardown": we ended it
        self.term_sent_at = None      # when we sent SIGTERM
        self.samples = []             # (t_start, t_end, status dict | None | {"exited": rc})
        self.latest = None            # last successful status
        self.logf = None

    @property
    def proc(self):
        return self.sc.proc

    @property
    def port(self):
        return self.sc.port

    def start(self):
        """Starts the process without waiting for it to serve (the sampler copes)."""
        self.logf = open(self.sc.log_path, "ab")
        self.sc.proc = subprocess.Popen(self.sc.args, stdout=self.logf, stderr=subprocess.STDOUT,
                                        env=self.sc.env_vars)
        self.env.processes.append(self.sc.proc)
        return self

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig):
        if self.alive():
            try:
                self.proc.send_signal(sig)
                return True
            except OSError:
                pass
        return False

    def kill(self, why):
        if self.alive():
            self.ended_by = self.ended_by or why
            self.signal(signal.SIGCONT)
            self.proc.kill()
        self.stopped = False

    def reap(self, timeout=5):
        if self.proc is None:
            return None
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        if self.proc in self.env.processes:
            self.env.processes.remove(self.proc)
        if self.logf:
            self.logf.close()
            self.logf = None
        return rc

    def is_leader(self):
        st = self.latest
        return bool(st and st.get("leader"))

    def logs(self):
        return self.sc.logs()
