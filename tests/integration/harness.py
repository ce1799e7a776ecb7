"""Real processes for integration tests: the test API server over TLS and several sidecars.

Python standard library only. Every process started here is killed when the Env closes, also on
failure. Timings are scaled (D=2s, R=1.5s, P=0.3s by default) so scenarios take seconds.
"""
import asyncio
import collections
import http.client
import json
import os
import random
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

HERE = Path(__file__).resolve().parent
D, R, P = 2.0, 1.5, 0.3
TIMINGS = ["--lease-duration", "2s", "--renew-deadline", "1500ms", "--retry-period", "300ms"]


def log(*args):
    print(f"[{time.strftime('%H:%M:%S')}]", *args, flush=True)


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


_PORTS_LOW = max(10000, _ephemeral_low() - 12000)
_PORTS = {"next": random.Random().randrange(_PORTS_LOW, _ephemeral_low())}
_PORTS_LOCK = threading.Lock()


def free_port():
    """A free port BELOW the ephemeral range, for a process we are about to start. Binding port
    0 would draw from the ephemeral range, which every outgoing connection also draws from: with
    samplers, kubectl and other tests running, one of them can take the port before the process
    binds it (seen in the chaos runs and in CI's bench.smoke: "cannot listen on ...: Address
    already in use", exit 2). Outside that range only another listener can collide. Ports are
    handed out in sequence from a random start, so one test never gets the same port twice
    (random picks did: the bench's 52 ports collided in about one run in ten), and two tests
    running side by side start far apart."""
    with _PORTS_LOCK:
        low, high = _PORTS_LOW, _ephemeral_low()
        for _ in range(high - low):
            port = low + (_PORTS["next"] - low) % (high - low)
            _PORTS["next"] = port + 1
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                    return port
                except OSError:
                    continue
    raise OSError(f"no free port in [{low}, {high})")


def http_get(port, path, timeout=1.0, host="127.0.0.1"):
    """(status, body) or (0, error) when nothing answered."""
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    except OSError as e:
        return 0, str(e)
    finally:
        conn.close()


