"""The one port picker: ports for the processes the tests start (sidecars, proxies, nginx, and
tests/realkube/start.sh's kube-apiserver and etcd)."""
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
        low, high = _PORTS_LOW, ephemeral_low()
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
