#!/usr/bin/env python3
"""OciRegistry (leasehold_testing.oci_registry), the release tests' registry, for real: Debian's
docker-registry with TLS from a test CA, and the clients the release uses against it.

  crane      `crane append` of a one-file layer onto the empty image, the digest read back by
             `crane digest` equals the one pushed, `crane manifest` names one layer, and
             `crane export` gives the file back.
  index      what the release does with crane: `mutate --set-platform` tags the image as
             linux/amd64 and linux/arm64, `index append` makes one index of both, `manifest`
             lists both platforms, `copy` to another repository keeps the index's digest.
  untrusted  a client without the test CA is refused: crane without SSL_CERT_FILE ("certificate
             signed by unknown authority"; its fallback to plain HTTP gets 400 from a TLS-only
             server), Python's default context, and helm without --ca-file. TLS is verified.
  helm       `helm push` of a chart to oci://HOST/charts with --ca-file, `helm show chart` reads
             it back (name and version).
  syft       syft reads the image from the registry with reg.env() and writes an SPDX JSON SBOM
             naming it; without the CA it is refused.
  docker     Docker 20.10 pushes an image (`docker import` of a one-file tar) and crane reads the
             same digest back. Docker skips the certificate check for 127.0.0.0/8 (its default
             insecure registries), so this shows pushing works, not that Docker verifies.
  containerd write_containerd_hosts writes DIR/HOST:PORT/hosts.toml (server, CA). With
             --containerd BINDIR (containerd and ctr of tests/realkube/build.sh --node): a
             containerd of the test's own (its root, state and socket in a temporary directory,
             no CRI) fetches the image with `ctr content fetch --hosts-dir DIR`, and refuses it
             when the hosts.toml names another CA: containerd verifies the certificate through
             that file. (Without a hosts.toml, containerd skips the check for a loopback host,
             a ca.crt beside or not: seen by hand, not asserted.)
  stop       stop() kills the registry (the port refuses), removes /etc/docker/certs.d/HOST:PORT
             and the hosts.toml, and its directory.

Usage: test_oci_registry.py --tools DIR [--helm HELM] [--containerd BINDIR] [STEP...]
(DIR: tests/release/tools/build.sh's output, with crane and syft)
"""
import argparse
import io
import json
import os
import socket
import ssl
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from leasehold_testing.checks import Failure, check, log, run_steps, wait_for
from leasehold_testing.helm import CHART, Helm
from leasehold_testing.oci_registry import DOCKER_CERTS, OciRegistry

STEPS = ["crane", "index", "untrusted", "helm", "syft", "docker", "containerd", "stop"]
UNTRUSTED = "certificate signed by unknown authority"


def run(argv, env=None, ok=True, timeout=120, quiet=False):
    argv = [str(a) for a in argv]
    t0 = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
    if not quiet:
        log(f"  {' '.join(argv[:3])} ... exit {p.returncode} ({time.monotonic() - t0:.1f} s)")
    if ok and p.returncode != 0:
        raise Failure(f"`{' '.join(argv)}` exited {p.returncode}:\n{p.stdout}{p.stderr}")
    return p


def untrusted_env():
    """The environment with no way to the test CA: Go then trusts the system's CAs alone."""
    env = dict(os.environ)
    env.pop("SSL_CERT_FILE", None)
    env.pop("SSL_CERT_DIR", None)
    return env


def one_file_tar(path, name, content):
    """A tar holding one regular file NAME with CONTENT (an image layer)."""
    data = content.encode()
    with tarfile.open(path, "w") as tar:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        info.mode = 0o644
        tar.addfile(info, io.BytesIO(data))


