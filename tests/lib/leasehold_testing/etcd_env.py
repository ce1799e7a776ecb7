"""EtcdEnv: a real etcd cluster (one member, or three for the scenarios of a member's loss and of
quorum) over TLS with authentication on, and sidecars that run their election in it
(`leasehold --store etcd`, EtcdSidecar; EtcdctlElect: `etcdctl elect` beside them).

Each member (EtcdMember) listens on a free loopback port with a server certificate of its own CA
and asks every client for a certificate of that CA (--client-cert-auth); members talk to each
other over plain HTTP on loopback. Authentication is on: `root`
(the test's own requests: users, roles, a stray key) and `lh`, whose role may read and write the
election's prefix (`<lease>/` up to its prefix end) and nothing else, the least a sidecar needs
(docs/etcd-gateway.md). Passwords are in files, as the sidecar reads them. The member's and the
sidecars' logs are in the temp dir, which is copied on failure like Env's (keep_failed_dir)."""
import base64
import json
import os
import ssl
import subprocess
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from .checks import Failure, check, wait_for
from .etcdctl_elect import EtcdctlElect
from .incarnation import Incarnated, clock_rate_env
from .run_cluster import RunCommand
from .run_mode import run_args
from .shard_run_group import N as SHARD_RUN_N
from .shard_run_group import RUN_FLAGS as SHARD_RUN_FLAGS
from .member_process import MemberProcess
from .ports import free_port
from .sidecar import Sidecar
from .sidecar_host import SidecarHost
from .timings import TIMINGS, D, P, slack

# etcd's lessor looks for expired leases every 500 ms (lease/lessor.go, expiredLeaseRetryInterval
# and its revoke loop): a lease is revoked, and its key deleted, up to that long after its TTL.
ETCD_EXPIRY_SCAN = 0.5
# etcd's election timeout, as EtcdMember passes it (--election-timeout, etcd's default), with
# the heartbeat a tenth of it as etcd advises. A new raft leader extends every lease by this
# much before it counts down (lessor.Promote).
ELECTION_TIMEOUT = 1.0
HEARTBEAT = ELECTION_TIMEOUT / 10
# A takeover after the leader's lease expired: D after its last keep-alive (up to P before a kill
# or a cut) plus etcd's scan, the deletion's watch event and the next key's range.
EXPIRY_TAKEOVER = D + P + ETCD_EXPIRY_SCAN + slack(1)


def b64(text):
    return base64.b64encode(text.encode()).decode()


