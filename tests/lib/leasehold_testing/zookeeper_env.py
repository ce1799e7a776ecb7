"""ZooKeeperEnv: a real ZooKeeper ensemble (Debian's zookeeper 3.8.0, one member or three) on
loopback, and the sidecars that run their election in it (`leasehold --store zookeeper`,
ZooKeeperSidecar); KazooElection runs kazoo's Election recipe beside them in a process of its own.

Every member is a QuorumPeerMain of /usr/share/java/zookeeper.jar with its own data dir, log and
config in the env's temp dir (copied on failure like Env's, keep_failed_dir). Timings follow the
sidecars': the tick is TICK (scaled), syncLimit SYNC_LIMIT, so a member cut off from its leader
stops answering within SERVER_LAG, the --zk-server-lag every sidecar here is given; the session
timeout the sidecars ask for (D) lies within the servers' [2, 40] ticks.

kazoo (Debian's python3-kazoo) is imported only by the processes this module starts with
Debian's interpreter (KAZOO_PYTHON), so the test itself may run under any python3."""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from .checks import check, wait_for
from .incarnation import Incarnated, clock_rate_env
from .member_process import MemberProcess
from .ports import free_port
from .sidecar import Sidecar
from .sidecar_host import SidecarHost
from .timings import D, P, R, TIMINGS, duration_flag, scaled, slack

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
# slf4j's simple logger, so that the members' logs say something (the package has no binding
# of its own: without one slf4j drops every line).
SLF4J_SIMPLE = Path("/usr/share/java/slf4j-simple.jar")
# A secureClientPort needs the Netty connection factory, whose codec and resolver jars the
# package's zookeeper.jar manifest does not name.
NETTY_JARS = [Path("/usr/share/java/netty-codec.jar"), Path("/usr/share/java/netty-resolver.jar")]
KAZOO_PYTHON = "/usr/bin/python3"
TICK = scaled(0.1)
SYNC_LIMIT = 4
# A follower cut off from its leader answers its clients until its read of the leader times
# out, tickTime x syncLimit, and its last report of their sessions may be a tick older.
SERVER_LAG = TICK * (SYNC_LIMIT + 1)
# The session timeout the sidecars here ask for and get: config::zkSessionTimeoutOf, D or
# R + L + P when that is longer (within the members' 2 to 40 ticks).
SESSION = max(D, R + SERVER_LAG + P)


def available():
    """Why the real ZooKeeper cannot run here, or None (scripts/install-deps.sh installs it)."""
    if not ZOOKEEPER_JAR.exists():
        return f"{ZOOKEEPER_JAR} is missing (Debian's zookeeper: scripts/install-deps.sh)"
    if subprocess.run(["java", "-version"], capture_output=True).returncode != 0:
        return "no java (default-jre-headless: scripts/install-deps.sh)"
    if subprocess.run([KAZOO_PYTHON, "-c", "import kazoo"], capture_output=True).returncode != 0:
        return f"{KAZOO_PYTHON} has no kazoo (python3-kazoo: scripts/install-deps.sh)"
    return None


