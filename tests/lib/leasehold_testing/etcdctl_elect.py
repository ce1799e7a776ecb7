"""EtcdctlElect: `etcdctl elect NAME PROPOSAL` (a campaigner) or `etcdctl elect -l NAME` (an
observer) against an EtcdEnv, as the least-privilege user lh over TLS with the client
certificate, its output lines read as they come, each with the time it arrived.

A campaigner prints its key and proposal once etcd's election (client/v3/concurrency) made it the
leader, and holds its session's lease (TTL 60 s, etcdctl's default) until SIGINT or SIGTERM,
which resign: its key is deleted at once. An observer prints the leader's key and value at each
change of leader."""
import subprocess
import threading
import time

from .checks import wait_for


class EtcdctlElect:
    def __init__(self, env, etcdctl_bin, name, proposal=None, endpoints=None):
        d = env.dir
        password = env.passwords["lh"].read_text().strip()
        self.name = name
        self.proposal = proposal
        self.args = [str(etcdctl_bin), "--endpoints", endpoints or ",".join(env.urls),
                     "--cacert", str(d / "ca.crt"), "--cert", str(d / "client.crt"),
                     "--key", str(d / "client.key"), "--user", "lh", "--password", password,
                     "elect", *(["-l", env.lease] if proposal is None else [env.lease, proposal])]
        self.log_path = d / f"{name}.log"  # its output, each line after its arrival time
        self.lines = []  # (arrival time, line)
        self.lock = threading.Lock()
        self.proc = None
        self.env = env

    def start(self):
        with open(self.log_path.with_suffix(".stderr.log"), "ab") as stderr:
            self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=stderr,
                                         text=True)
        self.env.processes.append(self.proc)
        threading.Thread(target=self._read, daemon=True).start()
        return self

    def _read(self):
        with open(self.log_path, "a") as out:
            for line in self.proc.stdout:
                t = time.time()
                out.write(f"{t:.3f} {line}")
                out.flush()
                with self.lock:
                    self.lines.append((t, line.rstrip("\n")))

    def output(self):
        with self.lock:
            return list(self.lines)

    def elected_at(self):
        """When a campaigner printed its proposal (it leads from then on), else None."""
        for t, line in self.output():
            if line == self.proposal:
                return t
        return None

    def wait_elected(self, timeout):
        return wait_for(f"etcdctl {self.name} to be elected", self.elected_at, timeout)

    def leaders(self):
        """An observer's leaders' values in the order it printed them (each after its key)."""
        out = [line for _, line in self.output()]
        prefix = self.env.lease + "/"
        return [out[i + 1] for i, line in enumerate(out[:-1]) if line.startswith(prefix)]

    def wait_leader(self, value, timeout):
        """Waits until an observer's last printed leader is `value`."""
        return wait_for(f"etcdctl {self.name} to show {value} leading",
                        lambda: self.leaders()[-1:] == [value], timeout)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig, timeout):
        """Sends `sig`, returns the exit code."""
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=timeout)


__all__ = ["EtcdctlElect"]
