"""ReleaseRun: scripts/release.sh as the tests run it, in a clone of this checkout.

release.sh refuses a dirty tree, and a test must release the tree as it is (its uncommitted
changes too): clone_as_is() clones HEAD and commits the work tree's changes there. The release
reuses this checkout's CMake builds (--build-dir: release.sh checks that their sources are the
clone's commit and brings them up to date) and pushes to an OciRegistry:

    rel = ReleaseRun(tmp, build_dir, tools, helm)
    rel.clone_tree()
    rel.registry = registry                      # a started OciRegistry
    summary = rel.publish("amd64")               # the image index's digest, the chart version
    ...
    rel.remove_local_images()

Used by tests/deploy/test_release.py (the release itself, its refusals) and by the node tests
through node_release.NodeRelease (the chart and the image installed from the registry, as a user
does).
"""
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from .checks import check
from .paths import ROOT, product_version

# Never fetched: krew installs from --archive. .invalid: a name that is no one's site.
DOWNLOAD_URL = "https://downloads.invalid/leasehold/v{version}"
# Where release.sh's arguments need an address and no registry is up: nothing listens there.
NO_REGISTRY = "127.0.0.1:9"


def run(cmd, ok=True, timeout=120, **kw):
    """CMD's CompletedProcess (text); a Failure with its output when ok and it exits non-zero."""
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout,
                       **kw)
    if ok:
        check(r.returncode == 0, f"{' '.join(map(str, cmd))} exited {r.returncode}: "
              f"{r.stdout[-2000:]}{r.stderr[-2000:]}")
    return r


def git(repo, *args, **kw):
    """git in REPO with a committer of its own (the machine may have none configured)."""
    return run(["git", "-C", repo, "-c", "user.name=leasehold-test",
                "-c", "user.email=test@localhost", *args], **kw)


def clone_as_is(dest):
    """A clone of ROOT's HEAD plus its uncommitted and untracked (not ignored) files, committed:
    the tree as it is, clean. Returns whether anything beyond HEAD was carried over."""
    head = git(ROOT, "rev-parse", "HEAD").stdout.strip()
    git(ROOT.parent, "clone", "--quiet", "--no-checkout", ROOT, dest)
    git(dest, "checkout", "--quiet", "--detach", head)
    listed = run(["git", "-C", ROOT, "ls-files", "-z", "--cached", "--others",
                  "--exclude-standard"]).stdout.split("\0")
    for name in filter(None, listed):
        src, dst = ROOT / name, dest / name
        if src.is_symlink() or src.is_file():
            dst.parent.mkdir(parents=True, exist_ok=True)
            if dst.exists() or dst.is_symlink():
                dst.unlink()
            shutil.copy2(src, dst, follow_symlinks=False)
    for name in filter(None, run(["git", "-C", ROOT, "ls-files", "-z", "--deleted"])
                       .stdout.split("\0")):
        (dest / name).unlink(missing_ok=True)
    git(dest, "add", "-A")
    if git(dest, "diff", "--cached", "--quiet", ok=False).returncode == 0:
        return False
    git(dest, "commit", "--quiet", "-m", "test_release: the work tree as it is")
    return True


@dataclass
class Published:
    """What one release put in the registry, from release.sh's summary."""
    version: str        # project.conf's: the image tag and the chart's appVersion
    chart_version: str  # charts/leasehold/Chart.yaml's version: `helm install --version`
    index_digest: str   # "sha256:...": the image index, which the chart's image.digest pins
    took: float         # seconds release.sh ran
    summary: str        # its stdout


class ReleaseRun:
    """release.sh of the clone TMP/clone, writing to TMP/out. build_dir: the directory holding
    this checkout's CMake build dirs (release, release-arm64); tools: crane, syft, cosign
    (tests/release/tools/build.sh's); helm: the binary. `registry`: an OciRegistry or None."""

    def __init__(self, tmp, build_dir, tools, helm):
        self.tmp = Path(tmp)
        self.build_dir, self.tools, self.helm = build_dir, tools, helm
        self.version = product_version()
        self.clone = self.tmp / "clone"
        self.out = self.tmp / "out"
        self.registry = None
        self.released_arches = set()

    @property
    def script(self):
        return self.clone / "scripts" / "release.sh"

    def clone_tree(self):
        """clone_as_is into self.clone; whether uncommitted files were carried over."""
        return clone_as_is(self.clone)

    def chart_version(self):
        return str(yaml.safe_load((self.clone / "charts/leasehold/Chart.yaml").read_text())[
            "version"])

    def release(self, *extra, ok=True, version=None, registry=None, timeout=1500,
                password="test"):
        """release.sh VERSION (default project.conf's) to REGISTRY (default self.registry's
        host, else NO_REGISTRY) with EXTRA; trusts self.registry's CA. COSIGN_PASSWORD is
        PASSWORD (for --sign-key)."""
        reg = registry or (self.registry.host if self.registry else NO_REGISTRY)
        version = version or self.version
        cmd = [self.script, version, "--registry", reg, "--out", self.out,
               "--tools", self.tools, "--build-dir", self.build_dir,
               "--download-url", DOWNLOAD_URL.format(version=version), *extra]
        if self.registry:
            cmd += ["--ca-file", self.registry.ca_file]
        env = dict(os.environ, LEASEHOLD_HELM=str(self.helm), COSIGN_PASSWORD=password)
        if self.registry:
            env.update(self.registry.env())
        return run(cmd, ok=ok, timeout=timeout, env=env)

    def publish(self, arches, *extra):
        """A real release of ARCHES (a list or "amd64,arm64") to self.registry; Published."""
        arches = arches if isinstance(arches, str) else ",".join(arches)
        check(self.registry is not None, "publish needs a registry")
        t0 = time.monotonic()
        r = self.release("--arch", arches, *extra)
        took = time.monotonic() - t0
        self.released_arches.update(arches.split(","))
        m = re.search(r"^image index +\S+@(sha256:[0-9a-f]{64})", r.stdout, re.M)
        check(m, f"release.sh's summary names no image index digest:\n{r.stdout[-2000:]}")
        return Published(self.version, self.chart_version(), m.group(1), took, r.stdout)

    def remove_local_images(self, arches=None):
        """Docker's local images release.sh keeps for its user (leasehold-release:VERSION-ARCH),
        of ARCHES (default the ones published here)."""
        for a in arches or self.released_arches:
            run(["docker", "rmi", f"leasehold-release:{self.version}-{a}"], ok=False)
