#!/usr/bin/env python3
"""scripts/release.sh end to end against a local OCI registry (README "Releasing"), in a fresh
`git clone` of this checkout (its uncommitted and untracked files committed there, so the clone
is the tree as it is and clean):

  refusals   before anything is built: a dirty tree, VERSION other than project.conf's, a
             version without a CHANGELOG.md section, no download URL (project.conf's home empty
             and no --download-url), an unknown option, a registry that cannot be asked;
  release    --dry-run names every ref and writes and pushes nothing; a signing key that does
             not open is refused before anything is pushed; then a real release to
             leasehold_testing.oci_registry.OciRegistry (TLS from a test CA), reusing this
             build's binaries (--build-dir: release.sh checks that the build's checkout has
             this commit's files, brings it up to date and checks --version);
  index      REGISTRY/leasehold:VERSION is an image index with linux/amd64 (and linux/arm64
             when that build exists: the log says which), each image's config says its
             platform; the amd64 image is at most 12 MB unpacked; `docker run
             REGISTRY/leasehold@DIGEST --version` prints VERSION (and with --platform
             linux/arm64 under qemu when the index has arm64);
  again      a second release of the same version is refused as already published, and so
             is a new version whose chart version was published already; a new version whose
             commit is not the --build-dir checkout's tree is refused before any build;
  chart      `helm pull oci://REGISTRY/charts/leasehold --version X`: appVersion VERSION,
             values image.repository/tag/digest = the registry's, the index digest;
  krew       krew's validate-krew-manifest accepts OUT/leasehold.yaml (a platform per arch,
             URIs under --download-url); `krew install --manifest --archive` into a KREW_ROOT
             in a temp dir, then `kubectl leasehold --help` through kubectl; sha256sums.txt;
  sbom       the SPDX SBOM lists libc6, OpenSSL, yaml-cpp and Boost with versions;
  cosign     `cosign verify --key cosign.pub --insecure-ignore-tlog` of the index and
             verify-attestation of the SBOM (key pair made here); skipped, saying so, when
             cosign was not built.

    test_release.py --build-dir DIR --tools DIR --helm HELM [STEP...]
"""
import argparse
import json
import os
import re
import shutil
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import yaml

from leasehold_testing import Failure, check, log, run_steps
from leasehold_testing.oci_registry import OciRegistry, OciRegistryError
from leasehold_testing.paths import ROOT, project_setting
from leasehold_testing.release_run import DOWNLOAD_URL, ReleaseRun, git, run

STEPS = ["refusals", "release", "index", "again", "chart", "krew", "sbom", "cosign"]
MAX_IMAGE_BYTES = 12 * 1000 * 1000


