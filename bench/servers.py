"""The bench's API servers (the test API server, or the real kube-apiserver + etcd with a RealEnv
per Lease) and its contenders (leasehold in watch or poll mode, the client-go baseline)."""
import http.client
import json
import os
import ssl
import subprocess
import time
import urllib.parse

import settings
from leasehold_testing import (AuditLog, ControlPlane, Env, Failure, RealEnv, Sidecar,
                               write_kubeconfig)
from settings import CLIENTGO_EXTRA, REALKUBE_BIN, SIDECAR_EXTRA


# ----------------------------------------------------------------------------------------------
# Servers: where the Leases live, how the bench reads them and counts each replica's requests


def merge_patch_annotation(url, ca, token, path, key, value):
    """PATCH (JSON merge patch) of metadata.annotations[key] over a fresh HTTPS connection."""
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPSConnection(parts.hostname, parts.port, timeout=5,
                                       context=ssl.create_default_context(cafile=str(ca)))
    try:
        conn.request("PATCH", path, body=json.dumps(
            {"metadata": {"annotations": {key: value}}}).encode(), headers={
                "Authorization": f"Bearer {token}", "Accept": "application/json",
                "Content-Type": "application/merge-patch+json"})
        resp = conn.getresponse()
        text = resp.read()
    finally:
        conn.close()
    if resp.status != 200:
        raise Failure(f"PATCH {path}: {resp.status} {text[:300]!r}")
    return json.loads(text)


class TestServer:
    """One Env (the test API server) for every section; counters from its control port."""

    real = False

    def __init__(self, sidecar_bin, apiserver_bin):
        self.env = Env(sidecar_bin, apiserver_bin)

    def __enter__(self):
        self.env.__enter__()
        return self

    def __exit__(self, *exc):
        return self.env.__exit__(*exc)

    def env_for(self, lease, chart_values=None):
        return self.env

    def envs(self):
        return [self.env]

    def kubeconfig(self, env, user):
        return env.kubeconfig_for(user)

    def lease(self, env, name):
        return env.control("GET", f"/leases/default/{name}")

    def annotate(self, env, name, key, value):
        """Merge-patches one annotation onto the Lease as admin; returns when the API server
        has answered (the instant the request is written)."""
        return merge_patch_annotation(env.url, env.ca_path, env.tokens["admin"],
                                      f"/apis/coordination.k8s.io/v1/namespaces/default/leases/{name}",
                                      key, value)

    def reset_counters(self):
        self.env.control("DELETE", "/counters")

    def counters(self):
        """{client: {"verb:resource": n}} since the last reset."""
        return self.env.control("GET", "/counters?by=resource")

    def forbidden(self):
        return []

    def describe(self):
        return {"server": "test", "apiserver": self.env.apiserver_bin}


