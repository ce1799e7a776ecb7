"""The stores the conformance suite (tests/conformance) runs every scenario on, behind one
interface: a Store starts sidecars in its store, cuts one off from it and heals it, says what
/leader reports of it, reads its own record of the holder, and carries the bounds that differ
from store to store. A scenario asks the Store, never which store it is.

    with STORES["etcd"](binaries) as store:      # binaries: a Binaries
        sidecars = store.start(3)
        ...

Adding a store is a class here (its env, the methods below, its bounds) and a line in STORES;
the scenarios, the conftest and the ctest entries (tests/conformance/CMakeLists.txt's list of
stores) do the rest.

Every bound is derived from D, R, P and slack() (timings). What each store's numbers are and why:

  first_leader        the first election of n fresh sidecars (the same everywhere so far)
  earliest_takeover   nobody may lead before this long after the holder's last renewal could have
                      been sent, measured from a kill -9 or a cut: its claim, and the store's
                      record of it, last D after that renewal, which came at most P before
  latest_takeover     somebody leads by then after a kill -9, a SIGSTOP or a cut
  handover            a SIGTERMed leader's successor leads within this of the signal
  follows_after_wake  a leader woken from SIGSTOP after 2 D names the new holder within this
  follows_after_heal  a cut-off leader, healed, names the new holder within this
  consecutive_tokens  each term's token is the last one's plus one (not only larger)
  holder_address      what /leader's holderAddress says of the holder (its POD_IP) where the
                      store records it, else None
"""
import os
import subprocess
from dataclasses import dataclass
from typing import Optional

from .checks import Failure, check, log
from .env import Env
from .etcd_env import EXPIRY_TAKEOVER, EtcdEnv
from .kubeconfig import write_kubeconfig
from .paths import ROOT
from .ports import free_port
from .real_env import RealEnv
from .scenario_runner import check_forbidden, namespace_for, shared_planes
from .tcp_proxy import TcpProxy
from .timings import D, P, R, duration_flag, slack
from .zookeeper_env import SERVER_LAG as ZK_SERVER_LAG
from .zookeeper_env import SESSION as ZK_SESSION
from .zookeeper_env import TICK as ZK_TICK
from .zookeeper_env import ZooKeeperEnv

DEBIAN_ETCD = "/opt/leasehold/debian-etcd/usr/bin/etcd"


@dataclass
class Binaries:
    """The programs the stores need (conftest's options; defaults: the release build, and as
    etcd_scenarios.py finds them: $ETCD_BIN replaces either etcd, $ETCDCTL_BIN etcdctl)."""
    sidecar: str = str(ROOT / "build/release/sidecar/leasehold")
    apiserver: str = str(ROOT / "build/release/tests/apiserver/leasehold-test-apiserver")
    etcd: str = str(ROOT / "build/realkube/bin/etcd")
    etcd34: str = DEBIAN_ETCD
    etcdctl: Optional[str] = str(ROOT / "build/etcdctl/etcdctl")


