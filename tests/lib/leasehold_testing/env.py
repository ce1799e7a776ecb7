"""Env: the test API server (tests/apiserver) over TLS with sidecars, faults through its control
port."""
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from .checks import check
from .http_calls import http_request
from .kubeconfig import write_kubeconfig
from .sidecar_host import SidecarHost
from .timings import slack


class Env(SidecarHost):
    """A temp dir with a CA, a server certificate, tokens, the test API server and sidecars.

    Every user is an admin of the test server unless named in `restricted` (then the --rbac
    file decides). Faults, partitions and counters go through its control port; the methods
    partition/heal/cut_watches/reset_counters/rotate_token/use_rbac are the ones RealEnv has
    too, so a scenario written with them runs on both servers."""

    real = False
    # The first term's fencing token: the first sidecar creates the Lease (RealEnv's may exist
    # already, as the chart makes it).
    first_token = 0
    namespace = "default"

    def __init__(self, sidecar_bin, apiserver_bin, server_args=()):
        self.sidecar_bin = str(sidecar_bin)
        self.apiserver_bin = str(apiserver_bin)
        self.server_args = list(server_args)
        self.tmp = tempfile.TemporaryDirectory(prefix="leasehold-it-")
        self.dir = Path(self.tmp.name)
        self.processes = []
        self.sidecars = []
        self.tokens = {}  # user -> token
        self.server = None

    def __enter__(self):
        self.make_certs()
        self.add_user("admin", admin=True)
        self.start_server()
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close(exc_type is not None)

    def make_certs(self):
        d = self.dir
        self.openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                     "/CN=leasehold-it-ca", "-keyout", d / "ca.key", "-out", d / "ca.crt")
        self.openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=apiserver",
                     "-keyout", d / "server.key", "-out", d / "server.csr")
        (d / "server.ext").write_text(
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
            "extendedKeyUsage=serverAuth\n")
        self.openssl("x509", "-req", "-in", d / "server.csr", "-CA", d / "ca.crt", "-CAkey",
                     d / "ca.key", "-CAcreateserial", "-days", "2", "-extfile",
                     d / "server.ext", "-out", d / "server.crt")

    def add_user(self, user, admin=True, token=None):
        """Each sidecar gets its own user, so faults and counters can target one of them.
        Returns the token (`token`, if given)."""
        token = token or f"{user}-{os.urandom(8).hex()}"
        self.tokens[user] = token
        self.write_tokens()
        return token

    def write_tokens(self):
        lines = []
        for user, token in self.tokens.items():
            full = user if user == "admin" else f"system:serviceaccount:default:{user}"
            groups = "system:masters" if user in self.admins() else ""
            lines.append(f"{token},{full},,{groups}")
        path = self.dir / "tokens.csv"
        tmp = path.with_suffix(".tmp")
        tmp.write_text("\n".join(lines) + "\n")
        tmp.replace(path)
        if self.server is not None:
            self.control("POST", "/tokens/reload")

    def admins(self):
        return set(self.tokens) - getattr(self, "restricted", set())

    def start_server(self):
        self.server_log = open(self.dir / "apiserver.log", "ab")
        args = [self.apiserver_bin, "--port", "0", "--control-port", "0",
                "--tls-cert", str(self.dir / "server.crt"), "--tls-key",
                str(self.dir / "server.key"), "--token-file", str(self.dir / "tokens.csv"),
                *self.server_args]
        self.server = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.server_log)
        self.processes.append(self.server)
        first = self.server.stdout.readline().decode()
        check(first, "the test API server printed nothing")
        ports = json.loads(first)
        self.port, self.control_port = ports["port"], ports["controlPort"]
        self.url = f"https://127.0.0.1:{self.port}"

    def restart_server(self, extra_args):
        """Restarts the API server with more flags (empty store, same certificates and tokens)."""
        self.server.kill()
        self.server.wait()
        self.server_args = self.server_args + list(extra_args)
        self.start_server()

    @property
    def ca_path(self):
        return self.dir / "ca.crt"

    def control(self, method, path, body=None):
        code, text = http_request(self.control_port, method, path, body)
        check(code == 200, f"control {method} {path}: {code} {text}")
        return json.loads(text) if text else None

    def client_name(self, sidecar_name):
        return f"system:serviceaccount:default:{sidecar_name}"

    def kubeconfig_for(self, user, token_file=None):
        token = self.tokens.get(user) or self.add_user(user)
        return write_kubeconfig(self.dir / f"{user}.kubeconfig", self.url, self.dir / "ca.crt",
                                user, token=token, token_file=token_file)

    def kubectl(self, *args, check_rc=True):
        cfg = self.kubeconfig_for("admin")
        # A kubectl run takes well under a second; 30 s on release is for a loaded machine.
        r = subprocess.run(["kubectl", "--kubeconfig", str(cfg), "--cache-dir",
                            str(self.dir / "kubecache"), *args], capture_output=True, text=True,
                           timeout=slack(30))
        if check_rc:
            check(r.returncode == 0, f"kubectl {' '.join(args)} failed: {r.stderr}")
        return r.stdout

    def lease(self, name="demo"):
        out = self.kubectl("get", "lease", name, "-o", "json", "-n", "default")
        return json.loads(out)

    def counters(self):
        return self.control("GET", "/counters")

    # ---- the fault interface RealEnv shares --------------------------------------------------
    def reset_counters(self):
        self.control("POST", "/counters/reset")

    def partition(self, user):
        """Every request of `user` hangs, its watches freeze (until heal: then closed)."""
        self.control("POST", f"/partition?client={self.client_name(user)}")

    def heal(self, user):
        self.control("DELETE", f"/partition?client={self.client_name(user)}")

    def cut_watches(self, user=None):
        """Ends open watch streams abruptly (of one user, or everybody's)."""
        q = f"?client={self.client_name(user)}" if user else ""
        self.control("POST", f"/watches/cut{q}")

    def rotate_token(self, user, token_file=None):
        """A new token for `user`, written to `token_file` (if given); then the old one is
        refused from now on. Returns the new one."""
        token = f"rotated-{time.time_ns()}"
        if token_file:
            Path(token_file).write_text(token + "\n")
        self.tokens[user] = token
        self.write_tokens()
        return token

    def use_rbac(self, users, rbac_yaml):
        """`users` are no longer admins: the RBAC objects in `rbac_yaml` (namespace default)
        decide their requests. The test server loads them at start, so it restarts (empty)."""
        self.restricted = set(users)
        self.write_tokens()
        path = self.dir / "rbac.yaml"
        path.write_text(rbac_yaml)
        self.restart_server(["--rbac", str(path)])
