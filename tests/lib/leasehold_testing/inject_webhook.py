"""InjectWebhook: `leasehold inject` (the chart's injector.mode webhook) run here, outside the
cluster, on 127.0.0.1 with a certificate made for it (openssl: a CA and a server certificate
with IP:127.0.0.1), for a control plane without nodes: the chart is installed with
injector.webhook.url and caBundle pointing at it. The test plays the kubelet's part for the
parameters ConfigMap: sync_params() writes its data into --params-dir as the kubelet projects a
ConfigMap volume (the files in a new timestamped directory, ..data swapped to it at once, each
key a symlink through ..data)."""
import base64
import os
import signal
import socket
import ssl
import subprocess
import tempfile
import time
from pathlib import Path

from .checks import Failure, check, wait_for
from .ports import free_port


def _openssl(*args):
    proc = subprocess.run(["openssl", *map(str, args)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise Failure(f"openssl {' '.join(map(str, args))} exited {proc.returncode}: "
                      f"{proc.stderr.strip()}")


def make_serving_cert(d, name="leasehold-inject-test"):
    """(CA file, certificate file, key file) in directory D: a P-256 CA and a server certificate
    it signed for IP:127.0.0.1 and DNS:localhost."""
    d = Path(d)
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-days", "2", "-subj", f"/CN={name}-ca", "-keyout", d / "ca.key", "-out", d / "ca.crt")
    sign_server_cert(d, d / "tls.crt", d / "tls.key", name)
    return d / "ca.crt", d / "tls.crt", d / "tls.key"


def sign_server_cert(d, cert, key, name):
    """A new key and a server certificate for it, signed by D's CA, in CERT and KEY."""
    d = Path(d)
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-subj", f"/CN={name}", "-keyout", key, "-out", d / "tls.csr")
    (d / "tls.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                               "basicConstraints=CA:FALSE\n"
                               "keyUsage=digitalSignature,keyEncipherment\n"
                               "extendedKeyUsage=serverAuth\n")
    _openssl("x509", "-req", "-in", d / "tls.csr", "-CA", d / "ca.crt", "-CAkey", d / "ca.key",
             "-CAcreateserial", "-days", "2", "-extfile", d / "tls.ext", "-out", cert)


def serial_of(cert):
    """The certificate file's serial number, upper-case hex (as ssl's getpeercert() has it)."""
    out = subprocess.run(["openssl", "x509", "-noout", "-serial", "-in", str(cert)],
                         capture_output=True, text=True, check=True).stdout
    return out.strip().split("=", 1)[1].upper()


class InjectWebhook:
    def __init__(self, binary):
        self.binary = Path(binary)
        self._tmp = tempfile.TemporaryDirectory(prefix="leasehold-inject-")
        self.dir = Path(self._tmp.name)
        self.params_dir = self.dir / "params"
        self.params_dir.mkdir()
        self.ca, self.cert, self.key = make_serving_cert(self.dir)
        self.port = free_port()
        self.url = f"https://127.0.0.1:{self.port}/mutate"
        self.log_path = self.dir / "inject.log"
        self.proc = None
        self._syncs = 0

    @property
    def ca_bundle(self):
        """The chart's injector.webhook.caBundle: base64 of the CA's PEM."""
        return base64.b64encode(self.ca.read_bytes()).decode()

    def sync_params(self, data):
        """The ConfigMap's DATA into params_dir, swapped in whole as the kubelet does."""
        self._syncs += 1
        stamp = f"..{time.strftime('%Y_%m_%d_%H_%M_%S')}.{self._syncs}"
        (self.params_dir / stamp).mkdir()
        for key, value in data.items():
            (self.params_dir / stamp / key).write_text(value)
        tmp = self.params_dir / "..data_tmp"
        tmp.symlink_to(stamp)
        os.replace(tmp, self.params_dir / "..data")
        for entry in self.params_dir.iterdir():
            if not entry.name.startswith(".."):
                if entry.name not in data:
                    entry.unlink()
        for key in data:
            link = self.params_dir / key
            if not link.is_symlink():
                link.symlink_to(f"..data/{key}")
        for old in self.params_dir.iterdir():
            if old.name.startswith("..") and old.name not in (stamp, "..data"):
                for f in old.iterdir():
                    f.unlink()
                old.rmdir()

    def rotate(self):
        """A new key and certificate from the same CA, swapped in as a Secret's update would be
        (each file replaced whole); its serial number."""
        sign_server_cert(self.dir, self.dir / "new.crt", self.dir / "new.key", "rotated")
        os.replace(self.dir / "new.key", self.key)
        os.replace(self.dir / "new.crt", self.cert)
        return serial_of(self.cert)

    def served_serial(self):
        """The serial number of the certificate a new TLS connection gets."""
        ctx = ssl.create_default_context(cafile=str(self.ca))
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as raw:
            with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as conn:
                return conn.getpeercert()["serialNumber"].upper()

    def start(self):
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [str(self.binary), "inject", f"--listen=127.0.0.1:{self.port}",
             f"--tls-cert-file={self.cert}", f"--tls-key-file={self.key}",
             f"--params-dir={self.params_dir}", "--log-level=debug"],
            stdout=self._log, stderr=subprocess.STDOUT)
        wait_for("leasehold inject serving", self.serving, 10, interval=0.05)
        return self

    def serving(self):
        check(self.proc.poll() is None,
              f"leasehold inject exited {self.proc.returncode}: {self.log()[-2000:]}")
        return "serving the admission webhook" in self.log()

    def log(self):
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self):
        """SIGTERM; the exit status (a Failure if it does not exit within 10 s)."""
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise Failure("leasehold inject did not exit within 10 s of SIGTERM")

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if getattr(self, "_log", None):
            self._log.close()
        self._tmp.cleanup()