def four_letter(port, word, timeout=None):
    """A four-letter command's answer from the member on `port` ("" when it does not answer)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout or slack(1)) as s:
            s.sendall(word.encode())
            chunks = []
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                chunks.append(chunk)
            return b"".join(chunks).decode(errors="replace")
    except OSError:
        return ""


class ZooKeeperMember(MemberProcess):
    """One member: start() (again after kill(): same data dir), signal() pauses it, mode() says
    leader, follower or standalone ("" while it does not serve)."""

    def __init__(self, env, myid, port, quorum_port, election_port):
        self.env, self.myid = env, myid
        self.name = f"zk{myid}"
        self.port, self.quorum_port, self.election_port = port, quorum_port, election_port
        self.address = f"127.0.0.1:{port}"
        self.secure_port = free_port() if env.tls else None
        self.secure_address = f"127.0.0.1:{self.secure_port}" if env.tls else None
        self.proc = None

    def write_config(self, servers):
        d = self.env.dir / self.name
        (d / "data").mkdir(parents=True, exist_ok=True)
        (d / "data" / "myid").write_text(f"{self.myid}\n")
        tick_ms = round(TICK * 1000)
        lines = [f"tickTime={tick_ms}", "initLimit=20", f"syncLimit={SYNC_LIMIT}",
                 f"dataDir={d / 'data'}", f"clientPort={self.port}",
                 "clientPortAddress=127.0.0.1", "admin.enableServer=false",
                 "4lw.commands.whitelist=ruok,srvr,mntr,cons",
                 f"minSessionTimeout={2 * tick_ms}", f"maxSessionTimeout={40 * tick_ms}",
                 "forceSync=no"]
        if len(servers) > 1:
            lines += [f"server.{m.myid}=127.0.0.1:{m.quorum_port}:{m.election_port}"
                      for m in servers]
        if self.env.tls:
            e = self.env.dir
            lines += ["serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
                      f"secureClientPort={self.secure_port}", "secureClientPortAddress=127.0.0.1",
                      f"ssl.keyStore.location={e / 'server-keystore.pem'}",
                      "ssl.keyStore.type=PEM", f"ssl.trustStore.location={e / 'ca.crt'}",
                      "ssl.trustStore.type=PEM", "ssl.clientAuth=none"]
        (d / "zoo.cfg").write_text("\n".join(lines) + "\n")

    def start(self):
        d = self.env.dir / self.name
        log_file = open(self.env.dir / f"{self.name}.log", "ab")
        classpath = [str(ZOOKEEPER_JAR)] + ([str(SLF4J_SIMPLE)] if SLF4J_SIMPLE.exists() else [])
        if self.env.tls:
            classpath += [str(j) for j in NETTY_JARS]
        self.proc = subprocess.Popen(
            ["java", "-Xms32m", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             "-Dorg.slf4j.simpleLogger.showDateTime=true",
             "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
             "-cp", ":".join(classpath),
             "org.apache.zookeeper.server.quorum.QuorumPeerMain", str(d / "zoo.cfg")],
            stdout=log_file, stderr=subprocess.STDOUT)
        log_file.close()
        self.env.processes.append(self.proc)
        return self

    def mode(self):
        check(self.proc is None or self.alive(),
              f"ZooKeeper {self.name} exited {self.proc and self.proc.returncode} "
              f"({self.name}.log)")
        for line in four_letter(self.port, "srvr").splitlines():
            if line.startswith("Mode: "):
                return line[len("Mode: "):].strip()
        return ""

    def wait_serving(self):
        # A JVM start and, with three members, a leader election: about 2 s here.
        wait_for(f"ZooKeeper {self.name} to serve", lambda: self.mode() != "", slack(30),
                 interval=0.1)



class ZooKeeperEnv(SidecarHost):
    """A temp dir, `members` ZooKeeper members on loopback and the sidecars started through it.
    The election path is /<lease> under the connect string's chroot (`chroot`, default none)."""

    namespace = "default"  # unused by the ZooKeeper store; Sidecar's constructor reads it

    def __init__(self, sidecar_bin, lease="demo", members=1, chroot="", tls=False):
        self.sidecar_bin = str(sidecar_bin)
        self.lease = lease
        self.chroot = chroot
        self.tls = tls
        self.tmp = tempfile.TemporaryDirectory(prefix="leasehold-zk-")
        self.dir = Path(self.tmp.name)
        self.processes = []
        self.sidecars = []
        self.members = [ZooKeeperMember(self, i + 1, free_port(), free_port(), free_port())
                        for i in range(members)]
        self.passwords = {}  # user -> password file

    def __enter__(self):
        try:
            why = available()
            check(why is None, f"no ZooKeeper: {why}")
            if self.tls:
                self.make_certs()
            for m in self.members:
                m.write_config(self.members)
            for m in self.members:
                m.start()
            for m in self.members:
                m.wait_serving()
        except BaseException:
            self.__exit__(Exception, None, None)
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close(exc_type is not None)

    def make_certs(self):
        """A CA, the members' certificate for 127.0.0.1 (a PEM key store: key, then
        certificate) and another CA that signed nothing here."""
        d = self.dir
        for name in ("ca", "other-ca"):
            self.openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                         f"/CN=leasehold-zk-{name}", "-keyout", d / f"{name}.key",
                         "-out", d / f"{name}.crt")
        self.openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=zookeeper",
                     "-keyout", d / "server.key", "-out", d / "server.csr")
        (d / "server.ext").write_text("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
                                      "extendedKeyUsage=serverAuth\n")
        self.openssl("x509", "-req", "-in", d / "server.csr", "-CA", d / "ca.crt", "-CAkey",
                     d / "ca.key", "-CAcreateserial", "-days", "2", "-extfile",
                     d / "server.ext", "-out", d / "server.crt")
        (d / "server-keystore.pem").write_text((d / "server.key").read_text() +
                                               (d / "server.crt").read_text())

    @property
    def secure_connect_string(self):
        return ",".join(m.secure_address for m in self.members) + self.chroot

    @property
    def connect_string(self):
        return ",".join(m.address for m in self.members) + self.chroot

    @property
    def path(self):
        """The election's path as the servers see it (chroot included)."""
        return f"{self.chroot}/{self.lease}"

    def server_version(self):
        """The members' version as `srvr` says it ("3.8.0"), "" when none answers."""
        for m in self.members:
            for line in four_letter(m.port, "srvr").splitlines():
                if line.startswith("Zookeeper version: "):
                    return line[len("Zookeeper version: "):].split("-")[0].strip()
        return ""

    def leader_member(self):
        """The member that leads the ensemble (or the standalone one), None while none does."""
        for m in self.members:
            if m.alive() and m.mode() in ("leader", "standalone"):
                return m
        return None

    def password_file(self, user, password):
        path = self.dir / f"{user}.password"
        path.write_text(password + "\n")
        self.passwords[user] = path
        return path

    # ---- the tree, through kazoo in a process of its own -----------------------------------
    def kazoo(self, script, timeout=None, auth=None):
        """Runs `script` (Python with `zk`, a started KazooClient, and `json`) under Debian's
        interpreter; returns what it printed as JSON."""
        prelude = ("import json, sys\nfrom kazoo.client import KazooClient\n"
                   f"zk = KazooClient({self.connect_string!r}"
                   + (f", auth_data=[('digest', {auth!r})]" if auth else "") + ")\n"
                   f"zk.start(timeout={slack(10)})\n")
        out = subprocess.run([KAZOO_PYTHON, "-c", prelude + script + "\nzk.stop()\n"],
                             capture_output=True, text=True, timeout=timeout or slack(30))
        check(out.returncode == 0, f"kazoo: {out.stderr.strip()[-2000:]}")
        return json.loads(out.stdout) if out.stdout.strip() else None

    def contenders(self, auth=None):
        """The election's nodes in queue order: [{"name", "data", "czxid"}] (kazoo's order: the
        sequence after __lock__)."""
        return self.kazoo(
            f"p = {self.lease_path()!r}\n"
            "import re\n"
            "names = zk.get_children(p) if zk.exists(p) else []\n"
            "found = [n for n in names if re.search(r'__lock__(-?\\d{10})$', n)]\n"
            "found.sort(key=lambda n: re.search(r'__lock__(-?\\d{10})$', n).group(1))\n"
            "out = []\n"
            "for n in found:\n"
            "    try:\n"
            "        data, stat = zk.get(p + '/' + n)\n"
            "    except Exception:\n"
            "        continue\n"
            "    out.append({'name': n, 'data': data.decode(), 'czxid': stat.czxid})\n"
            "print(json.dumps(out))\n", auth=auth)

    def lease_path(self):
        """The election's path as a client of the chroot sees it (kazoo is given the chroot)."""
        return f"/{self.lease}"

    # ---- sidecars -------------------------------------------------------------------------
    def sidecar(self, name, **kw):
        s = ZooKeeperSidecar(self, name, **kw)
        self.sidecars.append(s)
        return s

    def kazoo_election(self, identifier, **kw):
        """kazoo's Election on the env's path, in a process of its own, started."""
        return KazooElection(self, identifier, **kw).start()

    def dump_logs(self):
        super().dump_logs()
        print(f"----- contenders under {self.lease_path()} -----")
        try:
            print(self.contenders())
        except Exception as e:  # noqa: BLE001 - the ensemble may be gone; the logs say why
            print(f"(could not read them: {e})")


