"""OciRegistry: a local OCI registry for the release tests, with TLS from a test CA.

Debian's docker-registry (the distribution project's registry 2.8.2, scripts/install-deps.sh)
on a free loopback port, storage and certificates in a private temporary directory, no auth:

    with OciRegistry() as reg:
        subprocess.run([crane, "push", tar, f"{reg.host}/demo:1"], env=reg.env(), check=True)
        subprocess.run([helm, "push", chart, f"oci://{reg.host}/charts", "--ca-file",
                        str(reg.ca_file)], check=True)

Who trusts the test CA, and how:
  - Go programs (crane, syft, cosign, helm without --ca-file): reg.env(), whose SSL_CERT_FILE
    is the system's CAs plus the test CA (Go reads SSL_CERT_FILE on Linux). Without it they
    refuse the server ("x509: certificate signed by unknown authority"): testlib.oci_registry
    checks that.
  - helm: `--ca-file reg.ca_file` (or reg.env()).
  - Docker 20.10: /etc/docker/certs.d/HOST:PORT/ca.crt, written here and removed by stop(). But
    dockerd's default insecure-registries list is 127.0.0.0/8 (`docker info`), and for an
    insecure registry Docker skips the verification of the certificate: Docker 20.10 pushes to
    this registry without that file too (tried by hand). The file is what a registry at a
    non-loopback address would need.
  - containerd: without a registry config_path, containerd's default is
    "/etc/containerd/certs.d:/etc/docker/certs.d" (the first root holding a HOST:PORT folder
    wins); tests/realkube/node.sh's node sets its own, DIR/node/certs.d (NODE_REGISTRY_CONFIG
    in the node's env). For a loopback host without a hosts.toml,
    containerd v2.4.2 skips the verification as Docker does, even with a ca.crt of another CA
    in the folder (core/remotes/docker/config/hosts.go; tried by hand).
    write_containerd_hosts(DIR) writes DIR/HOST:PORT/hosts.toml naming the server by https and
    the CA: with it containerd verifies (testlib.oci_registry_containerd fetches through it and
    is refused with another CA). For the node's containerd: DIR = NODE_REGISTRY_CONFIG
    (NodeCluster.install_released_chart writes it there).
"""
import os
import shutil
import ssl
import subprocess
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from .checks import wait_for
from .ports import free_port

DEFAULT_REGISTRY = "/usr/bin/docker-registry"
DOCKER_CERTS = Path("/etc/docker/certs.d")
SYSTEM_CAS = Path("/etc/ssl/certs/ca-certificates.crt")


class OciRegistryError(Exception):
    pass