def http_request(port, method, path, body=None, timeout=2.0, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
        conn.request(method, path, body=data, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()


class Failure(Exception):
    pass


def check(cond, message):
    if not cond:
        raise Failure(message)


def wait_for(what, fn, timeout, interval=0.02):
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise Failure(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


class Sidecar:
    """One leasehold process in the env's namespace, authenticating as `user` (default: its
    name). `timings` replaces the scaled TIMINGS (a list of the three flags and values)."""

    def __init__(self, env, name, extra_args=(), user=None, kubeconfig=None, env_vars=None,
                 lease="demo", timings=None):
        self.env = env
        self.name = name
        self.port = free_port()
        self.probe_port = free_port()
        self.log_path = env.dir / f"{name}.log"
        self.kubeconfig = kubeconfig or env.kubeconfig_for(user or name)
        self.args = [env.sidecar_bin, "--lease-name", lease, "--lease-namespace", env.namespace,
                     "--identity", name, "--kubeconfig", str(self.kubeconfig),
                     "--http-address", f"127.0.0.1:{self.port}",
                     "--probe-address", f"127.0.0.1:{self.probe_port}",
                     "--log-format", "json", *(timings or TIMINGS), *extra_args]
        self.env_vars = dict(os.environ, POD_NAME=name, POD_IP="127.0.0.1", **(env_vars or {}))
        self.proc = None

    def start(self):
        self.logf = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.args, stdout=self.logf, stderr=subprocess.STDOUT,
                                     env=self.env_vars)
        self.env.processes.append(self.proc)
        wait_for(f"{self.name} to serve /leader", lambda: self.status() is not None, 10)
        return self

    def status(self):
        code, body = http_get(self.port, "/leader", timeout=0.5)
        if code != 200:
            return None
        return json.loads(body)

    def leader(self):
        s = self.status()
        return bool(s and s["leader"])

    def signal(self, sig):
        self.proc.send_signal(sig)

    def wait(self, timeout=10):
        return self.proc.wait(timeout=timeout)

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


class Observer:
    """Samples every sidecar's /leader every ~10 ms and keeps claim intervals.

    One thread per sidecar, so a SIGSTOPped one (whose requests hang until their timeout)
    delays only its own samples. Each process a Sidecar runs is its own incarnation
    ("name#0", "name#1" after a restart): a restarted process's claims are checked against its
    previous life's like anybody else's.

    A claim is an answer leader=true with validUntil V to a request sent at t0 and answered at
    t1: the sidecar asserts leadership over [t0, V] (wall clock; all processes share this
    machine's clock). Two claims by different incarnations must never overlap: we check the
    claimed intervals, not only coincident samples, so a gap between samples cannot hide a
    double claim.
    """

    def __init__(self, sidecars, interval=0.01):
        self.interval = interval
        self.samples = []  # (t0, t1, incarnation, status dict or None or {"exited": rc})
        self.stop_event = threading.Event()
        self.threads = []
        self.generations = {}  # name -> [proc, ...] in start order
        self.exited = set()    # incarnations whose exit is recorded
        self.lock = threading.Lock()
        self.running = False
        self.sidecars = []
        for s in sidecars:
            self.add(s)

    def __enter__(self):
        self.running = True
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop_event.set()
        for t in self.threads:
            t.join()
        for s in self.sidecars:  # a last look, so exits that just happened are recorded
            self._record_exit(s)

    def add(self, sidecar):
        self.sidecars = self.sidecars + [sidecar]
        t = threading.Thread(target=self._sample, args=(sidecar,), daemon=True)
        self.threads.append(t)
        if self.running:
            t.start()

    def _label(self, sidecar, proc):
        with self.lock:
            procs = self.generations.setdefault(sidecar.name, [])
            if proc not in procs:
                procs.append(proc)
            return f"{sidecar.name}#{procs.index(proc)}"

    def _record_exit(self, sidecar):
        proc = sidecar.proc
        if proc is None or proc.poll() is None:
            return False
        label = self._label(sidecar, proc)
        with self.lock:
            if label in self.exited:
                return True
            self.exited.add(label)
            t = time.time()
            self.samples.append((t, t, label, {"exited": proc.returncode}))
        return True

    def _sample(self, sidecar):
        while not self.stop_event.is_set():
            proc = sidecar.proc
            if proc is not None and not self._record_exit(sidecar):
                t0 = time.time()
                st = sidecar.status()
                self.samples.append((t0, time.time(), self._label(sidecar, proc), st))
            self.stop_event.wait(self.interval)

    def answers(self):
        return [st for _, _, _, st in self.samples if st is not None and "exited" not in st]

    @staticmethod
    def _epoch(text):
        from datetime import datetime, timezone
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
            tzinfo=timezone.utc).timestamp()

    def terms(self):
        """Each incarnation's terms: [start, end, incarnation, token].

        start: the term's acquireTime (written by the holder when it sent the acquisition: its
        claim cannot begin earlier) or the first request that got leader=true, whichever is
        earlier. end: the largest validUntil it answered, unless it later answered leader=false
        or exited cleanly (a release): then the answer time of its last leader=true, before it
        stopped claiming. A killed process claims nothing once dead.
        """
        terms = []
        current = {}
        for t0, t1, name, st in sorted(self.samples, key=lambda x: x[0]):
            term = current.get(name)
            if st and st.get("leader"):
                token = st["fencingToken"]
                vu = self._epoch(st["validUntil"])
                if term and term[3] == token:
                    term[1] = max(term[1], vu)
                    term[4] = t1
                    continue
                start = min(t0, self._epoch(st["acquireTime"])) if st.get("acquireTime") else t0
                term = [start, vu, name, token, t1]
                current[name] = term
                terms.append(term)
            elif st is not None and "exited" in st and term:
                term[1] = min(term[1], term[4] if st["exited"] == 0 else t0)
                current.pop(name)
            elif st is not None and term:
                term[1] = min(term[1], term[4])  # answered false: it stopped before now
                current.pop(name)
        return [x[:4] for x in sorted(terms)]

    def check_safety(self):
        """No two incarnations claim at the same instant; tokens go up with each new term."""
        terms = self.terms()
        for i, b in enumerate(terms):
            for a in terms[:i]:
                if a[2] == b[2]:
                    continue
                check(b[0] >= a[1] - 0.001,  # validUntil is rounded to the microsecond
                      f"claims overlap: {a[2]} (token {a[3]}) claimed until {a[1]:.3f} but "
                      f"{b[2]} (token {b[3]}) from {b[0]:.3f}")
                check(b[3] > a[3], f"token did not go up: {a[2]}={a[3]} then {b[2]}={b[3]}")
        return terms

    def leaders_now(self):
        return [s for s in self.sidecars if s.alive() and s.leader()]


def write_kubeconfig(path, url, ca, user, token=None, token_file=None, namespace="default"):
    """A kubeconfig with one cluster, one user (a token, or a token file) and one context."""
    auth = f"    tokenFile: {token_file}\n" if token_file else f"    token: {token}\n"
    path.write_text(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n"
        f"    server: {url}\n    certificate-authority: {ca}\n"
        f"users:\n- name: {user}\n  user:\n{auth}"
        f"contexts:\n- name: test\n  context:\n    cluster: test\n    user: {user}\n"
        f"    namespace: {namespace}\ncurrent-context: test\n")
    return path


class _SidecarHost:
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


class Env(_SidecarHost):
    """A temp dir with a CA, a server certificate, tokens, the test API server and sidecars.

    Every user is an admin of the test server unless named in `restricted` (then the --rbac
    file decides). Faults, partitions and counters go through its control port; the methods
    partition/heal/cut_watches/reset_counters/rotate_token/use_rbac are the ones RealEnv has
    too, so a scenario written with them runs on both servers."""

    real = False
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
        self.end_processes()
        if exc_type is not None:
            self.dump_logs()
        self.tmp.cleanup()

    def openssl(self, *args):
        subprocess.run(["openssl", *args], check=True, capture_output=True)

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
        r = subprocess.run(["kubectl", "--kubeconfig", str(cfg), "--cache-dir",
                            str(self.dir / "kubecache"), *args], capture_output=True, text=True,
                           timeout=30)
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


# ---- the real control plane: kube-apiserver + etcd (tests/realkube) -------------------------

ROOT = HERE.parent.parent
START_SH = ROOT / "tests/realkube/start.sh"
COMPONENTS = ("apiserver", "apiserver2", "etcd")


class _ProxyLoop:
    """One asyncio loop, in a daemon thread, for every TcpProxy of the process."""
    _lock = threading.Lock()
    _loop = None

    @classmethod
    def get(cls):
        with cls._lock:
            if cls._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="tcp-proxies", daemon=True).start()
                cls._loop = loop
            return cls._loop

    @classmethod
    def run(cls, coro, timeout=10):
        return asyncio.run_coroutine_threadsafe(coro, cls.get()).result(timeout)

    @classmethod
    def call(cls, fn, *args):
        async def run():
            return fn(*args)
        return cls.run(run())