class PrivateContainerd:
    """A containerd of this test's own: root, state and sockets under DIR, the CRI plugins off
    (nothing but content and images: no pods, no shims), stopped by its PID."""

    def __init__(self, bindir, d):
        self.bindir, self.dir = Path(bindir), Path(d)
        self.sock = self.dir / "containerd.sock"
        self.proc = None

    def __enter__(self):
        self.dir.mkdir(parents=True)
        config = self.dir / "config.toml"
        config.write_text(f"""version = 3
root = '{self.dir / "root"}'
state = '{self.dir / "state"}'
disabled_plugins = ['io.containerd.grpc.v1.cri', 'io.containerd.cri.v1.runtime',
  'io.containerd.cri.v1.images', 'io.containerd.nri.v1.nri']
[grpc]
  address = '{self.sock}'
[ttrpc]
  address = '{self.sock}.ttrpc'
[debug]
  address = ''
""")
        with open(self.dir / "containerd.log", "ab") as out:
            self.proc = subprocess.Popen([str(self.bindir / "containerd"), "--config",
                                          str(config)], stdout=out, stderr=subprocess.STDOUT)
        try:
            wait_for("the private containerd's socket",
                     lambda: self._alive() and self.ctr("version", ok=False).returncode == 0,
                     30, interval=0.1)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _alive(self):
        if self.proc.poll() is not None:
            log_text = (self.dir / "containerd.log").read_text(errors="replace")[-2000:]
            raise Failure(f"containerd exited {self.proc.returncode}:\n{log_text}")
        return True

    def ctr(self, *args, ok=True):
        return run([self.bindir / "ctr", "--address", self.sock, *args], ok=ok, quiet=True)

    def __exit__(self, exc_type, exc, tb):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
        if self.proc is not None:
            self.proc.wait()