def prefix_end(prefix):
    """etcd's end of a prefix range: the prefix with its last byte plus one ("demo/" -> "demo0")."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


class EtcdEnv(SidecarHost):
    """A temp dir with a CA, certificates and password files, one etcd member (TLS, client
    certificates required, auth on) and the sidecars started through it (EtcdSidecar)."""

    namespace = "default"  # unused by the etcd store; Sidecar's constructor reads it

    def __init__(self, sidecar_bin, etcd_bin, lease="demo", members=1, etcdctl_bin=None):
        self.sidecar_bin = str(sidecar_bin)
        self.etcd_bin = str(etcd_bin)
        self.etcdctl_bin = etcdctl_bin
        self.lease = lease
        self.tmp = tempfile.TemporaryDirectory(prefix="leasehold-etcd-")
        self.dir = Path(self.tmp.name)
        self.processes = []
        self.sidecars = []
        self.passwords = {}  # user -> password file
        self.member_count = members
        self.members = []
        self.root_token = None

    def __enter__(self):
        try:
            self.make_certs()
            self.start_etcd()
            self.enable_auth()
        except BaseException:
            self.__exit__(Exception, None, None)
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close(exc_type is not None)

    # ---- certificates ---------------------------------------------------------------------
    def make_ca(self, name):
        d = self.dir
        self.openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                     f"/CN=leasehold-it-{name}", "-keyout", d / f"{name}.key",
                     "-out", d / f"{name}.crt")

    def make_cert(self, name, usage, san=None, ca="ca", common_name=True):
        d = self.dir
        subject = f"/CN={name}" if common_name else f"/O=leasehold-it-{name}"
        self.openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", subject,
                     "-keyout", d / f"{name}.key", "-out", d / f"{name}.csr")
        ext = (f"subjectAltName={san}\n" if san else "") + \
            f"basicConstraints=CA:FALSE\nextendedKeyUsage={usage}\n"
        (d / f"{name}.ext").write_text(ext)
        self.openssl("x509", "-req", "-in", d / f"{name}.csr", "-CA", d / f"{ca}.crt", "-CAkey",
                     d / f"{ca}.key", "-CAcreateserial", "-days", "2", "-extfile",
                     d / f"{name}.ext", "-out", d / f"{name}.crt")

    def make_certs(self):
        self.make_ca("ca")
        # No common name either: the gateway calls the member's gRPC server with this
        # certificate, and a request without a token would be taken as the user it names.
        self.make_cert("server", "serverAuth,clientAuth", san="IP:127.0.0.1", common_name=False)
        # No common name: with --client-cert-auth, etcd 3.6 answers every gateway request of a
        # client whose certificate has one with 400 "CommonName of client sending a request
        # against gateway will be ignored and not used as expected" (it cannot pass the name on
        # as the user); the sidecar authenticates with its password instead.
        self.make_cert("client", "clientAuth", common_name=False)
        self.make_ca("other-ca")  # a CA the member's certificate is not signed by

    @property
    def ca_path(self):
        return self.dir / "ca.crt"

    # ---- the members ----------------------------------------------------------------------
    def start_etcd(self):
        d = self.dir
        ports = [(free_port(), free_port()) for _ in range(self.member_count)]
        peers = ",".join(f"m{i}=http://127.0.0.1:{peer}" for i, (_, peer) in enumerate(ports))
        self.members = [EtcdMember(self, f"m{i}", port, peer, peers)
                        for i, (port, peer) in enumerate(ports)]
        self.urls = [m.url for m in self.members]
        self.url = self.urls[0]
        self.ssl = ssl.create_default_context(cafile=str(d / "ca.crt"))
        self.ssl.load_cert_chain(str(d / "client.crt"), str(d / "client.key"))
        for m in self.members:
            m.start()
        for m in self.members:
            m.wait_healthy()

    def live_url(self):
        """The first member that runs (the test's own requests go there)."""
        for m in self.members:
            if m.alive():
                return m.url
        raise Failure("no etcd member runs")

    def server_version(self):
        """The members' etcd version, from /version: (major, minor, patch)."""
        with urllib.request.urlopen(self.live_url() + "/version", context=self.ssl,
                                    timeout=slack(5)) as r:
            text = json.loads(r.read())["etcdserver"]
        return tuple(int(x) for x in text.split("-")[0].split("."))

    def raft_leader(self):
        """The member that leads etcd's raft, once every running member names it in
        maintenance/status (a leader only some name can still be deposed: on 3.4, without
        pre-vote, by a member at a higher term whose log is behind)."""
        def find():
            named, ids = set(), {}
            for m in self.members:
                if not m.alive():
                    continue
                try:
                    _, st = self.root("maintenance/status", {}, url=m.url)
                except Failure:
                    return None
                named.add(st.get("leader"))
                ids[st.get("header", {}).get("member_id")] = m
            leader = named.pop() if len(named) == 1 else None
            return ids.get(leader) if leader else None
        return wait_for("a raft leader among the etcd members", find, slack(10))

    def api(self, path, body, token=None, check_ok=True, url=None):
        """POST `body` (JSON) to a member's gateway at /v3/`path` (`url`, default the first live
        member); returns (status, answer)."""
        req = urllib.request.Request((url or self.live_url()) + "/v3/" + path,
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        if token:
            req.add_header("Authorization", token)
        try:
            with urllib.request.urlopen(req, context=self.ssl, timeout=slack(5)) as r:
                code, text = r.status, r.read()
        except urllib.error.HTTPError as e:
            code, text = e.code, e.read()
        try:
            answer = json.loads(text) if text else {}
        except ValueError:
            answer = {"raw": text.decode(errors="replace")}
        if check_ok:
            check(code == 200, f"etcd /v3/{path} {body}: {code} {answer}")
        return code, answer

    def root(self, path, body, check_ok=True, url=None):
        """A request as root (once auth is on)."""
        return self.api(path, body, token=self.root_token, check_ok=check_ok, url=url)

    # ---- users and roles ------------------------------------------------------------------
    def add_user(self, name, prefix=None):
        """A user with a password (in <dir>/<name>.password); with `prefix`, a role of its own
        with READWRITE on [prefix, prefix end) and nothing else. Returns the password file."""
        password = os.urandom(12).hex()
        path = self.dir / f"{name}.password"
        path.write_text(password + "\n")
        self.passwords[name] = path
        call = self.root if self.root_token else self.api
        call("auth/user/add", {"name": name, "password": password})
        if prefix is not None:
            role = f"{name}-role"
            call("auth/role/add", {"name": role})
            call("auth/role/grant",
                 {"name": role, "perm": {"permType": "READWRITE", "key": b64(prefix),
                                         "range_end": b64(prefix_end(prefix))}})
            call("auth/user/grant", {"user": name, "role": role})
        return path

    def enable_auth(self):
        """root (with the root role), lh on the election's prefix, then authentication on."""
        self.add_user("root")
        self.api("auth/user/grant", {"user": "root", "role": "root"})
        self.add_user("lh", prefix=f"{self.lease}/")
        self.api("auth/enable", {})
        password = self.passwords["root"].read_text().strip()
        _, answer = self.api("auth/authenticate", {"name": "root", "password": password})
        self.root_token = answer["token"]
        # Auth is on: a request without a token is refused.
        code, answer = self.api("kv/range", {"key": b64(f"{self.lease}/")}, check_ok=False)
        check(code != 200, f"etcd answered a request without a token with auth on: {answer}")

    def put(self, key, value):
        """Puts `key` as root, without a lease."""
        self.root("kv/put", {"key": b64(key), "value": b64(value)})

    def keys(self, prefix=None):
        """The keys under `prefix` (default: the election's), oldest create revision first:
        [(key, create revision, lease id)]."""
        prefix = prefix or f"{self.lease}/"
        _, answer = self.root("kv/range", {"key": b64(prefix), "range_end": b64(prefix_end(prefix)),
                                           "sort_order": "ASCEND", "sort_target": "CREATE"})
        return [(base64.b64decode(kv["key"]).decode(), int(kv["create_revision"]),
                 kv.get("lease", "0")) for kv in answer.get("kvs", [])]

    # ---- sidecars -------------------------------------------------------------------------
    def sidecar(self, name, **kw):
        s = EtcdSidecar(self, name, **kw)
        self.sidecars.append(s)
        return s

    def etcdctl(self, name, proposal=None, **kw):
        """`etcdctl elect` as lh, started: a campaigner for `proposal`, or an observer (-l)."""
        check(self.etcdctl_bin, f"{name}: no etcdctl binary (--etcdctl, tests/etcdctl/build.sh)")
        return EtcdctlElect(self, self.etcdctl_bin, name, proposal, **kw).start()

    def dump_logs(self):
        super().dump_logs()
        print(f"----- keys under {self.lease}/ -----")
        try:
            print(self.keys())
        except Exception as e:  # noqa: BLE001 - the member may be gone; the logs said why
            print(f"(could not read them: {e})")


class EtcdMember(MemberProcess):
    """One etcd member of EtcdEnv's cluster: client URL over TLS on loopback, peers over plain
    HTTP on loopback, its data dir and log in the env's dir. kill() and start() again (same data
    dir) restart it; signal() pauses it."""

    def __init__(self, env, name, port, peer_port, peers):
        self.env, self.name = env, name
        self.port = port
        self.url = f"https://127.0.0.1:{port}"
        self.peer_url = f"http://127.0.0.1:{peer_port}"
        self.peers = peers
        self.proc = None

    def start(self):
        d = self.env.dir
        log_file = open(d / f"etcd-{self.name}.log", "ab")
        self.proc = subprocess.Popen(
            [self.env.etcd_bin, "--name", self.name, "--data-dir", str(d / f"etcd-{self.name}"),
             "--listen-client-urls", self.url, "--advertise-client-urls", self.url,
             "--listen-peer-urls", self.peer_url, "--initial-advertise-peer-urls", self.peer_url,
             "--initial-cluster", self.peers, "--initial-cluster-token", d.name,
             "--unsafe-no-fsync",
             "--election-timeout", str(round(ELECTION_TIMEOUT * 1000)),
             "--heartbeat-interval", str(round(HEARTBEAT * 1000)),
             # bcrypt's cheapest cost: etcd hashes the password on every authenticate (cost 10
             # is tens of ms of CPU, seconds at nice 19 beside other tests: the sidecars' first
             # request outlived its R/2 deadline in one run). Not what is tested here.
             "--bcrypt-cost", "4",
             "--cert-file", str(d / "server.crt"), "--key-file", str(d / "server.key"),
             "--client-cert-auth", "--trusted-ca-file", str(d / "ca.crt")],
            stdout=log_file, stderr=subprocess.STDOUT)
        log_file.close()
        self.env.processes.append(self.proc)
        return self

    def healthy(self):
        check(self.alive(), f"etcd {self.name} exited {self.proc.returncode} "
              f"(etcd-{self.name}.log)")
        try:
            with urllib.request.urlopen(self.url + "/health", context=self.env.ssl,
                                        timeout=slack(1)) as r:
                return json.loads(r.read()).get("health") == "true"
        except (OSError, ValueError):
            return False

    def wait_healthy(self):
        # A member with --unsafe-no-fsync joins its cluster and has a raft leader in about a
        # second; 20 s on release is for a loaded machine.
        wait_for(f"etcd {self.name} to answer /health", self.healthy, slack(20), interval=0.1)



class EtcdSidecar(Sidecar):
    """A `leasehold --store etcd` process of EtcdEnv: its member over TLS with the client
    certificate, as user `user` (default lh) with that user's password file. `endpoints`,
    `cacert` and `password_file` replace the env's (bad-input cases); `timings` the TIMINGS
    flags; `env_vars` adds to its environment (the clock-rate test hook)."""

    def __init__(self, env, name, user="lh", endpoints=None, cacert=None, password_file=None,
                 extra_args=(), lease=None, timings=None, log_path=None, env_vars=None):
        lease = lease or env.lease
        super().__init__(env, name, kubeconfig="/dev/null", lease=lease, timings=timings,
                         log_path=log_path, env_vars=env_vars)
        d = env.dir
        password_file = password_file or env.passwords[user]
        self.args = [env.sidecar_bin, "--store", "etcd",
                     "--etcd-endpoints", endpoints or ",".join(env.urls),
                     "--lease-name", lease, "--identity", name,
                     "--etcd-cacert", str(cacert or d / "ca.crt"),
                     "--etcd-cert", str(d / "client.crt"), "--etcd-key", str(d / "client.key"),
                     "--etcd-user", user, "--etcd-password-file", str(password_file),
                     "--http-address", f"127.0.0.1:{self.port}",
                     "--probe-address", f"127.0.0.1:{self.probe_port}",
                     "--log-format", "json", *(timings or TIMINGS), *extra_args]


class EtcdIncarnation(Incarnated, EtcdSidecar):
    """One `leasehold --store etcd` process of a chaos run (tests/chaos/etcd_scenario.py): the
    chaos bookkeeping of incarnation.Incarnation on an EtcdSidecar as user lh. `endpoints`: the
    slot's own proxies, one per member, so a fault through them hits this slot alone; `client`
    names the slot in the scenario's notes."""

    def __init__(self, env, slot, identity, gen, logdir, endpoints, rate=1.0):
        super().__init__(env, identity, endpoints=endpoints, env_vars=clock_rate_env(rate),
                         log_path=Path(logdir) / f"{identity}.g{gen}.log")
        self.incarnate(slot, identity, gen, rate, f"replica-{slot}")


class EtcdRunReplica(RunCommand, EtcdSidecar):
    """`leasehold run --store etcd ... -- command` of EtcdEnv (run_cluster.RunCluster's replica
    on etcd)."""


class EtcdShardRunReplica(EtcdSidecar):
    """`leasehold run --store etcd --shards 8 ... -- command` of EtcdEnv (shard_run_group's
    ShardRunGroup replica on etcd): the group is the env's election name, shard i the election
    <lease>/shards/i."""

    def __init__(self, env, name, command, run_flags=()):
        super().__init__(env, name, extra_args=["--shards", str(SHARD_RUN_N)])
        self.args = run_args(self.args, [*SHARD_RUN_FLAGS, *run_flags], command)

    @staticmethod
    def lock(env, shard):
        """Shard i's LEASEHOLD_LEASE."""
        return f"{env.lease}/shards/{shard}"


def wait_gone(sidecar, timeout):
    """Waits for the process to exit; returns its exit code."""
    wait_for(f"{sidecar.name} to exit", lambda: not sidecar.alive(), timeout)
    return sidecar.reap()


__all__ = ["ELECTION_TIMEOUT", "ETCD_EXPIRY_SCAN", "EXPIRY_TAKEOVER", "EtcdEnv", "EtcdIncarnation",
           "EtcdMember", "EtcdRunReplica", "EtcdShardRunReplica", "EtcdSidecar", "prefix_end", "wait_gone"]
