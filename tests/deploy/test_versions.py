#!/usr/bin/env python3
"""One version everywhere, and no foreign home (issue 38 §1).

    test_versions.py --sidecar BIN --plugin BIN

project.conf's `version=` is the product's version, its one source. Every copy must agree:
  - `leasehold --version` and `kubectl-leasehold version` (compiled in from project.conf);
  - charts/leasehold: Chart.yaml appVersion and values.yaml image.tag; Chart.yaml's own version
    is SemVer (the chart has its own);
  - the Dockerfile's `ARG VERSION=` default (the image's version label);
  - every `registry.example.com/leasehold:TAG` that README, docs/ and manifests/ tell users to
    run, and manifests/' app.kubernetes.io/version labels;
  - CHANGELOG.md has a `## [VERSION] - YYYY-MM-DD` section (Keep a Changelog), and an
    `## [Unreleased]` one above it.
And no shipped file names a site as the project's that is not: the URLs in the Dockerfile, the
chart, the krew manifest, manifests/ and project.conf must be on a host from an allow-list
(the Kubernetes and JSON-schema sites they cite, loopback, reserved example names), or
project.conf's `home` when it is set.
"""
import argparse
import re
import subprocess
import sys
from urllib.parse import urlparse

import yaml

from leasehold_testing import check, log, run_steps
from leasehold_testing.paths import ROOT, project_setting, product_version

SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
                    r"(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")
# Files that users run or install: a URL in them is a claim about where things are.
SHIPPED = ["Dockerfile", "project.conf", "charts", "manifests", "sidecar/kubectl/krew"]
# Hosts a shipped file may name: sites cited for a fact, loopback, names reserved for examples.
ALLOWED_HOSTS = re.compile(r"^(kubernetes\.io|json-schema\.org|127\.0\.0\.1|localhost|"
                           r".*\.example|example\.(com|org)|.*\.example\.com|.*\.invalid|"
                           r".*\.test|.*\.svc|.*\.svc\.cluster\.local)$")
IMAGE_REF = re.compile(r"registry\.example\.com/leasehold:([^\s\"'`@]+)")
VERSION_LABEL = re.compile(r"app\.kubernetes\.io/version: \"?([^\s\"]+)")


def stdout(*argv):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    check(r.returncode == 0, f"{' '.join(argv)} exited {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def binaries(args):
    version = product_version()
    check(SEMVER.match(version), f"project.conf: version {version!r} is not SemVer")
    lines = stdout(args.sidecar, "--version").strip()
    check(lines == f"leasehold {version}", f"leasehold --version says {lines!r}, "
          f"project.conf {version}")
    lines = stdout(args.plugin, "version").strip()
    check(lines == f"kubectl-leasehold {version}",
          f"kubectl-leasehold version says {lines!r}, project.conf {version}")
    log(f"binaries: {version}")


def chart(_args):
    version = product_version()
    meta = yaml.safe_load((ROOT / "charts/leasehold/Chart.yaml").read_text())
    values = yaml.safe_load((ROOT / "charts/leasehold/values.yaml").read_text())
    check(str(meta["appVersion"]) == version,
          f"Chart.yaml appVersion {meta['appVersion']} != project.conf {version}")
    check(str(values["image"]["tag"]) == version,
          f"values.yaml image.tag {values['image']['tag']} != project.conf {version}")
    check(SEMVER.match(str(meta["version"])), f"Chart.yaml version {meta['version']} not SemVer")
    log(f"chart {meta['version']}: appVersion and image.tag {version}")


def dockerfile(_args):
    version = product_version()
    found = re.findall(r"^ARG VERSION=(\S+)$", (ROOT / "Dockerfile").read_text(), re.M)
    check(found == [version], f"Dockerfile ARG VERSION defaults {found}, project.conf {version}")
    log(f"Dockerfile: ARG VERSION={version}")


def docs(_args):
    version = product_version()
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
             *sorted((ROOT / "manifests").glob("*.yaml")),
             *sorted((ROOT / "charts/leasehold").glob("*.md"))]
    seen = 0
    for path in files:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            for tag in IMAGE_REF.findall(line) + (
                    VERSION_LABEL.findall(line) if path.suffix == ".yaml" else []):
                seen += 1
                check(tag == version, f"{path.relative_to(ROOT)}:{n}: leasehold:{tag}, "
                      f"project.conf {version}")
    check(seen > 0, "no registry.example.com/leasehold:TAG found: the check would check nothing")
    log(f"{seen} image references name {version}")


def changelog(_args):
    version = product_version()
    path = ROOT / "CHANGELOG.md"
    check(path.is_file(), "no CHANGELOG.md at the repository's root")
    text = path.read_text()
    heads = re.findall(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?\s*$", text, re.M)
    check(heads and heads[0][0] == "Unreleased",
          f"CHANGELOG.md: the first section must be [Unreleased], found {heads[:1]}")
    released = {name: date for name, date in heads[1:]}
    check(version in released and released[version],
          f"CHANGELOG.md: no '## [{version}] - YYYY-MM-DD' section for project.conf's version")
    for name, date in heads[1:]:
        check(SEMVER.match(name) and date, f"CHANGELOG.md: section [{name}] needs SemVer and "
              "a date")
    log(f"CHANGELOG.md: {len(released)} releases, {version} among them")


def urls(_args):
    home = project_setting("home")
    home_host = urlparse(home).hostname if home else None
    paths = stdout("git", "-C", str(ROOT), "ls-files", "--", *SHIPPED).split()
    check(paths, "git ls-files found none of the shipped files")
    bad = []
    for rel in paths:
        text = (ROOT / rel).read_text(errors="replace")
        for url in re.findall(r"https?://[^\s\"'<>)`]+", text):
            try:
                host = urlparse(url).hostname or ""
            except ValueError:
                continue  # not a URL (a pattern such as values.schema.json's "^https://[^\\s]+")
            if host != home_host and not ALLOWED_HOSTS.match(host):
                bad.append(f"{rel}: {url}")
    check(not bad, "URLs on hosts that are not this project's (set project.conf home, or "
          "cite an allowed site):\n  " + "\n  ".join(bad))
    log(f"{len(paths)} shipped files name no foreign site")


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sidecar", required=True)
    p.add_argument("--plugin", required=True)
    args = p.parse_args()
    steps = {f.__name__: f for f in (binaries, chart, dockerfile, docs, changelog, urls)}
    return run_steps(list(steps), lambda name: steps[name](args))


if __name__ == "__main__":
    sys.exit(main())
