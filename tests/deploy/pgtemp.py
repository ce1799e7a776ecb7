"""A throwaway PostgreSQL cluster for one test: initdb + pg_ctl in a temp dir, unix socket only.

    with TempPostgres() as pg:        # raises Unavailable when PostgreSQL is not installed
        subprocess.run(["psql", "-d", pg.conninfo, ...])

PostgreSQL refuses to run as root; as root the cluster runs as the `postgres` user (created by
Debian's package), else `nobody`. No TCP port is opened (listen_addresses=''), so parallel tests
cannot collide; the socket lives in the temp dir.
"""
import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path


class Unavailable(Exception):
    pass


def find_bindir():
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                  key=lambda d: int(d.split("/")[-2]) if d.split("/")[-2].isdigit() else 0)
    for d in reversed(dirs):
        if os.access(f"{d}/initdb", os.X_OK) and os.access(f"{d}/pg_ctl", os.X_OK):
            return Path(d)
    if shutil.which("initdb") and shutil.which("pg_ctl"):
        return Path(shutil.which("initdb")).parent
    raise Unavailable("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb); "
                      "scripts/install-deps.sh installs the Debian package 'postgresql'")


class TempPostgres:
    def __init__(self, user="leasehold"):
        self.bindir = find_bindir()
        if not shutil.which("psql"):
            raise Unavailable("psql is not installed (Debian: postgresql-client)")
        self.db_user = user
        self.run_as = None
        if os.geteuid() == 0:
            for name in ("postgres", "nobody"):
                try:
                    self.run_as = pwd.getpwnam(name)
                    break
                except KeyError:
                    continue
            if self.run_as is None:
                raise Unavailable("running as root and neither 'postgres' nor 'nobody' exists")

    def _run(self, *args, check=True):
        kw = {}
        if self.run_as is not None:
            kw = {"user": self.run_as.pw_uid, "group": self.run_as.pw_gid, "extra_groups": [],
                  "env": dict(os.environ, HOME=self.dir, USER=self.run_as.pw_name,
                              LC_ALL="C.UTF-8")}
        r = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=120,
                           cwd=self.dir, **kw)
        if check and r.returncode != 0:
            log = Path(self.dir, "postgres.log")
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"{args[0]} failed ({r.returncode}): {r.stdout}{r.stderr}{tail}")
        return r

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="leasehold-pg-")
        if self.run_as is not None:
            os.chown(self.dir, self.run_as.pw_uid, self.run_as.pw_gid)
        os.chmod(self.dir, 0o700)
        self.data = f"{self.dir}/data"
        try:
            t0 = time.monotonic()
            self._run(self.bindir / "initdb", "-D", self.data, "-U", self.db_user,
                      "--auth=trust", "--encoding=UTF8", "--no-sync", "--no-instructions")
            opts = (f"-k {self.dir} -c listen_addresses='' -p 5432 -c fsync=off "
                    "-c synchronous_commit=off -c full_page_writes=off")
            self._run(self.bindir / "pg_ctl", "-D", self.data, "-l", f"{self.dir}/postgres.log",
                      "-o", opts, "-w", "-t", "60", "start")
            self.started = time.monotonic() - t0
        except BaseException:
            self.__exit__(None, None, None)
            raise
        self.conninfo = f"host={self.dir} port=5432 dbname=postgres user={self.db_user}"
        return self

    def version(self):
        r = subprocess.run(["psql", "-X", "-tA", "-d", self.conninfo, "-c", "SHOW server_version"],
                           capture_output=True, text=True, timeout=30)
        return r.stdout.strip()

    def __exit__(self, *exc):
        if os.path.exists(f"{self.data}/postmaster.pid"):
            r = self._run(self.bindir / "pg_ctl", "-D", self.data, "-m", "immediate", "-w",
                          "-t", "20", "stop", check=False)
            if r.returncode != 0 and os.path.exists(f"{self.data}/postmaster.pid"):
                try:
                    pid = int(Path(self.data, "postmaster.pid").read_text().split()[0])
                    os.kill(pid, signal.SIGKILL)
                except (OSError, ValueError):
                    pass
        shutil.rmtree(self.dir, ignore_errors=True)
