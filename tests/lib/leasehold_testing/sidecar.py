"""One leasehold process (the Sidecar wrapper every suite starts sidecars through), and the
wait for one leader that every sidecar agrees on."""
import json
import os
import signal
import subprocess
from pathlib import Path

from .checks import check, log, wait_for
from .http_calls import http_get
from .ports import free_port
from .timings import TIMINGS, slack


class Sidecar:
    """One leasehold process in the env's namespace, authenticating as `user` (default: its
    name); the one wrapper of a sidecar process every suite uses (subclasses replace `args`:
    the bench's client-go elector, the drop-in and manifest command lines; Incarnation adds a
    chaos run's bookkeeping). `timings` replaces the scaled TIMINGS (the three flags and their
    values); `log_path` is where its output goes (default: <env dir>/<name>.log)."""

    def __init__(self, env, name, extra_args=(), user=None, kubeconfig=None, env_vars=None,
                 lease="demo", timings=None, log_path=None):
        self.env = env
        self.name = name
        self.port = free_port()
        self.probe_port = free_port()
        self.log_path = Path(log_path) if log_path else env.dir / f"{name}.log"
        self.kubeconfig = kubeconfig or env.kubeconfig_for(user or name)
        self.args = [env.sidecar_bin, "--lease-name", lease, "--lease-namespace", env.namespace,
                     "--identity", name, "--kubeconfig", str(self.kubeconfig),
                     "--http-address", f"127.0.0.1:{self.port}",
                     "--probe-address", f"127.0.0.1:{self.probe_port}",
                     "--log-format", "json", *(timings or TIMINGS), *extra_args]
        # env_vars may replace POD_NAME (a process restarted in another's pod).
        self.env_vars = {**os.environ, "POD_NAME": name, "POD_IP": "127.0.0.1",
                         **(env_vars or {})}
        self.proc = None
        self.logf = None

    def start(self, wait=True):
        """Starts the process (again, after it ended: same ports and log); with wait, returns
        once it answers /leader (else at once: the chaos samplers cope with a process that does
        not answer yet)."""
        self.logf = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.args, stdout=self.logf, stderr=subprocess.STDOUT,
                                     env=self.env_vars)
        self.env.processes.append(self.proc)
        if wait:
            # exec, kubeconfig and the listeners: well under a second on release; 10 s there
            # for a loaded machine.
            wait_for(f"{self.name} to serve /leader", lambda: self.status() is not None,
                     slack(10))
        return self

    def status(self):
        code, body = http_get(self.port, "/leader", timeout=slack(0.5))  # the loop: ms
        if code != 200:
            return None
        return json.loads(body)

    def leader(self):
        s = self.status()
        return bool(s and s["leader"])

    def metrics(self, timeout=None):
        """GET /metrics on the probe port: the text, or "" when it did not answer 200
        (metrics.parse makes numbers of it)."""
        code, body = http_get(self.probe_port, "/metrics", timeout=timeout)
        return body if code == 200 else ""

    def signal(self, sig):
        """Sends `sig` if the process is alive; returns whether it was sent."""
        if self.alive():
            try:
                self.proc.send_signal(sig)
                return True
            except OSError:
                pass
        return False

    def kill(self):
        """kill -9 (a stopped process too)."""
        if self.alive():
            self.signal(signal.SIGCONT)
            self.proc.kill()

    def wait(self, timeout=10):
        return self.proc.wait(timeout=timeout)

    def reap(self, timeout=5):
        """Waits for the exit (kill -9 after `timeout`), forgets the process and closes its log;
        returns the exit code (None if it never started)."""
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

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def logs(self):
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def log_lines(self):
        out = []
        for line in self.logs().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                out.append({"raw": line})
        return out


def the_leader(sidecars, timeout):
    """Waits until exactly one live sidecar says leader and every live one names it as holder."""
    def one():
        live = [s for s in sidecars if s.alive()]
        states = [(s, s.status()) for s in live]
        leaders = [s for s, st in states if st and st["leader"]]
        if len(leaders) != 1:
            return None
        holder = leaders[0].name
        if all(st and st["holder"] == holder for _, st in states):
            return leaders[0]
        return None
    return wait_for("one leader that everybody agrees on", one, timeout)


def check_logged(sidecar, words, timeout):
    """Waits until a warning or error in `sidecar`'s log contains every one of `words`; returns
    that line."""
    def found():
        for line in sidecar.log_lines():
            text = json.dumps(line)
            if line.get("level") in ("warn", "error") and all(w in text for w in words):
                return text
        return None
    return wait_for(f"a warning of {sidecar.name} saying {words}", found, timeout)


def keeps_running_not_leading(sidecar, words, timeout):
    """`sidecar` runs on, says leader=false and logs a warning with every one of `words`."""
    line = check_logged(sidecar, words, timeout)
    check(sidecar.alive(), f"{sidecar.name} exited: {sidecar.logs()[-800:]}")
    st = sidecar.status()
    check(st is not None and not st["leader"], f"{sidecar.name} must not lead: {st}")
    log(f"{sidecar.name}: {line[:300]}")
