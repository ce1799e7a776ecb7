#!/usr/bin/env python3
"""The krew manifest of kubectl-leasehold against the archive scripts/krew-package.sh builds
from this build's binary (README "kubectl leasehold"):

  - the fields krew requires: apiVersion krew.googlecontainertools.github.com/v1alpha2, kind
    Plugin, metadata.name (the binary's name without kubectl-), spec.version (v + semver),
    shortDescription, platforms with selector, an https uri, a 64-hex sha256 and bin;
  - the written manifest's sha256 is the archive's, its bin a file in the archive that is
    executable and runs (`version` answers the manifest's version), its uri names that version;
  - it equals the repository's template filled in (version, homepage, arch, URL; so the
    template is what ships), and the template is marked as one and names no foreign site;
  - the archive is reproducible (same binary, same sha256) and --check refuses a wrong sha256
    and a missing bin (the check can fail);
  - krew's own validate-krew-manifest, when on PATH or $KREW_VALIDATOR (sigs.k8s.io/krew).

    test_krew.py --plugin BIN
"""
import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import yaml

from leasehold_testing import check, log, run_steps
from leasehold_testing.paths import product_version, project_setting

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "krew-package.sh"
SOURCE = ROOT / "sidecar" / "kubectl" / "krew" / "leasehold.yaml"
ARCHIVE = "kubectl-leasehold_linux_amd64.tar.gz"
# project.conf's home is empty until the project is published: the URL the manifest is told.
DOWNLOAD_URL = "https://downloads.invalid/leasehold/v" + product_version()


def package(plugin, out):
    r = subprocess.run([str(SCRIPT), "--download-url", DOWNLOAD_URL, plugin, str(out)],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, f"krew-package.sh failed: {r.stderr}")
    return out / "leasehold.yaml", out / ARCHIVE


def checker(manifest, archive):
    return subprocess.run([str(SCRIPT), "--check", str(manifest), str(archive)],
                          capture_output=True, text=True, timeout=30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plugin", required=True)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="leasehold-krew-"))
    manifest_path, archive = package(args.plugin, tmp / "a")
    manifest = yaml.safe_load(manifest_path.read_text())

    def fields():
        check(manifest.get("apiVersion") == "krew.googlecontainertools.github.com/v1alpha2",
              f"apiVersion: {manifest.get('apiVersion')}")
        check(manifest.get("kind") == "Plugin", f"kind: {manifest.get('kind')}")
        check(manifest.get("metadata", {}).get("name") == "leasehold", "metadata.name")
        spec = manifest["spec"]
        check(re.fullmatch(r"v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?", spec.get("version", "")),
              f"spec.version must be v + semver: {spec.get('version')}")
        check(spec.get("shortDescription") and len(spec["shortDescription"]) <= 100,
              "shortDescription (krew wants it short)")
        check(spec.get("homepage", "https://").startswith("https://"), "homepage")
        platforms = spec.get("platforms") or []
        check(platforms, "spec.platforms")
        for p in platforms:
            labels = p.get("selector", {}).get("matchLabels", {})
            check(labels == {"os": "linux", "arch": "amd64"}, f"selector: {p.get('selector')}")
            check(p.get("uri", "").startswith("https://") and p["uri"].endswith(".tar.gz"),
                  f"uri: {p.get('uri')}")
            check(f"/{spec['version']}/" in p["uri"], f"the uri names the version: {p['uri']}")
            check(re.fullmatch(r"[0-9a-f]{64}", p.get("sha256", "")), f"sha256: {p.get('sha256')}")
            check(p.get("bin"), "bin")

    def archive_matches():
        p = manifest["spec"]["platforms"][0]
        have = hashlib.sha256(archive.read_bytes()).hexdigest()
        check(p["sha256"] == have, f"sha256 {p['sha256']} but the archive has {have}")
        with tarfile.open(archive) as t:
            names = {m.name: m for m in t.getmembers()}
            check(p["bin"] in names and names[p["bin"]].isfile(),
                  f"bin {p['bin']} is not a file in the archive: {sorted(names)}")
            check(names[p["bin"]].mode & 0o111, "bin is executable")
            if (ROOT / "LICENSE").exists():
                check("LICENSE" in names, "the LICENSE is in the archive")
            unpacked = tmp / "unpacked"
            t.extractall(unpacked)
        out = subprocess.run([str(unpacked / p["bin"]), "version"], capture_output=True,
                             text=True, timeout=10).stdout
        check(out.strip() == f"kubectl-leasehold {manifest['spec']['version'][1:]}",
              f"the archived binary's version: {out!r}")
        r = checker(manifest_path, archive)
        check(r.returncode == 0, f"--check: {r.stderr}")
        log(r.stdout.strip())

    def same_as_repository():
        # The template filled in as krew-package.sh must fill it (homepage only with a home).
        text = SOURCE.read_text()
        check("TEMPLATE" in text and "github.com/leasehold" not in text,
              f"{SOURCE}: a marked template")
        home = project_setting("home")
        for key, value in {"VERSION": product_version(), "HOMEPAGE": home, "ARCH": "amd64",
                           "URL": DOWNLOAD_URL, "SHA256": "-"}.items():
            text = text.replace("${" + key + "}", value)
        source = yaml.safe_load(text)
        if not home:
            del source["spec"]["homepage"]
        written = yaml.safe_load(manifest_path.read_text())
        for p in written["spec"]["platforms"]:
            p["sha256"] = "-"
        check(source == written, "the written manifest differs from "
              f"{SOURCE.relative_to(ROOT)} filled in: {written} vs {source}")

    def reproducible_and_refusing():
        _, again = package(args.plugin, tmp / "b")
        check(again.read_bytes() == archive.read_bytes(), "the same binary gives the same archive")
        wrong = tmp / "wrong.yaml"
        wrong.write_text(re.sub(r'sha256: "[0-9a-f]+"', 'sha256: "' + "0" * 64 + '"',
                                manifest_path.read_text()))
        r = checker(wrong, archive)
        check(r.returncode != 0 and "sha256" in r.stderr, f"--check took a wrong sha256: {r}")
        nobin = tmp / "nobin.yaml"
        nobin.write_text(manifest_path.read_text().replace("bin: kubectl-leasehold",
                                                           "bin: bin/kubectl-leasehold"))
        r = checker(nobin, archive)
        check(r.returncode != 0 and "not in" in r.stderr, f"--check took a missing bin: {r}")

    def krew_validator():
        tool = os.environ.get("KREW_VALIDATOR")
        if not (tool and os.access(tool, os.X_OK)):  # ctest names tests/release/tools' build
            tool = shutil.which("validate-krew-manifest")
        if not tool:
            log("validate-krew-manifest not found (tests/release/tools/build.sh builds it): "
                "krew's own check skipped")
            return
        r = subprocess.run([tool, "-manifest", str(manifest_path), "-skip-install"],
                           capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, f"validate-krew-manifest: {r.stdout} {r.stderr}")
        log(f"validate-krew-manifest: {(r.stdout + r.stderr).strip()[-200:]}")

    try:
        steps = {"fields": fields, "archive": archive_matches, "repository": same_as_repository,
                 "reproducible": reproducible_and_refusing, "krew_validator": krew_validator}
        return run_steps(list(steps), lambda name: steps[name]())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
