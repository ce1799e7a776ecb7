"""The one port picker: ports for the processes the tests start (sidecars, proxies, nginx, and
tests/realkube/start.sh's kube-apiserver and etcd)."""
import collections
import fcntl
import os
import random
import socket
import threading


def ephemeral_low():
    """The first port of the kernel's ephemeral range (outgoing connections draw from it)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


_PORTS_LOW = max(10000, ephemeral_low() - 12000)
_PORTS = {"next": random.Random().randrange(_PORTS_LOW, ephemeral_low())}
_PORTS_LOCK = threading.Lock()
# Ports this process picked, each with an exclusive lock on a file named after it, so that no
# other test process picks it while its own process may not be listening yet (two chaos shards,
# or two ctest entries, walking the same stretch of ports: session 19's chaos.long had a sidecar
# fail with "Address already in use" that way). The most recent ones stay locked; by the time a
# port falls out, its process listens on it (or is gone), which the bind test sees.
_LOCK_DIR = "/tmp/leasehold-test-ports"
_HELD = collections.deque()
_HELD_MAX = 256


def _reserve(port):
    """Whether this process now holds `port`'s lock (False: another live process does)."""
    os.makedirs(_LOCK_DIR, exist_ok=True)
    fd = os.open(f"{_LOCK_DIR}/{port}", os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    _HELD.append(fd)
    while len(_HELD) > _HELD_MAX:
        os.close(_HELD.popleft())
    return True


def free_port():
    """A free port BELOW the ephemeral range, for a process we are about to start. Binding port
    0 would draw from the ephemeral range, which every outgoing connection also draws from: with
    samplers, kubectl and other tests running, one of them can take the port before the process
    binds it (seen in the chaos runs and in CI's bench.smoke: "cannot listen on ...: Address
    already in use", exit 2). Outside that range only another listener can collide. Ports are
    handed out in sequence from a random start, so one test never gets the same port twice
    (random picks did: the bench's 52 ports collided in about one run in ten), and two tests
    running side by side start far apart; a port another test process picked recently is
    skipped (its lock file, _reserve)."""
    with _PORTS_LOCK:
        low, high = _PORTS_LOW, ephemeral_low()
        for _ in range(high - low):
            port = low + (_PORTS["next"] - low) % (high - low)
            _PORTS["next"] = port + 1
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    continue
            if _reserve(port):
                return port
    raise OSError(f"no free port in [{low}, {high})")