class Suite:
    def __init__(self, args, reg, tmp):
        self.reg, self.tmp = reg, tmp
        self.crane = args.tools / "crane"
        self.syft = args.tools / "syft"
        self.helm_path = args.helm
        self.containerd_bin = args.containerd
        self._helm = None
        self.image = f"{reg.host}/testlib/tiny:1"
        self.content = f"leasehold testlib.oci_registry {reg.port}\n"
        self.pushed = None  # the digest crane pushed (step crane)

    @property
    def helm(self):
        """Real helm in a private home, made by the first step that needs it."""
        if self._helm is None:
            self._helm = Helm(self.helm_path)
        return self._helm

    def step(self, name):
        getattr(self, "step_" + name)()

    def push_tiny(self):
        if self.pushed:
            return
        layer = self.tmp / "layer.tar"
        one_file_tar(layer, "hello.txt", self.content)
        out = run([self.crane, "append", "-f", layer, "-t", self.image],
                  env=self.reg.env()).stdout.strip()
        # crane append prints the pushed image by digest: HOST/REPO@sha256:...
        check("@sha256:" in out, f"crane append printed no digest reference: {out!r}")
        self.pushed = out.rsplit("@", 1)[1]

    def step_crane(self):
        self.push_tiny()
        env = self.reg.env()
        digest = run([self.crane, "digest", self.image], env=env).stdout.strip()
        check(digest == self.pushed, f"crane digest read {digest}, crane append pushed "
              f"{self.pushed}")
        manifest = json.loads(run([self.crane, "manifest", self.image], env=env).stdout)
        check(len(manifest.get("layers", [])) == 1,
              f"the manifest has {len(manifest.get('layers', []))} layers, not 1: {manifest}")
        export = self.tmp / "export.tar"
        run([self.crane, "export", self.image, export], env=env)
        with tarfile.open(export) as tar:
            got = tar.extractfile("hello.txt").read().decode()
        check(got == self.content, f"crane export gave hello.txt {got!r}, pushed "
              f"{self.content!r}")
        log(f"  {self.image} is {digest}")

    def step_index(self):
        self.push_tiny()
        env = self.reg.env()
        repo = self.image.rsplit(":", 1)[0]
        for arch in ("amd64", "arm64"):
            run([self.crane, "mutate", "--set-platform", f"linux/{arch}", self.image, "-t",
                 f"{repo}:{arch}"], env=env)
        run([self.crane, "index", "append", "-m", f"{repo}:amd64", "-m", f"{repo}:arm64", "-t",
             f"{repo}:index"], env=env)
        index = json.loads(run([self.crane, "manifest", f"{repo}:index"], env=env).stdout)
        platforms = sorted(f"{m['platform']['os']}/{m['platform']['architecture']}"
                           for m in index.get("manifests", []) if "platform" in m)
        check(platforms == ["linux/amd64", "linux/arm64"],
              f"the index lists {platforms}, not linux/amd64 and linux/arm64: {index}")
        digest = run([self.crane, "digest", f"{repo}:index"], env=env).stdout.strip()
        copy = f"{self.reg.host}/testlib/copied:index"
        run([self.crane, "copy", f"{repo}@{digest}", copy], env=env)
        copied = run([self.crane, "digest", copy], env=env).stdout.strip()
        check(copied == digest, f"crane copy made {copied} of the index {digest}")

    def step_untrusted(self):
        self.push_tiny()
        p = run([self.crane, "digest", self.image], env=untrusted_env(), ok=False)
        check(p.returncode != 0 and UNTRUSTED in p.stderr,
              f"crane without the test CA: exit {p.returncode}, expected a refusal naming "
              f"'{UNTRUSTED}':\n{p.stderr}")
        try:
            urllib.request.urlopen(f"https://{self.reg.host}/v2/", timeout=10,
                                   context=ssl.create_default_context())
            raise Failure("Python's default TLS context accepted the test CA's certificate")
        except urllib.error.URLError as e:
            check(isinstance(e.reason, ssl.SSLCertVerificationError),
                  f"Python's default context: {e.reason!r}, not a verification error")
        chart = self.package_chart()
        p = self.helm.run("push", chart, f"oci://{self.reg.host}/untrusted", ok=False)
        check(p.returncode != 0 and UNTRUSTED in p.stdout + p.stderr,
              f"helm push without --ca-file: exit {p.returncode}, expected a refusal naming "
              f"'{UNTRUSTED}':\n{p.stdout}{p.stderr}")

    def package_chart(self):
        out = self.tmp / "charts"
        if not out.is_dir():
            out.mkdir()
            self.helm.run("package", CHART, "--destination", out)
        return next(out.glob("*.tgz"))

    def step_helm(self):
        chart = self.package_chart()
        pushed = self.helm.run("push", chart, f"oci://{self.reg.host}/charts", "--ca-file",
                               self.reg.ca_file)
        said = pushed.stdout + pushed.stderr
        check("Digest: sha256:" in said, f"helm push said no digest:\n{said}")
        name, version = chart.name[:-len(".tgz")].rsplit("-", 1)
        shown = self.helm.run("show", "chart", f"oci://{self.reg.host}/charts/{name}",
                              "--version", version, "--ca-file", self.reg.ca_file).stdout
        check(f"name: {name}" in shown and f"version: {version}" in shown,
              f"helm show chart from the registry:\n{shown}")
        log(f"  oci://{self.reg.host}/charts/{name} {version}")

    def step_syft(self):
        self.push_tiny()
        sbom = run([self.syft, "scan", f"registry:{self.image}", "-o", "spdx-json", "-q"],
                   env=self.reg.env()).stdout
        doc = json.loads(sbom)
        check(doc.get("spdxVersion", "").startswith("SPDX-"),
              f"syft wrote no SPDX document: {sbom[:300]}")
        check(self.image.split(":")[0] in doc.get("name", "") or
              "testlib/tiny" in doc.get("name", ""),
              f"the SBOM's name is {doc.get('name')!r}, not the image")
        env = untrusted_env()
        env["SYFT_CHECK_FOR_APP_UPDATE"] = "false"
        p = run([self.syft, "scan", f"registry:{self.image}", "-o", "spdx-json"], env=env,
                ok=False)
        check(p.returncode != 0 and UNTRUSTED in p.stderr,
              f"syft without the test CA: exit {p.returncode}, expected a refusal naming "
              f"'{UNTRUSTED}':\n{p.stderr[-2000:]}")

    def step_docker(self):
        tar = self.tmp / "docker-layer.tar"
        one_file_tar(tar, "hello.txt", self.content + "docker\n")
        ref = f"{self.reg.host}/testlib/docker:1"
        with open(tar, "rb") as f:
            p = subprocess.run(["docker", "import", "-", ref], stdin=f, capture_output=True,
                               text=True, timeout=120)
        check(p.returncode == 0, f"docker import exited {p.returncode}: {p.stderr}")
        try:
            said = run(["docker", "push", ref]).stdout
            digests = [w for w in said.split() if w.startswith("sha256:")]
            check(digests, f"docker push said no digest:\n{said}")
            read = run([self.crane, "digest", ref], env=self.reg.env()).stdout.strip()
            check(read == digests[-1], f"docker pushed {digests[-1]}, crane reads {read}")
            log(f"  docker pushed {ref} as {read}")
        finally:
            subprocess.run(["docker", "rmi", ref], capture_output=True, timeout=60)

    def step_containerd(self):
        self.hosts_root = self.tmp / "containerd-certs.d"
        hosts = self.reg.write_containerd_hosts(self.hosts_root)
        check(hosts == self.hosts_root / self.reg.host / "hosts.toml", f"hosts.toml at {hosts}")
        text = hosts.read_text()
        check(f'server = "https://{self.reg.host}"' in text and
              f'ca = "{self.reg.ca_file}"' in text, f"hosts.toml:\n{text}")
        if self.containerd_bin is None:
            log("  no --containerd: the hosts.toml is not tried on a containerd")
            return
        self.push_tiny()
        # The same file naming a CA that did not sign the registry's certificate.
        other = self.tmp / "other-ca"
        other.mkdir()
        wrong = self.tmp / "wrong-certs.d" / self.reg.host
        wrong.mkdir(parents=True)
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj",
                        "/CN=leasehold-test-other-ca", "-keyout", str(other / "ca.key"), "-out",
                        str(other / "ca.crt")], check=True, capture_output=True)
        (wrong / "hosts.toml").write_text(text.replace(str(self.reg.ca_file),
                                                       str(other / "ca.crt")))
        with PrivateContainerd(self.containerd_bin, self.tmp / "containerd") as ctrd:
            ref = f"{self.image.rsplit(':', 1)[0]}@{self.pushed}"
            ctrd.ctr("content", "fetch", "--hosts-dir", self.hosts_root, ref)
            p = ctrd.ctr("content", "fetch", "--hosts-dir", wrong.parent, ref, ok=False)
            check(p.returncode != 0 and UNTRUSTED in p.stdout + p.stderr,
                  f"containerd with a hosts.toml naming another CA: exit {p.returncode}, "
                  f"expected a refusal naming '{UNTRUSTED}':\n{p.stdout}{p.stderr}")
            log(f"  containerd fetched {ref} through {hosts}; refused with another CA")

    def step_stop(self):
        reg = self.reg
        port, tmpdir = reg.port, reg.dir
        certs = DOCKER_CERTS / reg.host
        check((certs / "ca.crt").read_bytes() == reg.ca_file.read_bytes(),
              f"{certs}/ca.crt is not the test CA")
        hosts_dir = getattr(self, "hosts_root", None)
        reg.stop()
        with socket.socket() as s:
            check(s.connect_ex(("127.0.0.1", port)) != 0,
                  f"port {port} still accepts after stop()")
        check(not certs.exists(), f"{certs} left behind by stop()")
        check(not (DOCKER_CERTS / f"localhost:{port}").exists(),
              f"{DOCKER_CERTS}/localhost:{port} left behind by stop()")
        check(not tmpdir.exists(), f"{tmpdir} left behind by stop()")
        if hosts_dir is not None:
            check(not (hosts_dir / f"127.0.0.1:{port}").exists(),
                  "the hosts.toml's directory left behind by stop()")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", type=Path, required=True,
                        help="tests/release/tools/build.sh's output (crane, syft)")
    parser.add_argument("--helm", help="helm (default: $LEASEHOLD_HELM, build/realkube/bin/helm)")
    parser.add_argument("--containerd", type=Path,
                        help="a folder with containerd and ctr: the containerd step tries the "
                        "hosts.toml on them")
    parser.add_argument("steps", nargs="*", default=STEPS, help=f"of {' '.join(STEPS)}")
    args = parser.parse_args()
    unknown = [s for s in args.steps if s not in STEPS]
    if unknown:
        parser.error(f"unknown step {' '.join(unknown)} (the steps: {' '.join(STEPS)})")
    for tool in ("crane", "syft"):
        if not os.access(args.tools / tool, os.X_OK):
            print(f"test_oci_registry: no {tool} in {args.tools}: run "
                  "tests/release/tools/build.sh", file=sys.stderr)
            return 1
    for tool in ("containerd", "ctr") if args.containerd else ():
        if not os.access(args.containerd / tool, os.X_OK):
            print(f"test_oci_registry: no {tool} in {args.containerd}: run "
                  "tests/realkube/build.sh --node", file=sys.stderr)
            return 1
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="testlib-registry-") as tmp, OciRegistry() as reg:
        log(f"registry at https://{reg.host} ({time.monotonic() - t0:.2f} s to answer)")
        suite = Suite(args, reg, Path(tmp))
        status = run_steps(args.steps, suite.step)
        if status:
            log("the registry's log:\n" + reg.log_text()[-3000:])
        return status


if __name__ == "__main__":
    sys.exit(main())