class ZooKeeperSidecar(Sidecar):
    """A `leasehold --store zookeeper` process of ZooKeeperEnv, with the env's servers, the
    scaled TIMINGS and --zk-server-lag SERVER_LAG (or `server_lag`). `servers` replaces the
    connect string, `user`/`password_file` add digest authentication."""

    def __init__(self, env, name, servers=None, user=None, password_file=None, extra_args=(),
                 lease=None, timings=None, log_path=None, env_vars=None, server_lag=SERVER_LAG):
        lease = lease or env.lease
        super().__init__(env, name, kubeconfig="/dev/null", lease=lease, timings=timings,
                         log_path=log_path, env_vars=env_vars)
        auth = []
        if user:
            auth = ["--zk-user", user, "--zk-password-file",
                    str(password_file or env.passwords[user])]
        self.args = [env.sidecar_bin, "--store", "zookeeper",
                     "--zk-servers", servers or env.connect_string,
                     "--zk-server-lag", duration_flag(server_lag),
                     "--lease-name", lease, "--identity", name, *auth,
                     "--http-address", f"127.0.0.1:{self.port}",
                     "--probe-address", f"127.0.0.1:{self.probe_port}",
                     "--log-format", "json", *(timings or TIMINGS), *extra_args]


class ZooKeeperIncarnation(Incarnated, ZooKeeperSidecar):
    """One `leasehold --store zookeeper` process of a chaos run (tests/chaos/zookeeper_scenario.py):
    the chaos bookkeeping of incarnation.Incarnation on a ZooKeeperSidecar. `servers`: the
    slot's own connect string, a proxy per member, so a fault through them hits this slot
    alone; `client` names the slot in the scenario's notes."""

    def __init__(self, env, slot, identity, gen, logdir, servers, rate=1.0):
        super().__init__(env, identity, servers=servers, env_vars=clock_rate_env(rate),
                         log_path=Path(logdir) / f"{identity}.g{gen}.log")
        self.incarnate(slot, identity, gen, rate, f"replica-{slot}")


