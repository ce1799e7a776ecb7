"""TcpProxy: a loopback TCP forwarder with partitions, resets and latency, so a fault on the
real kube-apiserver hits exactly one client."""
import asyncio
import collections
import socket
import struct
import threading

from .ports import free_port


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