class _ProxyConn:
    def __init__(self, client_writer):
        self.cw, self.uw = client_writer, None
        self.queued = 0  # bytes from the client not yet delivered upstream
        self.aborted = False

    def abort(self):
        """RST both sides: SO_LINGER 0, then close."""
        if self.aborted:
            return
        self.aborted = True
        for w in (self.cw, self.uw):
            if w is None:
                continue
            try:
                w.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                                      struct.pack("ii", 1, 0))
            except (OSError, AttributeError):
                pass
            w.transport.abort()

    def close(self):
        for w in (self.cw, self.uw):
            if w is not None and not w.transport.is_closing():
                w.close()


class TcpProxy:
    """A loopback listener that forwards each connection to 127.0.0.1:upstream_port, bytes
    untouched: TLS passes through (the serving certificate covers 127.0.0.1, so a kubeconfig can
    name the proxy). RealEnv gives each sidecar user its own, so a fault hits exactly that
    client, the way the test server's control port addresses one client:

      partition()   nothing passes in either direction; open connections (and new ones) stay
                    open, like a cable pulled out (the test server: requests hang, watches freeze)
      heal()        the connections the partition held are reset (the client reconnects; what
                    they held is lost, as on the test server) and forwarding resumes
      reset()       RST every open connection now: a cut watch, a dropped request
      set_latency(seconds, direction)  every chunk that arrives from now on is delivered that
                    much later: "up" (requests land late), "down" (answers arrive late), "both"
      retarget(port)  new connections go elsewhere (the other kube-apiserver of the HA mode)
      in_flight()   bytes received from the client and not yet delivered (a delayed request)
    """

    def __init__(self, upstream_port, name="proxy"):
        self.name = name
        self.upstream_port = upstream_port
        self.latency = {"up": 0.0, "down": 0.0}
        self.partitioned = False
        self.conns = set()
        self.frozen = set()  # connections held by the current partition
        self.accepted = self.resets = self.refused = 0
        self.port = free_port()
        _ProxyLoop.get()
        self.server = _ProxyLoop.run(self._listen())

    async def _listen(self):
        self.flowing = asyncio.Event()
        self.flowing.set()
        return await asyncio.start_server(self._serve, "127.0.0.1", self.port, backlog=256)

    @property
    def url(self):
        return f"https://127.0.0.1:{self.port}"

    def partition(self):
        def f():
            self.partitioned = True
            self.flowing.clear()
            self.frozen |= self.conns
        _ProxyLoop.call(f)

    def heal(self):
        def f():
            for c in list(self.frozen):
                c.abort()
            self.frozen.clear()
            self.partitioned = False
            self.flowing.set()
        _ProxyLoop.call(f)

    def reset(self):
        """RSTs every open connection; returns how many."""
        def f():
            conns = list(self.conns)
            for c in conns:
                c.abort()
            self.resets += len(conns)
            return len(conns)
        return _ProxyLoop.call(f)

    def set_latency(self, seconds, direction="up"):
        def f():
            for d in (("up", "down") if direction == "both" else (direction,)):
                self.latency[d] = float(seconds)
        _ProxyLoop.call(f)

    def retarget(self, port):
        _ProxyLoop.call(setattr, self, "upstream_port", port)

    def in_flight(self):
        return _ProxyLoop.call(lambda: sum(c.queued for c in self.conns))

    def connections(self):
        return _ProxyLoop.call(lambda: len(self.conns))

    def close(self):
        async def stop():
            self.server.close()
            for c in list(self.conns):
                c.abort()
        try:
            _ProxyLoop.run(stop())
        except (RuntimeError, TimeoutError):
            pass

    async def _serve(self, reader, writer):
        conn = _ProxyConn(writer)
        self.conns.add(conn)
        self.accepted += 1
        if self.partitioned:
            self.frozen.add(conn)
        try:
            await self.flowing.wait()
            if conn.aborted:
                return
            try:
                up_reader, conn.uw = await asyncio.open_connection("127.0.0.1", self.upstream_port)
            except OSError:
                self.refused += 1  # the apiserver is down: the client sees a reset
                conn.abort()
                return
            if conn.aborted:  # reset while connecting
                conn.uw.transport.abort()
                return
            await asyncio.gather(self._pump(conn, reader, conn.uw, "up"),
                                 self._pump(conn, up_reader, writer, "down"))
        except Exception:  # noqa: BLE001 - one connection's trouble must not stop the proxy
            conn.abort()
        finally:
            conn.close()
            self.conns.discard(conn)
            self.frozen.discard(conn)

    async def _pump(self, conn, src, dst, direction):
        """src -> dst; each chunk leaves `latency` after it arrived, and only while not
        partitioned. A reset on one side resets the other; an end is passed on as an end."""
        loop = asyncio.get_running_loop()
        chunks = collections.deque()
        more = asyncio.Event()
        up = direction == "up"

        async def read():
            try:
                while True:
                    data = await src.read(65536)
                    if not data:
                        break
                    chunks.append((loop.time() + self.latency[direction], data))
                    if up:
                        conn.queued += len(data)
                    more.set()
            except (OSError, asyncio.IncompleteReadError):
                conn.abort()
            finally:
                chunks.append(None)
                more.set()

        reader = asyncio.ensure_future(read())
        try:
            while True:
                while not chunks:
                    more.clear()
                    await more.wait()
                item = chunks.popleft()
                if item is None:
                    if not conn.aborted and dst.can_write_eof() and not dst.is_closing():
                        dst.write_eof()
                    break
                at, data = item
                if at > loop.time():
                    await asyncio.sleep(at - loop.time())
                await self.flowing.wait()
                if conn.aborted:
                    break
                dst.write(data)
                if up:
                    conn.queued -= len(data)
                await dst.drain()
        except (OSError, RuntimeError):
            conn.abort()
        finally:
            reader.cancel()