class RealServer:
    """kube-apiserver + etcd (ControlPlane: tests/realkube/start.sh) for the whole run,
    and a RealEnv per Lease on it: the chart's Role names one Lease, so each Lease gets
    a namespace of its own with that Role, and each replica a ServiceAccount bound to it with a
    TokenRequest token. Replicas talk to kube-apiserver directly (not through RealEnv's per-user
    TCP proxy: the bench injects no faults, and a Python proxy in this process would add its
    latency and CPU to every figure). Requests are counted from the audit log."""

    real = True

    def __init__(self, sidecar_bin, flags=()):
        self.sidecar_bin = sidecar_bin
        self.flags = list(flags)  # more kube-apiserver flags (recorded by describe)
        self.plane = ControlPlane(flags=flags)
        self.by_lease = {}
        self.offset = 0
        self.readers = {}
        self.ctx = None

    def __enter__(self):
        self.plane.up()
        return self

    def __exit__(self, *exc):
        try:
            for env in self.by_lease.values():
                env.__exit__(*exc)
            for r in self.readers.values():
                r.close()
        finally:
            self.plane.down()

    def env_for(self, lease, chart_values=None):
        """The env of `lease`, made on first use with the chart rendered with `chart_values`
        (the shards section: {"shards": 16}, the shard-mode Role)."""
        env = self.by_lease.get(lease)
        if env is None:
            ns = f"bench-{lease}-{os.urandom(2).hex()}".lower()[:63]
            env = RealEnv(self.sidecar_bin, plane=self.plane, namespace=ns, lease=lease,
                          chart_values=chart_values)
            env.__enter__()
            self.by_lease[lease] = env
        return env

    def envs(self):
        return list(self.by_lease.values())

    def kubeconfig(self, env, user):
        token = env.tokens.get(user) or env.add_user(user)
        return write_kubeconfig(env.dir / f"{user}.direct.kubeconfig", self.plane.url,
                                self.plane.ca, user, token=token, namespace=env.namespace)

    def lease(self, env, name):
        """GET of the Lease as admin over a kept-alive connection (read every ~10 ms during a
        failover: a TLS handshake per read would load the API server the replicas use)."""
        return self.get(f"/apis/coordination.k8s.io/v1/namespaces/{env.namespace}/leases/{name}",
                        env.namespace)

    def get(self, path, key):
        """GET `path` as admin over the kept-alive connection named `key`; the parsed body."""
        for attempt in (1, 2):
            conn = self.readers.get(key)
            if conn is None:
                if self.ctx is None:
                    self.ctx = ssl.create_default_context(cafile=str(self.plane.ca))
                conn = http.client.HTTPSConnection("127.0.0.1", self.plane.port,
                                                   context=self.ctx, timeout=5)
                self.readers[key] = conn
            try:
                conn.request("GET", path, headers={
                    "Authorization": f"Bearer {self.plane.admin_token}",
                    "Accept": "application/json"})
                resp = conn.getresponse()
                text = resp.read()
                if resp.status != 200:
                    raise Failure(f"GET {path}: {resp.status} {text[:300]!r}")
                return json.loads(text)
            except (OSError, http.client.HTTPException):
                conn.close()
                self.readers.pop(key, None)
                if attempt == 2:
                    raise
        return None

    def annotate(self, env, name, key, value):
        return merge_patch_annotation(
            self.plane.url, self.plane.ca, self.plane.admin_token,
            f"/apis/coordination.k8s.io/v1/namespaces/{env.namespace}/leases/{name}", key, value)

    def reset_counters(self):
        self.offset = self.plane.audit.size()

    def counters(self):
        """{user: {"verb:resource": n}} from the audit log since the last reset."""
        time.sleep(0.2)  # the audit log is written as requests finish
        return AuditLog.counters_of(self.plane.audit.events(self.offset), by_resource=True)

    def forbidden(self):
        return [RealEnv.describe_event(e) for env in self.envs()
                for e in env.forbidden()]

    def describe(self):
        _, version = self.plane.api("GET", "/version")
        etcd = subprocess.run([str(REALKUBE_BIN / "etcd"), "--version"], capture_output=True,
                              text=True).stdout.split("\n")[0]
        return {"server": "real", "kube_apiserver": version.get("gitVersion"), "etcd": etcd,
                "audit_log": str(self.plane.audit.path), "apiserver_flags": self.flags,
                "control_plane_start_s": round(self.plane.startup_seconds, 1)}


# ----------------------------------------------------------------------------------------------
# Contenders: leasehold (watch or poll followers) and the client-go baseline


class ClientGoElector(Sidecar):
    """bench/clientgo: client-go's LeaderElector with a LeaseLock behind a /leader answer. The
    Sidecar process wrapper does the rest (start, status, signal, wait, logs)."""

    def __init__(self, env, name, lease, kubeconfig, timings):
        super().__init__(env, name, lease=lease, kubeconfig=kubeconfig)
        self.args = [str(settings.CLIENTGO_BIN), "--lease-name", lease, "--lease-namespace",
                     getattr(env, "namespace", "default"), "--identity", name, "--kubeconfig",
                     str(self.kubeconfig), "--http-address", f"127.0.0.1:{self.port}", *timings,
                     *CLIENTGO_EXTRA]


def make_sidecar(server, env, name, lease, timings, mode, extra=(), kubeconfig=None,
                 env_vars=None):
    """A replica of `mode` (watch, poll: leasehold; client-go) with these timings, as the user
    `name` unless a kubeconfig is given (the scale section reuses one user per slot); env_vars:
    more of leasehold's environment (renew.py: its pod's)."""
    kubeconfig = kubeconfig or server.kubeconfig(env, name)
    if mode == "client-go":
        s = ClientGoElector(env, name, lease, kubeconfig, timings)
        env.sidecars.append(s)
        return s
    return env.sidecar(name, lease=lease, kubeconfig=kubeconfig, timings=timings,
                       extra_args=["--follower-mode", mode, *SIDECAR_EXTRA, *extra],
                       env_vars=env_vars)


def short(mode):
    return {"watch": "w", "poll": "p", "client-go": "c", "renew": "r"}[mode]
