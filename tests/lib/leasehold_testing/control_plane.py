"""ControlPlane: the one wrapper of tests/realkube/start.sh (kube-apiserver + etcd)."""
import http.client
import json
import os
import signal
import ssl
import subprocess
import tempfile
import time
import urllib.parse
from pathlib import Path

from .audit_log import AuditLog
from .checks import Failure, check, log, wait_for
from .paths import ROOT

START_SH = ROOT / "tests/realkube/start.sh"
COMPONENTS = ("apiserver", "apiserver2", "etcd")


class ControlPlane:
    """tests/realkube/start.sh in a temp dir: etcd and one kube-apiserver (two with ha=True,
    both on the one etcd), RBAC on, an admin token and an audit log. The one wrapper of start.sh
    that every suite uses (integration, chaos, bench, deploy, golden capture).

    flags: more kube-apiserver flags. bind: the address the API listens on (default loopback;
    deploy.image binds a docker network's gateway, which the serving certificate then covers).
    directory + reuse: attach to a plane that `start.sh up DIR` already started (not stopped on
    exit). node=True: a single-node cluster (`start.sh up DIR --node`: a real kubelet,
    containerd, kube-controller-manager, kube-scheduler, kube-proxy; the API on the node's
    bridge address), whose NODE_* lines are in env. Components are "apiserver", "apiserver2"
    and "etcd"; stop/start/restart go through start.sh (same flags and ports), pause/resume
    are SIGSTOP/SIGCONT."""

    def __init__(self, ha=False, flags=(), bind=None, directory=None, reuse=False,
                 kubectl="kubectl", node=False):
        self.ha = ha
        self.node = node
        self.flags = list(flags)
        self.bind = bind
        self.reuse = reuse
        self.kubectl_bin = kubectl
        self.tmp = None
        if directory is None:
            self.tmp = tempfile.TemporaryDirectory(prefix="leasehold-realkube-")
            directory = Path(self.tmp.name) / "cp"
        self.dir = Path(directory)
        self.vars = {}
        self.paused = set()
        self._ctx = None
        self.started = False
        self.starting = []  # (component, from, until): a kube-apiserver (re)starting

    def __enter__(self):
        self.up()
        return self

    def __exit__(self, *exc):
        self.down()

    @property
    def env(self):
        """start.sh's environment lines (APISERVER_URL, KUBECONFIG, AUDIT_LOG, ...)."""
        return self.vars

    def sh(self, *args, timeout=240):
        env = None
        if self.bind:
            env = dict(os.environ, REALKUBE_BIND=self.bind, REALKUBE_SANS=f"IP:{self.bind}")
        r = subprocess.run(["bash", str(START_SH), *map(str, args)], capture_output=True,
                           text=True, timeout=timeout, env=env)
        if r.returncode != 0:
            raise Failure(f"start.sh {' '.join(map(str, args))} exited {r.returncode}: "
                          f"{(r.stdout + r.stderr).strip()[-3000:]}")
        return r.stdout

    def up(self):
        t0 = time.monotonic()
        if self.reuse:
            env = self.dir / "env"
            check(env.is_file(), f"{env}: no control plane is up there (start.sh up {self.dir})")
            out = env.read_text()
        else:
            out = self.sh("up", self.dir, *(["--ha"] if self.ha else []),
                          *(["--node"] if self.node else []), *self.flags, timeout=300)
            self.started = True
        for line in out.splitlines():
            k, sep, v = line.partition("=")
            if sep and k.isupper():
                self.vars[k] = v
        self.ports = {"apiserver": int(self.vars["APISERVER_PORT"])}
        if "APISERVER2_PORT" in self.vars:
            self.ports["apiserver2"] = int(self.vars["APISERVER2_PORT"])
        self.url = self.vars["APISERVER_URL"]
        self.host = urllib.parse.urlsplit(self.url).hostname
        self.port = self.ports["apiserver"]
        self.ca = Path(self.vars["APISERVER_CA"])
        self.admin_token = self.vars["ADMIN_TOKEN"]
        self.admin_kubeconfig = Path(self.vars["KUBECONFIG"])
        self.audit = AuditLog(self.vars["AUDIT_LOG"])
        self.startup_seconds = time.monotonic() - t0
        log(f"real control plane {'found' if self.reuse else 'up'} in "
            f"{self.startup_seconds:.1f}s: {self.host} "
            f"{', '.join(f'{c} :{p}' for c, p in self.ports.items())}, {self.vars['ETCD_URL']}")

    def down(self):
        if self.started:
            for c in list(self.paused):
                self.resume(c)
            try:
                self.sh("down", self.dir, timeout=90)
            except (Failure, subprocess.TimeoutExpired) as e:
                log(f"start.sh down: {e}")
            self.started = False
        if self.tmp is not None:
            self.tmp.cleanup()

    def kubectl(self, *args, ok=True, input=None, timeout=60):
        """kubectl as admin; a non-zero exit is a Failure unless ok=False."""
        r = subprocess.run([self.kubectl_bin, "--kubeconfig", str(self.admin_kubeconfig),
                            "--cache-dir", str(self.dir / "kubecache"), *map(str, args)],
                           capture_output=True, text=True, input=input, timeout=timeout)
        if ok and r.returncode != 0:
            raise Failure(f"kubectl {' '.join(map(str, args))}: {r.stderr.strip()}")
        return r

    def can_i(self, namespace, service_account, verb, resource):
        """Whether SERVICE_ACCOUNT of NAMESPACE may VERB RESOURCE there (`kubectl auth can-i`
        as it): True or False."""
        r = self.kubectl("auth", "can-i", verb, resource, "-n", namespace,
                         f"--as=system:serviceaccount:{namespace}:{service_account}", ok=False)
        return r.stdout.strip() == "yes"

    def token(self, namespace, service_account, duration="2h"):
        """A TokenRequest token (creates the namespace and the ServiceAccount if missing)."""
        return self.sh("token", self.dir, namespace, service_account, duration).strip()

    def apiservers(self):
        return [c for c in ("apiserver", "apiserver2") if c in self.ports]

    def pid(self, component):
        return int((self.dir / f"{component}.pid").read_text())

    def pause(self, component):
        os.kill(self.pid(component), signal.SIGSTOP)
        self.paused.add(component)

    def resume(self, component):
        os.kill(self.pid(component), signal.SIGCONT)
        self.paused.discard(component)

    def stop(self, component):
        """kill -9 (left down)."""
        self.paused.discard(component)
        self.sh("stop", self.dir, component)

    def start(self, component):
        """Starts it again with the same flags and ports; returns once it is ready."""
        t0 = time.time()
        try:
            self.sh("start", self.dir, component)
        finally:
            self.starting.append((component, t0, time.time()))

    def restart(self, component, sig="TERM"):
        self.paused.discard(component)
        t0 = time.time()
        try:
            self.sh("restart", self.dir, component, sig)
        finally:
            self.starting.append((component, t0, time.time()))

    def was_starting(self, component, t, margin=1.0):
        """Whether `component` was being (re)started at wall time t. A kube-apiserver answers
        before its RBAC informers have synced, and refuses with 403 ("role ... not found")
        meanwhile; /readyz (which start.sh waits for) covers the sync."""
        return any(c == component and t0 <= t <= t1 + margin for c, t0, t1 in self.starting)

    def log_tail(self, component="apiserver", n=30):
        try:
            return "\n".join((self.dir / f"{component}.log").read_text(
                errors="replace").splitlines()[-n:])
        except FileNotFoundError:
            return ""

    def api(self, method, path, body=None, ok=(200, 201), component="apiserver", token=None,
            timeout=15, content_type="application/json"):
        """(status, parsed body) of one request as admin (or `token`) straight to a
        kube-apiserver; a status outside `ok` is a Failure (ok=None: any)."""
        if self._ctx is None:
            self._ctx = ssl.create_default_context(cafile=str(self.ca))
        conn = http.client.HTTPSConnection(self.host, self.ports[component], context=self._ctx,
                                           timeout=timeout)
        headers = {"Authorization": f"Bearer {token or self.admin_token}",
                   "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        try:
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            text = resp.read().decode()
        finally:
            conn.close()
        try:
            obj = json.loads(text)
        except ValueError:
            obj = text
        if ok is not None and resp.status not in ok:
            raise Failure(f"{method} {path} on {component}: {resp.status} {text[:500]}")
        return resp.status, obj

    def ready(self, component="apiserver"):
        try:
            return self.api("GET", "/readyz", ok=None, component=component, timeout=3)[0] == 200
        except OSError:
            return False

    def wait_ready(self, timeout=60):
        for c in self.apiservers():
            wait_for(f"{c} /readyz", lambda c=c: self.ready(c), timeout, interval=0.2)