class Store:
    """What every store offers a scenario. Subclasses set `env` in __enter__ (the store's own
    env: for store-specific hooks only) and the bounds (the module's docstring)."""

    name = None                # the store's id in test names
    has_members = False        # a cluster whose size a scenario may ask for (members marker)
    members = None             # the size of that cluster
    lease_name = "demo"
    consecutive_tokens = False
    holder_address = None
    first_leader = D + P + slack(3)
    earliest_takeover = D - P

    def __init__(self, binaries, members=None, scenario="conformance"):
        self.binaries = binaries
        self.requested_members = members
        self.scenario = scenario  # the scenario's name, where the store names things after it

    # ---- life cycle -------------------------------------------------------------------------
    def __enter__(self):
        raise NotImplementedError

    def __exit__(self, exc_type, exc, tb):
        self.env.__exit__(exc_type, exc, tb)

    @property
    def dir(self):
        """The scenario's temp dir (kept on failure with the logs)."""
        return self.env.dir

    @property
    def sidecar_bin(self):
        return self.binaries.sidecar

    # ---- sidecars and faults -------------------------------------------------------------------
    def start(self, n=3, partitionable=False):
        """n sidecars replica-0..n-1 started (each answers /leader); `partitionable`: each
        reachable to partition()/heal() (where that needs a path of its own to the store)."""
        return self.env.start_sidecars(n)

    def partition(self, sidecar):
        """Every request of `sidecar` to the store hangs from now on, until heal()."""
        self.env.partition(sidecar.name)

    def heal(self, sidecar):
        self.env.heal(sidecar.name)

    # ---- what /leader and the store say -------------------------------------------------------
    @property
    def scope(self):
        """The fields /leader names the store with (where the lock lives), and their values."""
        raise NotImplementedError

    def first_token(self):
        """The first term's fencing token."""
        raise NotImplementedError

    def check_record(self, leader, sidecars):
        """The store's own record agrees with /leader: `leader` holds the lock."""
        raise NotImplementedError

    # ---- bad input ----------------------------------------------------------------------------
    def base_args(self):
        """Flags (after the binary) that make a complete command line for this store; the
        bad-input cases add one wrong flag to them."""
        raise NotImplementedError

    def unreachable(self, name):
        """A sidecar started against a store address where nothing listens; returns (sidecar,
        the words its warning must contain)."""
        raise NotImplementedError

    def bad_args(self):
        """Common bad input: (flags, what the message must name)."""
        bad_yaml = self.dir / "bad.yaml"
        bad_yaml.write_text("leaseName: x\nleaseDuraton: 15s\n")
        base = self.base_args()
        return [
            ([*base, "--bogus"], "--bogus"),
            ([*base, "--lease-duration", "fast"], "--lease-duration"),
            ([*base, "--lease-duration", "5s"], "--renew-deadline"),
            ([*base, "--config", str(bad_yaml)], "leaseDuraton"),
            ([*base, "--http-address", "nonsense"], "--http-address"),
        ]

    def run_bad(self, args, timeout=None):
        return subprocess.run([self.sidecar_bin, *args], capture_output=True, text=True,
                              timeout=timeout or slack(10))


# ---- Kubernetes: a Lease --------------------------------------------------------------------
class KubernetesStore(Store):
    """The test API server (Env) with each sidecar its own user, as scenarios.py uses it:
    partitions through its control port, one client at a time."""

    name = "kubernetes"
    consecutive_tokens = True
    holder_address = "127.0.0.1"  # the holder's annotations (POD_IP)
    latest_takeover = D + P + slack(3)
    # Through the watch: the release is seen at once.
    handover = slack(1.0)
    follows_after_wake = slack(1.0)
    follows_after_heal = slack(2.0)

    def __enter__(self):
        if self.requested_members:
            raise Failure(f"{self.name}: no cluster of members to size")
        self.env = Env(self.binaries.sidecar, self.binaries.apiserver).__enter__()
        return self

    @property
    def scope(self):
        return {"namespace": self.env.namespace}

    def first_token(self):
        return self.env.first_token

    def check_record(self, leader, sidecars):
        env = self.env
        out = env.kubectl("get", "leases", "-n", env.namespace)
        log("kubectl get leases:\n" + out)
        check("HOLDER" in out and leader.name in out, "kubectl get leases shows the holder")
        lease = env.lease(self.lease_name)
        check(lease["spec"]["holderIdentity"] == leader.name, f"lease: {lease['spec']}")
        check(lease["metadata"]["annotations"]["leasehold.io/holder-pod"] == leader.name,
              "holder-pod annotation")
        yaml_out = env.kubectl("get", "lease", self.lease_name, "-o", "yaml", "-n",
                               env.namespace)
        check(f"holderIdentity: {leader.name}" in yaml_out, "kubectl -o yaml shows the holder")

    def base_args(self):
        return ["--lease-name", "x", "--kubeconfig", str(self.env.kubeconfig_for("admin"))]

    def unreachable(self, name):
        dead = f"https://127.0.0.1:{free_port()}"  # nothing listens there
        kubeconfig = write_kubeconfig(self.dir / f"{name}.kubeconfig", dead, self.env.ca_path,
                                      name, token="unused")
        s = self.env.sidecar(name, kubeconfig=kubeconfig).start()
        return s, [f"127.0.0.1:{dead.rsplit(':', 1)[1]}", "no answer"]