class OciRegistry:
    """One registry process. `with OciRegistry() as reg:` starts it and stops it; `.host` is
    "127.0.0.1:PORT", `.ca_file` the test CA's certificate, `.env()` the environment for Go
    tools, `.stop()` kills only this registry's process and removes what it wrote outside its
    temporary directory. `binary` defaults to $LEASEHOLD_DOCKER_REGISTRY, else
    /usr/bin/docker-registry. `docker_certs`: write /etc/docker/certs.d/HOST:PORT/ca.crt (and
    the same for localhost:PORT)."""

    def __init__(self, binary=None, docker_certs=True, start_timeout=30):
        self.binary = str(binary or os.environ.get("LEASEHOLD_DOCKER_REGISTRY")
                          or DEFAULT_REGISTRY)
        self.docker_certs = docker_certs
        self.start_timeout = start_timeout
        self.tmp = None
        self.dir = None
        self.proc = None
        self.port = None
        self.host = None
        self.ca_file = None
        self.bundle_file = None
        self.log_file = None
        self._written = []  # directories outside self.dir that stop() removes

    # ---- lifecycle ------------------------------------------------------------------------
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        self.stop()

    def start(self):
        if not os.access(self.binary, os.X_OK):
            raise OciRegistryError(
                f"no docker-registry at {self.binary} (scripts/install-deps.sh installs Debian's "
                "docker-registry; LEASEHOLD_DOCKER_REGISTRY names another)")
        self.tmp = tempfile.TemporaryDirectory(prefix="leasehold-registry-")
        self.dir = Path(self.tmp.name)
        try:
            self.port = free_port()
            self.host = f"127.0.0.1:{self.port}"
            self._make_certs()
            config = self._write_config()
            self.log_file = self.dir / "registry.log"
            with open(self.log_file, "ab") as log:
                self.proc = subprocess.Popen([self.binary, "serve", str(config)],
                                             stdin=subprocess.DEVNULL, stdout=log,
                                             stderr=subprocess.STDOUT)
            wait_for(f"the registry's /v2/ at https://{self.host}", self._answers,
                     self.start_timeout, interval=0.05)
            if self.docker_certs:
                for name in (self.host, f"localhost:{self.port}"):
                    d = DOCKER_CERTS / name
                    self._own_dir(d)
                    shutil.copyfile(self.ca_file, d / "ca.crt")
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self):
        """Kills this registry's process (its PID alone), removes the directories it wrote
        outside its own (certs.d entries) and its temporary directory. Idempotent."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.proc = None
        for d in reversed(self._written):
            shutil.rmtree(d, ignore_errors=True)
        self._written = []
        if self.tmp is not None:
            self.tmp.cleanup()
            self.tmp = None

    # ---- what clients need ----------------------------------------------------------------
    def env(self, base=None):
        """The environment (a copy of `base`, default os.environ) for Go programs to trust the
        test CA: SSL_CERT_FILE is a bundle of the system's CAs and the test CA. Also
        SYFT_CHECK_FOR_APP_UPDATE=false: syft would otherwise ask its vendor's site for a newer
        version on every run, and this machine reaches no site."""
        env = dict(os.environ if base is None else base)
        env["SSL_CERT_FILE"] = str(self.bundle_file)
        env["SYFT_CHECK_FOR_APP_UPDATE"] = "false"
        return env

    def ssl_context(self):
        """A Python TLS context that trusts the test CA alone."""
        return ssl.create_default_context(cafile=str(self.ca_file))

    def write_containerd_hosts(self, config_dir):
        """containerd's hosts.toml for this registry in CONFIG_DIR/HOST:PORT/ (CONFIG_DIR: one
        of containerd's registry config_path roots): the server by https and the test CA, so
        that containerd verifies the certificate (without it, containerd skips verification for
        a loopback host). Removed by stop(). Returns the file's path."""
        d = Path(config_dir) / self.host
        self._own_dir(d)
        hosts = d / "hosts.toml"
        hosts.write_text(f'server = "https://{self.host}"\nca = "{self.ca_file}"\n')
        return hosts

    def log_text(self):
        """The registry's own log (what it said), for a failure's message."""
        try:
            return self.log_file.read_text(errors="replace")
        except (OSError, AttributeError):
            return ""

    # ---- inside ---------------------------------------------------------------------------
    def _own_dir(self, d):
        """Creates D afresh for this registry and remembers it for stop(). A leftover of a
        killed run on the same port is replaced: the port is this process's now."""
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        self._written.append(d)

    def _openssl(self, *args):
        proc = subprocess.run(["openssl", *map(str, args)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise OciRegistryError(f"openssl {' '.join(map(str, args))} exited "
                                   f"{proc.returncode}: {proc.stderr.strip()}")

    def _make_certs(self):
        d = self.dir
        self.ca_file = d / "ca.crt"
        # P-256 keys: generated in milliseconds (RSA takes up to a second on a busy machine).
        self._openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                      "-nodes", "-days", "2", "-subj", "/CN=leasehold-test-registry-ca",
                      "-keyout", d / "ca.key", "-out", self.ca_file)
        self._openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                      "-subj", "/CN=leasehold-test-registry", "-keyout", d / "server.key",
                      "-out", d / "server.csr")
        (d / "server.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                                      "basicConstraints=CA:FALSE\n"
                                      "keyUsage=digitalSignature,keyEncipherment\n"
                                      "extendedKeyUsage=serverAuth\n")
        self._openssl("x509", "-req", "-in", d / "server.csr", "-CA", self.ca_file,
                      "-CAkey", d / "ca.key", "-CAcreateserial", "-days", "2",
                      "-extfile", d / "server.ext", "-out", d / "server.crt")
        self.bundle_file = d / "bundle.crt"
        system = SYSTEM_CAS.read_bytes() if SYSTEM_CAS.exists() else b""
        self.bundle_file.write_bytes(system + b"\n" + self.ca_file.read_bytes())

    def _write_config(self):
        d = self.dir
        (d / "data").mkdir()
        config = d / "config.yml"
        # No auth, no cache, no upload purging (a background walk of the storage); delete on,
        # so that a test can remove what it pushed.
        config.write_text(f"""version: 0.1
log:
  level: info
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: {d / "data"}
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: {self.host}
  secret: leasehold-test-registry-{self.port}
  tls:
    certificate: {d / "server.crt"}
    key: {d / "server.key"}
""")
        return config

    def _answers(self):
        """Whether GET /v2/ answers 200 over TLS verified with the test CA; raises when the
        process has exited."""
        if self.proc.poll() is not None:
            raise OciRegistryError(f"docker-registry exited {self.proc.returncode}:\n"
                                   f"{self.log_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"https://{self.host}/v2/", timeout=2,
                                        context=self.ssl_context()) as r:
                return r.status == 200
        except (urllib.error.URLError, OSError):
            return False