class Release(ReleaseRun):
    def __init__(self, args, tmp):
        super().__init__(tmp, args.build_dir, args.tools, args.helm)
        self.args = args
        self.arches = ["amd64"]
        self.key = None
        self.took = None
        self.summary = ""
        self.index_digest = None

    def refused(self, why, needle, *cmd_extra, **kw):
        def files():
            return {p.name: p.stat().st_mtime_ns for p in self.out.glob("*")} \
                if self.out.exists() else {}
        before, t0 = files(), time.monotonic()
        r = self.release(*cmd_extra, ok=False, **kw)
        took = time.monotonic() - t0
        check(r.returncode != 0, f"{why}: release.sh went ahead: {r.stdout[-1000:]}")
        check(needle in r.stderr, f"{why}: stderr lacks {needle!r}: {r.stderr[-1000:]}")
        check(files() == before, f"{why}: {self.out} changed: {before} -> {files()}")
        log(f"refused ({why}, {took:.1f}s): {r.stderr.strip().splitlines()[0][:150]}")
        return r

    # ---- steps

    def refusals(self):
        carried = self.clone_tree()
        log(f"cloned {ROOT} at {git(ROOT, 'rev-parse', '--short', 'HEAD').stdout.strip()}"
            + (" plus its uncommitted files (committed in the clone)" if carried else ""))
        (self.clone / "stray.txt").write_text("not committed\n")
        self.refused("dirty tree", "dirty")
        (self.clone / "stray.txt").unlink()
        self.refused("wrong version", "not project.conf's version", version="9.9.9")
        conf = self.clone / "project.conf"
        text = conf.read_text()
        conf.write_text(re.sub(r"(?m)^version=.*$", "version=9.9.9", text))
        git(self.clone, "commit", "--quiet", "-am", "test_release: a version CHANGELOG lacks")
        try:
            self.refused("version missing from CHANGELOG.md", "CHANGELOG.md has no '## [9.9.9]'",
                         version="9.9.9")
        finally:
            git(self.clone, "reset", "--quiet", "--hard", "HEAD~1")
        r = run([self.script, self.version, "--registry", "127.0.0.1:9", "--bogus"], ok=False)
        check(r.returncode != 0 and "--bogus" in r.stderr, f"an unknown option: {r.stderr}")
        if not project_setting("home"):
            r = run([self.script, self.version, "--registry", "127.0.0.1:9"], ok=False)
            check(r.returncode != 0 and "home=" in r.stderr and "--download-url" in r.stderr,
                  f"no download URL must be refused naming both: {r.stderr}")
        # The registry is asked only after the checks above; one that cannot be asked stops it.
        self.refused("unreachable registry", "cannot ask the registry", "--dry-run")

    def start_registry(self):
        registry = OciRegistry()
        try:
            registry.start()
        except OciRegistryError as e:
            raise Failure(f"the test registry: {e}") from e
        self.registry = registry
        arm = Path(self.args.build_dir) / "release-arm64" / "sidecar" / "leasehold"
        if arm.exists() and shutil.which("aarch64-linux-gnu-g++"):
            self.arches.append("arm64")
        log(f"architectures: {','.join(self.arches)}"
            + ("" if "arm64" in self.arches else f" (no arm64 build at {arm})"))
        cosign = Path(self.args.tools) / "cosign"
        if cosign.exists():
            keys = self.tmp / "keys"
            keys.mkdir()
            run([cosign, "generate-key-pair"], cwd=keys,
                env=dict(os.environ, COSIGN_PASSWORD="test"))
            self.key = keys / "cosign.key"

    def dry_run(self):
        r = self.release("--dry-run", "--arch", ",".join(self.arches))
        host = self.registry.host
        for ref in [f"{host}/leasehold:{self.version}",
                    *[f"{host}/leasehold:{self.version}-{a}" for a in self.arches],
                    f"oci://{host}/charts/leasehold:"]:
            check(ref in r.stdout, f"--dry-run does not name {ref}: {r.stdout}")
        check("nothing pushed" in r.stdout, f"--dry-run: {r.stdout}")
        check(not any(self.out.iterdir()), f"--dry-run wrote {list(self.out.iterdir())}")
        gone = self.crane("manifest", f"{host}/leasehold:{self.version}", ok=False)
        check(gone.returncode != 0, "--dry-run pushed the index")
        log("dry run: " + " | ".join(line.strip() for line in r.stdout.splitlines()
                                     if "  " in line)[:400])

    def release_step(self):
        self.start_registry()
        self.dry_run()
        sign = ["--sign-key", self.key] if self.key else []
        if self.key:
            # A key that does not open is found before anything is built or pushed.
            self.refused("wrong COSIGN_PASSWORD", "cosign failed", "--arch",
                         ",".join(self.arches), *sign, password="wrong")
            gone = self.crane("manifest", f"{self.registry.host}/leasehold:{self.version}-amd64",
                              ok=False)
            check(gone.returncode != 0, "an image was pushed before the key was found wrong")
        published = self.publish(self.arches, *sign)
        self.took, self.summary = published.took, published.summary
        log(f"release took {self.took:.0f}s:\n" + self.summary[self.summary.find("leasehold "):])
        self.index_digest = published.index_digest

    def crane(self, *args, ok=True):
        return run([Path(self.args.tools) / "crane", *args], ok=ok,
                   env=dict(os.environ, **self.registry.env()))

    def released(self):
        check(self.index_digest, "no release to check (the release step failed)")

    def index(self):
        self.released()
        host = self.registry.host
        ref = f"{host}/leasehold:{self.version}"
        digest = self.crane("digest", ref).stdout.strip()
        check(digest == self.index_digest, f"{ref} is {digest}, the summary said "
              f"{self.index_digest}")
        index = json.loads(self.crane("manifest", ref).stdout)
        check("manifests" in index, f"{ref} is not an index: {index}")
        platforms = {f"{m['platform']['os']}/{m['platform']['architecture']}": m["digest"]
                     for m in index["manifests"]}
        want = {f"linux/{a}" for a in self.arches}
        check(set(platforms) == want, f"the index has {sorted(platforms)}, not {sorted(want)}")
        for platform, d in platforms.items():
            config = json.loads(self.crane("config", f"{host}/leasehold@{d}").stdout)
            check(f"{config['os']}/{config['architecture']}" == platform,
                  f"{platform}'s config says {config['os']}/{config['architecture']}")
        log(f"index {digest}: {', '.join(f'{p} {d[:19]}' for p, d in platforms.items())} "
            f"(checked: {', '.join(sorted(want))})")
        pinned = f"{host}/leasehold@{digest}"
        run(["docker", "pull", "--quiet", pinned], timeout=300)
        try:
            size = int(run(["docker", "image", "inspect", "-f", "{{.Size}}", pinned])
                       .stdout.strip())
            check(size <= MAX_IMAGE_BYTES, f"the amd64 image is {size} bytes > {MAX_IMAGE_BYTES}")
            out = run(["docker", "run", "--rm", pinned, "--version"]).stdout.strip()
            check(out.split()[-1] == self.version, f"--version printed {out!r}")
            log(f"amd64 image {size / 1e6:.2f} MB unpacked; docker run --version: {out}")
        finally:
            run(["docker", "rmi", pinned], ok=False)
        if "arm64" in self.arches:  # under qemu-user-static through binfmt_misc
            run(["docker", "pull", "--quiet", "--platform", "linux/arm64", pinned], timeout=300)
            try:
                out = run(["docker", "run", "--rm", "--platform", "linux/arm64", pinned,
                           "--version"]).stdout.strip()
                check(out.split()[-1] == self.version, f"arm64 --version printed {out!r}")
                log(f"docker run --platform linux/arm64 --version: {out}")
            finally:
                run(["docker", "rmi", pinned], ok=False)

    def again(self):
        self.released()
        self.refused("already published", "already published", "--arch", ",".join(self.arches))
        # A new version with the chart's version unchanged: the chart is what was published.
        bumped = f"{self.version}-next.1"
        for name, old, new in [("project.conf", f"version={self.version}", f"version={bumped}"),
                               ("charts/leasehold/Chart.yaml", f'appVersion: "{self.version}"',
                                f'appVersion: "{bumped}"'),
                               ("CHANGELOG.md", "\n## [", f"\n## [{bumped}] - test\n\n## [")]:
            path = self.clone / name
            text = path.read_text()
            check(old in text, f"{name} lacks {old!r}")
            path.write_text(text.replace(old, new, 1))
        released_head = git(self.clone, "rev-parse", "HEAD").stdout.strip()
        git(self.clone, "commit", "--quiet", "-am", "test_release: a version, same chart")
        try:
            self.refused("chart version already published", "bump Chart.yaml", version=bumped)
            # Everything bumped: now this commit is not what --build-dir's checkout holds.
            path = self.clone / "charts/leasehold/Chart.yaml"
            path.write_text(re.sub(r"(?m)^version: .*$", "version: 99.0.0", path.read_text()))
            git(self.clone, "commit", "--quiet", "-am", "test_release: a new chart version")
            self.refused("a build of other sources", "whose files differ", version=bumped)
            check(git(self.clone, "status", "--porcelain").stdout == "", "the clone got dirty")
        finally:
            git(self.clone, "reset", "--quiet", "--hard", released_head)

    def chart(self):
        self.released()
        host = self.registry.host
        chart = yaml.safe_load((self.clone / "charts/leasehold/Chart.yaml").read_text())
        home = tempfile.mkdtemp(dir=self.tmp)
        env = dict(os.environ, HELM_CACHE_HOME=home, HELM_CONFIG_HOME=home, HELM_DATA_HOME=home)
        pulled = self.tmp / "pulled"
        run([self.args.helm, "pull", f"oci://{host}/charts/leasehold", "--version",
             chart["version"], "--ca-file", self.registry.ca_file, "--untar", "-d", pulled],
            env=env)
        got = yaml.safe_load((pulled / "leasehold/Chart.yaml").read_text())
        check(got["version"] == chart["version"] and got["appVersion"] == self.version,
              f"pulled Chart.yaml: version {got['version']} appVersion {got['appVersion']}")
        home_url = project_setting("home")
        check(got.get("home") == (home_url or None), f"home: {got.get('home')}")
        values = yaml.safe_load(run([self.args.helm, "show", "values", pulled / "leasehold"],
                                    env=env).stdout)
        image = values["image"]
        want = {"repository": f"{host}/leasehold", "tag": self.version,
                "digest": self.index_digest}
        check({k: image.get(k) for k in want} == want, f"image values {image}, want {want}")
        log(f"chart {chart['version']} pulled back: image {image}")

    def krew(self):
        self.released()
        tools = Path(self.args.tools)
        manifest = self.out / "leasehold.yaml"
        doc = yaml.safe_load(manifest.read_text())
        check(doc["spec"]["version"] == f"v{self.version}", f"spec.version {doc['spec']}")
        for p in doc["spec"]["platforms"]:
            check(p["uri"].startswith(DOWNLOAD_URL.format(version=self.version) + "/"),
                  f"uri {p['uri']}")
        arches = sorted(p["selector"]["matchLabels"]["arch"] for p in doc["spec"]["platforms"])
        check(arches == sorted(self.arches), f"manifest platforms {arches}")
        check("github.com/leasehold" not in manifest.read_text(), "a foreign home")
        run(["sha256sum", "--check", "--quiet", "sha256sums.txt"], cwd=self.out)
        r = run([tools / "validate-krew-manifest", "-manifest", manifest, "-skip-install"])
        log(f"validate-krew-manifest: {(r.stdout + r.stderr).strip()[-200:]}")
        krew_root = self.tmp / "krew-root"
        env = dict(os.environ, KREW_ROOT=str(krew_root), KREW_NO_UPGRADE_CHECK="1",
                   PATH=f"{krew_root / 'bin'}:{os.environ['PATH']}")
        run([tools / "krew", "install", f"--manifest={manifest}",
             f"--archive={self.out / 'kubectl-leasehold_linux_amd64.tar.gz'}"], env=env)
        r = run(["kubectl", "leasehold", "--help"], env=env)
        check("handover" in r.stdout + r.stderr, f"kubectl leasehold --help: {r.stdout}")
        r = run(["kubectl", "leasehold", "version"], env=env)
        check(r.stdout.strip() == f"kubectl-leasehold {self.version}", f"version: {r.stdout}")
        log(f"krew installed it into {krew_root}; kubectl leasehold version: {r.stdout.strip()}")
        for a in self.arches:
            with tarfile.open(self.out / f"kubectl-leasehold_linux_{a}.tar.gz") as t:
                check("kubectl-leasehold" in t.getnames(), f"{a} archive: {t.getnames()}")

    def sbom(self):
        self.released()
        wanted = {"glibc": r"^libc6$", "OpenSSL": r"ssl", "yaml-cpp": r"yaml-cpp",
                  "Boost": r"boost"}
        for a in self.arches:
            path = self.out / f"leasehold-{self.version}-linux-{a}.spdx.json"
            doc = json.loads(path.read_text())
            check(doc.get("spdxVersion", "").startswith("SPDX-"), f"{path}: not SPDX")
            found = {}
            for what, pattern in wanted.items():
                hits = [f"{p['name']} {p.get('versionInfo')}" for p in doc.get("packages", [])
                        if re.search(pattern, p.get("name", "")) and p.get("versionInfo")]
                check(hits, f"{path.name}: no {what} package with a version")
                found[what] = hits[0]
            log(f"SBOM linux/{a}: {found}")

    def cosign(self):
        self.released()
        cosign = Path(self.args.tools) / "cosign"
        if not self.key:
            log(f"cosign not built ({cosign} missing): signature and attestation not checked")
            return
        env = dict(os.environ, **self.registry.env(), TUF_ROOT=str(self.tmp / "sigstore"))
        pub = self.key.with_name("cosign.pub")
        ref = f"{self.registry.host}/leasehold@{self.index_digest}"
        run([cosign, "verify", "--key", pub, "--insecure-ignore-tlog", ref], env=env)
        other = self.tmp / "other"
        other.mkdir()
        run([cosign, "generate-key-pair"], cwd=other, env=dict(os.environ, COSIGN_PASSWORD="x"))
        r = run([cosign, "verify", "--key", other / "cosign.pub", "--insecure-ignore-tlog", ref],
                ok=False, env=env)
        check(r.returncode != 0, "cosign verify accepted another key")
        amd64 = json.loads(self.crane("manifest", ref).stdout)["manifests"]
        digest = next(m["digest"] for m in amd64 if m["platform"]["architecture"] == "amd64")
        run([cosign, "verify-attestation", "--key", pub, "--insecure-ignore-tlog", "--type",
             "spdxjson", f"{self.registry.host}/leasehold@{digest}"], env=env)
        log(f"cosign verify: {ref} signed by the test key (another key refused); the amd64 "
            "SBOM attestation verifies")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True,
                    help="the directory holding the CMake build dirs release(-arm64)")
    ap.add_argument("--tools", required=True, help="crane, syft, cosign, krew (build.sh's)")
    ap.add_argument("--helm", required=True)
    ap.add_argument("steps", nargs="*", default=STEPS)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="leasehold-release-"))
    rel = Release(args, tmp)
    try:
        steps = {"refusals": rel.refusals, "release": rel.release_step, "index": rel.index,
                 "again": rel.again, "chart": rel.chart, "krew": rel.krew, "sbom": rel.sbom,
                 "cosign": rel.cosign}
        # The clone (refusals) and the release come first whenever a later step is asked for.
        later = [s for s in args.steps if s not in ("refusals", "release")]
        wanted = [s for s in STEPS if s in args.steps or s == "refusals"
                  or (s == "release" and later)]
        return run_steps(wanted, lambda name: steps[name]())
    finally:
        if rel.registry:
            rel.registry.stop()
        rel.remove_local_images(rel.arches)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