class RealKubernetesStore(KubernetesStore):
    """The real kube-apiserver and etcd (RealEnv: a namespace of its own on the shared control
    plane, $LEASEHOLD_REAL_PLANE, or one of the run's; each sidecar its own ServiceAccount with
    the chart's Role, a TcpProxy each). A request the chart's RBAC refused fails the scenario."""

    name = "realkube"

    def __enter__(self):
        if self.requested_members:
            raise Failure(f"{self.name}: no cluster of members to size")
        plane = shared_planes().get(False)
        self.env = RealEnv(self.binaries.sidecar, plane=plane,
                           namespace=namespace_for(self.scenario)).__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is None:
                check_forbidden(self.env)
        except BaseException as e:
            self.env.__exit__(type(e), e, None)
            raise
        self.env.__exit__(exc_type, exc, tb)


class ProxiedStore(Store):
    """A store whose sidecars may each reach it through a TcpProxy of their own (to the first
    member), so that partition() cuts one sidecar alone. The subclass says how a sidecar is
    pointed at its proxy (sidecar_through) and sets self.proxies = {} in __enter__."""

    def sidecar_through(self, name, proxy):
        raise NotImplementedError

    def __exit__(self, exc_type, exc, tb):
        try:
            self.env.__exit__(exc_type, exc, tb)
        finally:
            for p in self.proxies.values():
                p.close()

    def start(self, n=3, partitionable=False):
        if not partitionable:
            return self.env.start_sidecars(n)
        sidecars = []
        for i in range(n):
            name = f"replica-{i}"
            self.proxies[name] = TcpProxy(self.env.members[0].port, name=f"proxy-{i}")
            sidecars.append(self.sidecar_through(name, self.proxies[name]))
        for s in sidecars:
            s.start()
        return sidecars

    def partition(self, sidecar):
        check(sidecar.name in self.proxies,
              f"{sidecar.name} was not started partitionable (start(partitionable=True))")
        self.proxies[sidecar.name].partition()

    def heal(self, sidecar):
        self.proxies[sidecar.name].heal()


# ---- etcd: keys with leases under the election's prefix ----------------------------------------
class EtcdStore(ProxiedStore):
    """A real etcd (EtcdEnv: TLS, client certificates, auth, the least-privilege user lh), one
    member unless the scenario asks for more (conftest's `members` marker). Partitions go
    through a TcpProxy per sidecar (start(partitionable=True)). `expect_version`: fail unless
    the binary is that release (etcd34: $ETCD_BIN must not turn it into a test of another)."""

    name = "etcd"
    has_members = True
    expect_version = None
    # The lease expires D after its last keep-alive; etcd's lessor revokes it up to its 0.5 s
    # scan later, then the deletion's watch event and the next key's range.
    latest_takeover = EXPIRY_TAKEOVER
    # The revoke deletes the key at once; the next candidate's watch sees it: no expiry.
    handover = P + slack(0.5)
    # It finds its lease gone and campaigns again, behind the new leader (on a starved machine
    # the new leader's own renewal may lapse meanwhile: the sampler still holds every claim to
    # account).
    follows_after_wake = EXPIRY_TAKEOVER
    follows_after_heal = R + P + slack(2)

    def etcd_bin(self):
        return os.environ.get("ETCD_BIN") or self.binaries.etcd

    def __enter__(self):
        etcd = self.etcd_bin()
        check(etcd and os.access(etcd, os.X_OK), f"no etcd binary at {etcd!r}: build it with "
              "tests/realkube/build.sh (or set $ETCD_BIN)")
        etcdctl = os.environ.get("ETCDCTL_BIN") or self.binaries.etcdctl
        self.members = self.requested_members or 1
        self.proxies = {}
        self.env = EtcdEnv(self.binaries.sidecar, etcd, members=self.members,
                           etcdctl_bin=etcdctl).__enter__()
        try:
            version = ".".join(map(str, self.env.server_version()))
            log(f"etcd {version}, {self.members} member(s)")
            if self.expect_version:
                check(version.startswith(self.expect_version + "."),
                      f"{etcd} is etcd {version}, not {self.expect_version}")
        except BaseException as e:
            self.env.__exit__(type(e), e, None)
            raise
        return self

    def sidecar_through(self, name, proxy):
        return self.env.sidecar(name, endpoints=proxy.url)

    @property
    def scope(self):
        return {"store": "etcd"}

    def first_token(self):
        # The token is the leader key's create revision: the oldest key's under the prefix.
        keys = self.env.keys()
        check(keys, f"no key under {self.lease_name}/")
        return keys[0][1]

    def check_record(self, leader, sidecars):
        keys = self.env.keys()
        log(f"keys: {keys}")
        check(len(keys) == len(sidecars), f"one key per candidate under {self.lease_name}/: "
              f"{keys}")
        token = leader.status()["fencingToken"]
        check(token == keys[0][1], f"the token is the oldest key's create revision: {token} / "
              f"{keys}")
        check(all(lease != "0" for _, _, lease in keys), f"every key has a lease: {keys}")

    def base_args(self):
        d = self.env.dir
        return ["--store", "etcd", "--etcd-endpoints", ",".join(self.env.urls),
                "--lease-name", "x", "--etcd-cacert", str(d / "ca.crt"),
                "--etcd-cert", str(d / "client.crt"), "--etcd-key", str(d / "client.key"),
                "--etcd-user", "lh", "--etcd-password-file", str(self.env.passwords["lh"])]

    def unreachable(self, name):
        dead = f"https://127.0.0.1:{free_port()}"  # nothing listens there
        s = self.env.sidecar(name, endpoints=dead).start()
        return s, [dead, "no answer"]


