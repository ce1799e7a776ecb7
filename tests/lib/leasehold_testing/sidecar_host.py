"""SidecarHost: the part of Env and RealEnv that starts sidecars and ends every process."""
import os
import shutil
import signal
import subprocess
from pathlib import Path

from .sidecar import Sidecar


# Where a failed scenario's directory is copied before it is deleted (unset: nowhere).
KEEP_VARIABLE = "LEASEHOLD_TEST_KEEP"


def keep_failed_dir(directory, keep_root=None):
    """Copies `directory` (a failed scenario's logs, journals, stores, certificates and test
    tokens) into $LEASEHOLD_TEST_KEEP (or `keep_root`) under its own name, so that a flake can
    be read after ctest has moved on. Returns the copy, or None when keeping is off."""
    root = keep_root if keep_root is not None else os.environ.get(KEEP_VARIABLE)
    if not root:
        return None
    target = Path(root) / Path(directory).name
    try:
        Path(root).mkdir(parents=True, exist_ok=True)
        shutil.copytree(directory, target, symlinks=True, ignore_dangling_symlinks=True,
                        dirs_exist_ok=True)
    except shutil.Error as e:  # sockets, files gone meanwhile: the rest is copied
        print(f"{KEEP_VARIABLE}: kept {directory} as {target} without {len(e.args[0])} file(s)")
        return target
    except OSError as e:  # a full disk must not hide the scenario's own failure
        print(f"{KEEP_VARIABLE}: could not keep {directory}: {e}")
        return None
    print(f"{KEEP_VARIABLE}: kept {directory} as {target}")
    return target


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

    def close(self, failed):
        """The end of an env whose processes and temp dir (`self.tmp`) are its own: every
        process ended, and on failure the logs' tails printed and the dir kept."""
        self.end_processes()
        if failed:
            self.dump_logs()
            keep_failed_dir(self.dir)
        self.tmp.cleanup()

    @staticmethod
    def openssl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True)

    def dump_logs(self):
        for f in sorted(self.dir.glob("*.log")):
            text = f.read_text(errors="replace").splitlines()
            print(f"----- {f.name} (last 40 lines) -----")
            for line in text[-40:]:
                print(line)
