"""SidecarHost: the part of Env and RealEnv that starts sidecars and ends every process."""
import signal
import subprocess

from .sidecar import Sidecar


class SidecarHost:
    """What Env and RealEnv share: the sidecars they start and the end of every process."""

    def sidecar(self, name, **kw):
        s = Sidecar(self, name, **kw)
        self.sidecars.append(s)
        return s

    def start_sidecars(self, n, **kw):
        out = [self.sidecar(f"replica-{i}", **kw) for i in range(n)]
        for s in out:
            s.start()
        return out

    def end_processes(self):
        for p in self.processes:
            if p.poll() is None:
                try:
                    p.send_signal(signal.SIGCONT)
                    p.kill()
                except OSError:
                    pass
        for p in self.processes:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass

    def dump_logs(self):
        for f in sorted(self.dir.glob("*.log")):
            text = f.read_text(errors="replace").splitlines()
            print(f"----- {f.name} (last 40 lines) -----")
            for line in text[-40:]:
                print(line)