class AuditLog:
    """kube-apiserver's audit log (JSON lines, level Metadata): user, verb, resource and code of
    every request. Offsets are byte positions: RealEnv remembers one to reset its counters."""

    def __init__(self, path):
        self.path = Path(path)

    def size(self):
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def events(self, since=0):
        """One event per request since `since`: a watch when it started streaming (or, if it
        never did, its refusal); anything else when it finished."""
        try:
            with open(self.path, "rb") as f:
                f.seek(since)
                data = f.read()
        except FileNotFoundError:
            return []
        out = []
        seen = set()
        for line in data[:data.rfind(b"\n") + 1].splitlines():
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("auditID") in seen:
                continue  # a watch's ResponseComplete after its ResponseStarted
            seen.add(e.get("auditID"))
            code = e.get("responseStatus", {}).get("code")
            if e.get("verb") == "watch":
                if e.get("stage") == "ResponseComplete" and code == 200:
                    continue  # the end of a watch that started before `since`
            elif e.get("stage") == "ResponseStarted":
                continue
            out.append(e)
        return out

    @staticmethod
    def counters_of(events, by_resource=False):
        """{user: {verb: n}} of resource requests, like the test server's /counters."""
        out = {}
        for e in events:
            ref = e.get("objectRef")
            if not ref or not ref.get("resource"):
                continue
            key = f"{e['verb']}:{ref['resource']}" if by_resource else e["verb"]
            verbs = out.setdefault(e["user"]["username"], {})
            verbs[key] = verbs.get(key, 0) + 1
        return out


class ControlPlane:
    """tests/realkube/start.sh in a temp dir: etcd and one kube-apiserver (two with ha=True,
    both on the one etcd), RBAC on, an admin token and an audit log. The one wrapper of start.sh
    that every suite uses (integration, chaos, bench, deploy, golden capture).

    flags: more kube-apiserver flags. bind: the address the API listens on (default loopback;
    deploy.image binds a docker network's gateway, which the serving certificate then covers).
    directory + reuse: attach to a plane that `start.sh up DIR` already started (not stopped on
    exit). Components are "apiserver", "apiserver2" and "etcd"; stop/start/restart go through
    start.sh (same flags and ports), pause/resume are SIGSTOP/SIGCONT."""

    def __init__(self, ha=False, flags=(), bind=None, directory=None, reuse=False,
                 kubectl="kubectl"):
        self.ha = ha
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
            out = self.sh("up", self.dir, *(["--ha"] if self.ha else []), *self.flags,
                          timeout=300)
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