class Etcd34Store(EtcdStore):
    """Debian's etcd-server 3.4.23, the oldest server tested (scripts/install-deps.sh unpacks it
    into /opt/leasehold/debian-etcd)."""

    name = "etcd34"
    expect_version = "3.4"

    def etcd_bin(self):
        return os.environ.get("ETCD_BIN") or self.binaries.etcd34


# ---- ZooKeeper: ephemeral-sequential nodes under the election's path -------------------------
class ZooKeeperStore(ProxiedStore):
    """Debian's ZooKeeper 3.8.0 (ZooKeeperEnv: one member unless the scenario asks for more),
    sidecars without credentials; partitions through a TcpProxy per sidecar
    (start(partitionable=True))."""

    name = "zookeeper"
    has_members = True
    # The servers expire a killed or cut-off leader's session SESSION after they last heard of
    # it (at most a request interval before the fault), up to a tick late, then the deletion's
    # watch event and one read.
    earliest_takeover = ZK_SESSION - P
    latest_takeover = ZK_SESSION + ZK_TICK + P + slack(1)
    # SIGTERM deletes the node: the next candidate's watch fires at once.
    handover = P + slack(0.5)
    # A leader paused or cut off past its session finds it expired (on its next connection: the
    # client reconnects within two thirds of the session timeout of silence, after a backoff of
    # up to 2 s) and queues again behind the new leader.
    follows_after_wake = ZK_SESSION + slack(3)
    follows_after_heal = ZK_SESSION + slack(4)

    def __enter__(self):
        self.members = self.requested_members or 1
        self.proxies = {}
        self.env = ZooKeeperEnv(self.binaries.sidecar, lease=self.lease_name,
                                members=self.members).__enter__()
        return self

    def sidecar_through(self, name, proxy):
        return self.env.sidecar(name, servers=f"127.0.0.1:{proxy.port}")

    @property
    def scope(self):
        return {"store": "zookeeper"}

    def first_token(self):
        nodes = self.env.contenders()
        check(nodes, f"no contender under {self.env.lease_path()}")
        return nodes[0]["czxid"]

    def check_record(self, leader, sidecars):
        nodes = self.env.contenders()
        log(f"nodes: {nodes}")
        check(len(nodes) == len(sidecars), f"one node per candidate: {nodes}")
        check(nodes[0]["data"] == leader.name, f"the lowest node is the leader's: {nodes}")
        token = leader.status()["fencingToken"]
        check(token == nodes[0]["czxid"], f"the token is the lowest node's czxid: {token} / "
              f"{nodes}")

    def base_args(self):
        return ["--store", "zookeeper", "--zk-servers", self.env.connect_string,
                "--zk-server-lag", duration_flag(ZK_SERVER_LAG), "--lease-name", "x"]

    def unreachable(self, name):
        dead = f"127.0.0.1:{free_port()}"  # nothing listens there
        s = self.env.sidecar(name, servers=dead).start()
        return s, [dead, "no server of the connect string answered"]


# The stores by name; conftest runs a scenario on those its --store options name.
STORES = {s.name: s for s in (KubernetesStore, EtcdStore, Etcd34Store, RealKubernetesStore,
                              ZooKeeperStore)}
DEFAULT_STORES = ["kubernetes", "etcd", "zookeeper"]

__all__ = ["Binaries", "DEFAULT_STORES", "STORES", "Store"]
