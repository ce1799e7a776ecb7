"""Real processes for integration tests: the test API server over TLS and several sidecars.

Python standard library only. Every process started here is killed when the Env closes, also on
failure. Timings are scaled (D=2s, R=1.5s, P=0.3s by default) so scenarios take seconds.
"""
import http.client
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
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


def http_get(port, path, timeout=1.0):
    """(status, body) or (0, error) when nothing answered."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
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
    def __init__(self, env, name, extra_args=(), user=None, kubeconfig=None, env_vars=None,
                 lease="demo"):
        self.env = env
        self.name = name
        self.port = free_port()
        self.probe_port = free_port()
        self.log_path = env.dir / f"{name}.log"
        self.kubeconfig = kubeconfig or env.kubeconfig_for(user or name)
        self.args = [env.sidecar_bin, "--lease-name", lease, "--lease-namespace", "default",
                     "--identity", name, "--kubeconfig", str(self.kubeconfig),
                     "--http-address", f"127.0.0.1:{self.port}",
                     "--probe-address", f"127.0.0.1:{self.probe_port}",
                     "--log-format", "json", *TIMINGS, *extra_args]
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


class Env:
    """A temp dir with a CA, a server certificate, tokens, the test API server and sidecars."""

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
        if exc_type is not None:
            self.dump_logs()
        self.tmp.cleanup()

    def dump_logs(self):
        for f in sorted(self.dir.glob("*.log")):
            text = f.read_text(errors="replace").splitlines()
            print(f"----- {f.name} (last 40 lines) -----")
            for line in text[-40:]:
                print(line)

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
        """Each sidecar gets its own user, so faults and counters can target one of them."""
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

    def control(self, method, path, body=None):
        code, text = http_request(self.control_port, method, path, body)
        check(code == 200, f"control {method} {path}: {code} {text}")
        return json.loads(text) if text else None

    def client_name(self, sidecar_name):
        return f"system:serviceaccount:default:{sidecar_name}"

    def kubeconfig_for(self, user, token_file=None):
        token = self.tokens.get(user) or self.add_user(user)
        path = self.dir / f"{user}.kubeconfig"
        auth = f"    tokenFile: {token_file}\n" if token_file else f"    token: {token}\n"
        path.write_text(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n"
            f"    server: {self.url}\n    certificate-authority: {self.dir / 'ca.crt'}\n"
            f"users:\n- name: {user}\n  user:\n{auth}"
            f"contexts:\n- name: test\n  context:\n    cluster: test\n    user: {user}\n"
            "    namespace: default\ncurrent-context: test\n")
        return path

    def sidecar(self, name, **kw):
        s = Sidecar(self, name, **kw)
        self.sidecars.append(s)
        return s

    def start_sidecars(self, n, **kw):
        out = [self.sidecar(f"replica-{i}", **kw) for i in range(n)]
        for s in out:
            s.start()
        return out

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


def run_scenarios(scenarios, server_args=None, with_env=True):
    """The command line every scenario file shares:

        FILE.py --sidecar BIN --apiserver BIN [--list] [NAME... | all]

    Each scenario gets a fresh Env (test API server with `server_args[name]`, or the function's
    `server_args` attribute), or, with with_env=False, the pair (sidecar, apiserver). Every
    scenario runs even after a failure; the exit code says whether any failed."""
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--sidecar", required=True)
    ap.add_argument("--apiserver", required=True)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    if args.list:
        print("\n".join(scenarios))
        return 0
    names = list(scenarios) if args.names in ([], ["all"]) else args.names
    failed = []
    for name in names:
        fn = scenarios[name]
        doc = (fn.__doc__ or "").strip().splitlines()
        log(f"=== {name}: {doc[0] if doc else ''}")
        t0 = time.monotonic()
        try:
            if with_env:
                extra = (server_args or {}).get(name, getattr(fn, "server_args", []))
                with Env(args.sidecar, args.apiserver, extra) as env:
                    fn(env)
            else:
                fn((args.sidecar, args.apiserver))
            log(f"PASS {name} ({time.monotonic() - t0:.1f}s)")
        except Exception as e:  # noqa: BLE001 - report every failure, then exit non-zero
            log(f"FAIL {name}: {type(e).__name__}: {e}")
            failed.append(name)
    return 1 if failed else 0