_KIND_PATHS = {
    "Namespace": "/api/v1/namespaces",
    "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
    "Secret": "/api/v1/namespaces/{ns}/secrets",
    "Pod": "/api/v1/namespaces/{ns}/pods",
    "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
    "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
}


class RealEnv(_SidecarHost):
    """Env's interface on the real kube-apiserver: one namespace per RealEnv on a ControlPlane
    (its own, started and stopped with it, or a shared one).

    In the namespace: the ServiceAccount, Role and RoleBinding that `helm template` of
    charts/leasehold renders for this namespace and lease (leaseName, plus `chart_values`). Each
    sidecar user is a ServiceAccount of its own, bound to exactly that Role, with a TokenRequest
    token (bound to a Secret, so that rotate_token can revoke it). Its kubeconfig points at its
    own TcpProxy, which forwards to its apiserver (route(user, "apiserver2") in the HA mode):
    partitions, resets and latency are the proxy's. Counters come from the audit log;
    forbidden() lists every 403 a sidecar user got (run_scenarios fails a scenario on one).
    Users in use_rbac() get the given RBAC instead of the chart's."""

    real = True

    def __init__(self, sidecar_bin, plane=None, ha=False, namespace=None, lease="demo",
                 chart_values=None):
        self.sidecar_bin = str(sidecar_bin)
        self.own_plane = plane is None
        self.plane = plane or ControlPlane(ha=ha)
        self.namespace = namespace or f"it-{os.urandom(3).hex()}"
        self.lease_name = lease
        self.chart_values = dict(chart_values or {})
        self.tmp = tempfile.TemporaryDirectory(prefix="leasehold-real-")
        self.dir = Path(self.tmp.name)
        self.processes = []
        self.sidecars = []
        self.tokens = {}   # user -> its current token
        self.secrets = {}  # user -> the Secret its current token is bound to
        self.proxies = {}  # user -> TcpProxy
        self.routes = {}   # user -> "apiserver" | "apiserver2"
        self.custom_rbac = set()
        self.role_name = None
        self.rendered = []

    # ---- life cycle ----------------------------------------------------------------------
    def __enter__(self):
        try:
            if self.own_plane:
                self.plane.up()
            self.audit_start = self.counter_offset = self.plane.audit.size()
            self.tokens["admin"] = self.plane.admin_token
            self.setup_namespace()
        except BaseException:
            self.__exit__(*sys.exc_info())
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        self.end_processes()
        for p in self.proxies.values():
            p.close()
        if exc_type is not None:
            self.dump_logs()
            for e in self.forbidden()[:10]:
                print("403:", self.describe_event(e))
            for c in self.plane.apiservers():
                print(f"----- {c} log (last 15 lines) -----\n{self.plane.log_tail(c, 15)}")
        if self.own_plane:
            self.plane.down()
        self.tmp.cleanup()

    @property
    def url(self):
        return self.plane.url

    @property
    def port(self):
        return self.plane.port

    @property
    def ca_path(self):
        return self.plane.ca

    def create(self, obj, exist_ok=False):
        ns = obj["metadata"].get("namespace") or self.namespace
        path = _KIND_PATHS[obj["kind"]].format(ns=ns)
        code, body = self.plane.api("POST", path, obj, ok=None)
        if code == 409 and exist_ok:
            return self.plane.api("GET", f"{path}/{obj['metadata']['name']}")[1]
        check(code in (200, 201), f"create {obj['kind']} {obj['metadata']['name']}: {code} "
                                  f"{body}")
        return body

    def setup_namespace(self):
        ns = self.namespace
        self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        # Pods need the namespace's "default" ServiceAccount (no controller-manager makes it).
        self.create({"apiVersion": "v1", "kind": "ServiceAccount",
                     "metadata": {"name": "default", "namespace": ns}})
        sys.path.insert(0, str(ROOT / "tests/deploy"))
        import helmcmd  # tests/deploy/helmcmd.py: the one way the tests run helm
        values = dict({"fullnameOverride": "leasehold", "leaseName": self.lease_name},
                      **self.chart_values)
        docs = helmcmd.Helm().render(values, namespace=ns)
        self.rendered = [d for _, d in docs if d["kind"] in
                         ("ServiceAccount", "Role", "RoleBinding")]
        check([d["kind"] for d in self.rendered].count("Role") == 1,
              f"the chart rendered no single Role: {[d['kind'] for d in self.rendered]}")
        for d in self.rendered:
            self.create(d)
            if d["kind"] == "Role":
                self.role_name = d["metadata"]["name"]
                self.role = d

    # ---- users ---------------------------------------------------------------------------
    def client_name(self, user):
        return f"system:serviceaccount:{self.namespace}:{user}"

    def add_user(self, user, admin=False, token=None):
        """A ServiceAccount `user` bound to the chart's Role (unless use_rbac named it), and a
        TokenRequest token for it, which is returned. The real server mints tokens: `token`
        and `admin` are accepted for Env's signature and ignored (no sidecar is an admin)."""
        if user == "admin":
            return self.plane.admin_token
        self.create({"apiVersion": "v1", "kind": "ServiceAccount",
                     "metadata": {"name": user, "namespace": self.namespace}}, exist_ok=True)
        if user not in self.custom_rbac:
            self.create({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                         "metadata": {"name": f"{self.role_name}-sa-{user}",
                                      "namespace": self.namespace},
                         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                     "name": self.role_name},
                         "subjects": [{"kind": "ServiceAccount", "name": user,
                                       "namespace": self.namespace}]}, exist_ok=True)
            self.wait_allowed(user, "update", "leases", self.lease_name,
                              group="coordination.k8s.io")
        self.tokens[user] = self.issue_token(user)
        return self.tokens[user]

    def issue_token(self, user, seconds=7200):
        n = len([k for k in self.secrets.values() if k.startswith(f"{user}-token-")])
        secret = self.create({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                              "metadata": {"name": f"{user}-token-{n}-{os.urandom(2).hex()}",
                                           "namespace": self.namespace}})
        _, tr = self.plane.api(
            "POST", f"/api/v1/namespaces/{self.namespace}/serviceaccounts/{user}/token",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
             "spec": {"expirationSeconds": seconds,
                      "boundObjectRef": {"kind": "Secret", "apiVersion": "v1",
                                         "name": secret["metadata"]["name"],
                                         "uid": secret["metadata"]["uid"]}}})
        self.secrets[user] = secret["metadata"]["name"]
        return tr["status"]["token"]

    def authenticated(self, token, component="apiserver"):
        _, review = self.plane.api("POST", "/apis/authentication.k8s.io/v1/tokenreviews",
                                   {"apiVersion": "authentication.k8s.io/v1",
                                    "kind": "TokenReview", "spec": {"token": token}},
                                   component=component)
        return bool(review.get("status", {}).get("authenticated"))

    def rotate_token(self, user, token_file=None):
        """A new token (bound to a new Secret), written to `token_file` (if given); then the old
        one is revoked by deleting its Secret, and refused by every apiserver before this
        returns. Returns the new token."""
        old_token, old_secret = self.tokens[user], self.secrets[user]
        new = self.issue_token(user)
        if token_file:
            Path(token_file).write_text(new + "\n")
        self.plane.api("DELETE", f"/api/v1/namespaces/{self.namespace}/secrets/{old_secret}")
        for c in self.plane.apiservers():
            wait_for(f"{c} to refuse the revoked token",
                     lambda c=c: not self.authenticated(old_token, c), 10, interval=0.1)
        self.tokens[user] = new
        return new

    def wait_allowed(self, user, verb, resource, name=None, group=""):
        """Until every apiserver's RBAC authorizer (an informer: it lags the write) allows it."""
        attrs = {"namespace": self.namespace, "verb": verb, "group": group,
                 "resource": resource}
        if name:
            attrs["name"] = name
        sar = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
               "spec": {"user": self.client_name(user),
                        "groups": ["system:serviceaccounts",
                                   f"system:serviceaccounts:{self.namespace}",
                                   "system:authenticated"],
                        "resourceAttributes": attrs}}
        for c in self.plane.apiservers():
            wait_for(f"{c} to allow {user} to {verb} {resource}",
                     lambda c=c: self.plane.api(
                         "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", sar,
                         component=c)[1]["status"].get("allowed"), 10, interval=0.05)

    def use_rbac(self, users, rbac_yaml):
        """`users` get the RBAC objects of `rbac_yaml` (their namespace: this one) instead of
        the chart's Role. Call before their sidecars exist."""
        import yaml
        taken = set(users) & set(self.tokens)
        check(not taken, f"use_rbac: {sorted(taken)} already have the chart's Role")
        self.custom_rbac |= set(users)
        for doc in yaml.safe_load_all(rbac_yaml):
            if not doc:
                continue
            doc["metadata"]["namespace"] = self.namespace
            for sub in doc.get("subjects", []):
                sub["namespace"] = self.namespace
            self.create(doc)
            if doc["kind"] == "RoleBinding":  # in force on every apiserver before we go on
                role = next(d for d in yaml.safe_load_all(rbac_yaml)
                            if d and d["kind"] == "Role" and
                            d["metadata"]["name"] == doc["roleRef"]["name"])
                rule = role["rules"][0]
                for sub in doc.get("subjects", []):
                    self.wait_allowed(sub["name"], rule["verbs"][0], rule["resources"][0],
                                      (rule.get("resourceNames") or [None])[0],
                                      group=rule["apiGroups"][0])

    def create_pods(self, names):
        """Pod objects (never scheduled: no scheduler, no kubelet) for --pod-label to patch."""
        for n in names:
            self.create({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": n, "namespace": self.namespace},
                         "spec": {"automountServiceAccountToken": False,
                                  "containers": [{"name": "app",
                                                  "image": "registry.example.com/app:1"}]}})

    def kubeconfig_for(self, user, token_file=None):
        if user == "admin":
            return write_kubeconfig(self.dir / "admin.kubeconfig", self.plane.url,
                                    self.plane.ca, "admin", token=self.plane.admin_token,
                                    namespace=self.namespace)
        token = self.tokens.get(user) or self.add_user(user)
        return write_kubeconfig(self.dir / f"{user}.kubeconfig", self.proxy(user).url,
                                self.plane.ca, user, token=token, token_file=token_file,
                                namespace=self.namespace)

    # ---- proxies and faults ----------------------------------------------------------------
    def proxy(self, user):
        if user not in self.proxies:
            target = self.routes.get(user, "apiserver")
            self.proxies[user] = TcpProxy(self.plane.ports[target], name=user)
        return self.proxies[user]

    def route(self, user, component):
        """Sends `user`'s connections to that kube-apiserver (new ones; open ones stay)."""
        self.routes[user] = component
        if user in self.proxies:
            self.proxies[user].retarget(self.plane.ports[component])

    def users_on(self, component):
        return [u for u in self.proxies if self.routes.get(u, "apiserver") == component]

    def partition(self, user):
        self.proxy(user).partition()

    def heal(self, user):
        self.proxy(user).heal()

    def cut_watches(self, user=None):
        """Resets every connection of `user` (or of every user): the proxy cannot tell a watch
        from a renewal inside TLS, so this also drops whatever else was open."""
        for u in ([user] if user else list(self.proxies)):
            self.proxy(u).reset()

    def set_latency(self, user, seconds, direction="up"):
        self.proxy(user).set_latency(seconds, direction)

    def control(self, method, path, body=None):
        raise Failure(f"control {method} {path}: the real kube-apiserver has no control port "
                      "(HTTP-level faults need the test API server)")

    # ---- what the server saw ---------------------------------------------------------------
    def reset_counters(self):
        self.counter_offset = self.plane.audit.size()

    def counters(self, by_resource=False):
        return AuditLog.counters_of(self.plane.audit.events(self.counter_offset), by_resource)

    def sidecar_events(self, since=None):
        """Audit events of this namespace's ServiceAccounts since this env started."""
        prefix = f"system:serviceaccount:{self.namespace}:"
        return [e for e in self.plane.audit.events(self.audit_start if since is None else since)
                if e.get("user", {}).get("username", "").startswith(prefix)]

    def forbidden(self, include_starting=False):
        """403s of this namespace's ServiceAccounts. Unless include_starting, without those
        from a kube-apiserver that was (re)starting (see _unsynced), which starting_forbidden()
        lists."""
        out = [e for e in self.sidecar_events()
               if e.get("responseStatus", {}).get("code") == 403]
        return out if include_starting else [e for e in out if not self._unsynced(e)]

    def starting_forbidden(self):
        return [e for e in self.forbidden(include_starting=True) if self._unsynced(e)]

    def _unsynced(self, e):
        """Refused by a kube-apiserver that was (re)starting: it serves before its RBAC
        informers have synced, and meanwhile finds no binding (no reason given) or a binding
        without its Role ("... not found"). The same requests recur outside those windows, so a
        rule the chart lacks is still caught."""
        user = e["user"]["username"].rsplit(":", 1)[-1]
        t = Observer._epoch(e["requestReceivedTimestamp"])
        return self.plane.was_starting(self.routes.get(user, "apiserver"), t)

    @staticmethod
    def describe_event(e):
        ref = e.get("objectRef", {})
        return (f"{e['user']['username']} {e['verb']} {ref.get('resource')}"
                f"{'/' + ref['name'] if ref.get('name') else ''} -> "
                f"{e.get('responseStatus', {}).get('code')} ({e.get('requestURI')})")

    def kubectl(self, *args, check_rc=True):
        r = subprocess.run(["kubectl", "--kubeconfig", str(self.plane.admin_kubeconfig),
                            "--cache-dir", str(self.dir / "kubecache"), *args],
                           capture_output=True, text=True, timeout=30)
        if check_rc:
            check(r.returncode == 0, f"kubectl {' '.join(args)} failed: {r.stderr}")
        return r.stdout

    def lease(self, name="demo"):
        return self.plane.api(
            "GET", f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases/{name}")[1]


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


def real_options(needs_http=None, real_only=False, ha=False, chart_values=None,
                 allow_forbidden=False):
    """How a scenario runs with --real (function attributes read by run_scenarios):
      needs_http       why it needs the test server's HTTP-level faults: skipped with --real
      real_only        needs the real control plane: skipped without --real
      ha               runs on a control plane with two kube-apiservers (--ha)
      chart_values     extra `helm template` values for the Role (e.g. podLabel)
      allow_forbidden  403s are the point (an RBAC scenario): not a failure"""
    def mark(fn):
        fn.needs_http, fn.real_only, fn.ha = needs_http, real_only, ha
        fn.chart_values, fn.allow_forbidden = dict(chart_values or {}), allow_forbidden
        return fn
    return mark


def skip_reason(fn, real):
    if real and getattr(fn, "needs_http", None):
        return f"needs the test API server: {fn.needs_http}"
    if not real and getattr(fn, "real_only", False):
        return "needs the real kube-apiserver (--real)"
    return None


class _Planes:
    """--real: one control plane per kind (plain, HA) for the whole run, started on first use;
    each scenario gets a namespace of its own on it."""

    def __init__(self):
        self.planes = {}

    def get(self, ha):
        plane = self.planes.get(ha)
        if plane is not None and not all(plane.ready(c) for c in plane.apiservers()):
            log("the control plane is not ready after the last scenario: starting a new one")
            plane.down()
            plane = None
        if plane is None:
            plane = ControlPlane(ha=ha)
            self.planes[ha] = plane
            plane.up()
        return plane

    def close(self):
        for plane in self.planes.values():
            plane.down()


def _namespace_for(name):
    return (name.replace("_", "-")[:50] + "-" + os.urandom(2).hex()).lower()


def run_scenarios(scenarios, server_args=None, with_env=True):
    """The command line every scenario file shares:

        FILE.py --sidecar BIN (--apiserver BIN | --real) [--list] [NAME... | all]

    Each scenario gets a fresh Env (test API server with `server_args[name]`, or the function's
    `server_args` attribute), or, with with_env=False, the pair (sidecar, apiserver). With
    --real it gets a RealEnv instead: a namespace of its own on the real kube-apiserver and
    etcd (tests/realkube/start.sh, one control plane for the run), the chart's Role for each
    sidecar's ServiceAccount; a 403 for any sidecar fails the scenario. Scenarios marked
    needs_http (real_options) are skipped there, real_only ones without it; --list says which.
    Every scenario runs even after a failure; the exit code says whether any failed."""
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--sidecar", required=True)
    ap.add_argument("--apiserver", help="the test API server (not with --real)")
    ap.add_argument("--real", action="store_true",
                    help="run on the real kube-apiserver + etcd (build/realkube/bin)")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    if args.list:
        for name, fn in scenarios.items():
            notes = [f"--real: skipped ({fn.needs_http})" if getattr(fn, "needs_http", None)
                     else "", "real only" if getattr(fn, "real_only", False) else ""]
            notes = [n for n in notes if n]
            print(name + (f"\t[{'; '.join(notes)}]" if notes else ""))
        return 0
    if not args.real and not args.apiserver:
        ap.error("--apiserver is required (or --real)")
    if args.real and not with_env:
        ap.error("--real: these scenarios bring their own server")
    unknown = [n for n in args.names if n != "all" and n not in scenarios]
    if unknown:
        ap.error(f"unknown scenario(s) {unknown}; --list shows them")
    names = list(scenarios) if args.names in ([], ["all"]) else args.names
    failed = []
    planes = _Planes() if args.real else None
    try:
        for name in names:
            fn = scenarios[name]
            doc = (fn.__doc__ or "").strip().splitlines()
            why = skip_reason(fn, args.real)
            if why:
                log(f"SKIP {name}: {why}")
                continue
            log(f"=== {name}: {doc[0] if doc else ''}")
            t0 = time.monotonic()
            try:
                if args.real:
                    _run_real(fn, name, args.sidecar, planes)
                elif with_env:
                    extra = (server_args or {}).get(name, getattr(fn, "server_args", []))
                    with Env(args.sidecar, args.apiserver, extra) as env:
                        fn(env)
                else:
                    fn((args.sidecar, args.apiserver))
                log(f"PASS {name} ({time.monotonic() - t0:.1f}s)")
            except Exception as e:  # noqa: BLE001 - report every failure, then exit non-zero
                log(f"FAIL {name}: {type(e).__name__}: {e}")
                failed.append(name)
    finally:
        if planes:
            planes.close()
    return 1 if failed else 0


def _run_real(fn, name, sidecar_bin, planes):
    plane = planes.get(getattr(fn, "ha", False))
    with RealEnv(sidecar_bin, plane=plane, namespace=_namespace_for(name),
                 chart_values=getattr(fn, "chart_values", None)) as env:
        fn(env)
        # Every request the chart's RBAC refused fails the scenario (unless that is its point).
        time.sleep(0.2)  # the audit log is written as requests finish
        events = env.sidecar_events()
        denied = env.forbidden()
        starting = env.starting_forbidden()
        log(f"audit: {len(events)} requests by the sidecars' ServiceAccounts, "
            f"{len(denied)} forbidden (403)"
            + (f", {len(starting)} more from a kube-apiserver still starting (its RBAC "
               "cache not synced)" if starting else ""))
        if denied and not getattr(fn, "allow_forbidden", False):
            raise Failure(f"{len(denied)} request(s) refused by the chart's RBAC, first: "
                          + "; ".join(env.describe_event(e) for e in denied[:3]))