KAZOO_ELECTION = r'''
import os, sys, threading, time
from kazoo.client import KazooClient
from kazoo.protocol.states import KazooState
servers, path, identifier, auth, hold = sys.argv[1:6]
zk = KazooClient(servers, auth_data=[("digest", auth)] if auth else None)
zk.start(timeout=30)
lost = threading.Event()
def listener(state):
    if state != KazooState.CONNECTED:
        lost.set()
zk.add_listener(listener)
def lead():
    print(f"elected {time.time():.6f}", flush=True)
    # Leads until told (SIGUSR1 ends the term) or until the connection is in doubt, as a
    # careful kazoo program does: a suspended session may be lost.
    deadline = time.monotonic() + float(hold)
    while time.monotonic() < deadline and not lost.is_set() and not stop.is_set():
        time.sleep(0.01)
    print(f"resigned {time.time():.6f}", flush=True)
stop = threading.Event()
import signal
signal.signal(signal.SIGUSR1, lambda *_: stop.set())
election = zk.Election(path, identifier)
while not lost.is_set():
    stop.clear()
    election.run(lead)
    if hold == "0":
        break
zk.stop()
'''


class KazooElection:
    """kazoo's Election(path, identifier) in a process of its own (Debian's python3-kazoo): it
    prints "elected T" and "resigned T" (time.time(), the clock the Observer stamps claims with) around
    each term; a term lasts `hold` seconds, or until SIGUSR1, or until its connection is in
    doubt. kill() is kill -9; signal() pauses it."""

    def __init__(self, env, identifier, hold=3600.0, auth=None):
        self.env, self.identifier = env, identifier
        self.log_path = env.dir / f"kazoo-{identifier}.log"
        self.args = [KAZOO_PYTHON, "-c", KAZOO_ELECTION, env.connect_string, env.lease_path(),
                     identifier, auth or "", str(hold)]
        self.proc = None

    def start(self):
        with open(self.log_path, "ab") as log_file:
            self.proc = subprocess.Popen(self.args, stdout=log_file, stderr=subprocess.STDOUT)
        self.env.processes.append(self.proc)
        return self

    def terms(self):
        """[(elected_at, resigned_at or None)] in order."""
        out = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            word, _, at = line.partition(" ")
            if word == "elected":
                out.append([float(at), None])
            elif word == "resigned" and out:
                out[-1][1] = float(at)
        return [tuple(t) for t in out]

    def leading(self):
        t = self.terms()
        return bool(t) and t[-1][1] is None and self.alive()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig):
        if self.alive():
            self.proc.send_signal(sig)

    def resign(self):
        self.signal(signal.SIGUSR1)

    def kill(self):
        if self.alive():
            self.proc.kill()
            self.proc.wait(timeout=slack(10))


if __name__ == "__main__":
    # A manual check: one member, its mode and an empty election.
    print(available() or "ZooKeeper and kazoo are here")
    with ZooKeeperEnv(os.environ.get("LEASEHOLD_BIN", "/bin/true")) as env:
        print(env.members[0].mode(), env.contenders())
    sys.exit(0)
