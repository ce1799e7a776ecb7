#!/usr/bin/env python3
"""The Dockerfile, checked without a Docker engine.

    test_dockerfile.py --dockerfile Dockerfile --binary build/release/sidecar/leasehold

- structure: build stage FROM debian:bookworm running scripts/install-deps.sh and the release
  preset; a rootfs stage FROM debian:bookworm-slim that takes glibc for TARGETARCH with
  `apt-get download libc6` + `dpkg-deb -x` and picks the shared objects with readelf, and takes
  only /out/ from the build stage (scripts/build-image.sh turns those COPYs into copies of its
  context); the runtime stage FROM scratch, COPY only (no RUN), everything from the rootfs
  stage, with OCI labels (licenses: Apache-2.0, the license LICENSE holds; version: project.conf's
  version=; no label naming a site), a numeric non-root USER and
  ENTRYPOINT ["/usr/local/bin/leasehold"]; .dockerignore keeps what the build needs.
- libraries: what the rootfs stage copies, worked out the way it does (readelf's program
  interpreter and NEEDED libraries, each found among libc6's files: `dpkg -L libc6`), must
  equal `ldd` of the built binary, in both directions (a missing one breaks the image, an extra
  one bloats it; a mutated list is caught), and every one of them belongs to libc6.
- size: the image's size estimated as the stripped binary plus those shared objects. Fails
  above the 12 MB goal (deploy.image measures the built image against the same goal).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from leasehold_testing import Failure, check
from leasehold_testing.paths import LICENSE, LICENSE_SPDX, product_version

# The image's size goal (issue 38): at most 12 MB uncompressed, in bytes as Docker counts them.
GOAL_MB = 12.0
GOAL_BYTES = int(GOAL_MB * 1000 * 1000)
# The labels every image carries; source/documentation only with a home (project.conf: empty).
LABELS = ("title", "description", "version", "revision", "created", "licenses")


# --- Dockerfile parsing ----------------------------------------------------------------------


def instructions(text):
    """[(INSTRUCTION, argument text)] with continuation lines joined and comments dropped."""
    out, buf = [], ""
    for raw in text.splitlines():
        line = raw.strip()
        if not buf and (not line or line.startswith("#")):
            continue
        if buf and line.startswith("#"):
            continue
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        word, _, rest = buf.partition(" ")
        out.append((word.upper(), rest.strip()))
        buf = ""
    check(not buf, "Dockerfile ends inside a continued line")
    return out


def stages(text):
    result = []
    for ins, arg in instructions(text):
        if ins == "FROM":
            parts = arg.split()
            name = parts[2] if len(parts) >= 3 and parts[1].upper() == "AS" else None
            result.append({"from": parts[0], "name": name, "ins": []})
        else:
            check(result or ins in ("ARG",), f"{ins} before the first FROM")
            if result:
                result[-1]["ins"].append((ins, arg))
    return result


def check_structure(dockerfile, dockerignore):
    text = dockerfile.read_text()
    st = stages(text)
    check(len(st) == 3, f"three stages expected (build, rootfs, runtime), found {len(st)}")
    build, rootfs, runtime = st
    check(build["from"] == "debian:bookworm" and build["name"] == "build",
          f"build stage FROM {build['from']} AS {build['name']}")
    runs = " ".join(a for i, a in build["ins"] if i == "RUN")
    check("scripts/install-deps.sh" in runs, "build stage must run scripts/install-deps.sh")
    check("cmake --preset release" in runs, "build stage must use the release preset (like CI)")
    check("scripts/build-image.sh --write-status /out/status.d" in runs,
          "build stage must write the status entries of the linked packages")

    check(rootfs["name"] == "rootfs" and rootfs["from"] == "debian:bookworm-slim",
          f"rootfs stage: FROM {rootfs['from']} AS {rootfs['name']}")
    check(("ARG", "TARGETARCH=amd64") in rootfs["ins"], "rootfs stage needs ARG TARGETARCH=amd64")
    rruns = " ".join(a for i, a in rootfs["ins"] if i == "RUN")
    for needed in ('apt-get download "libc6:$TARGETARCH"', "dpkg-deb -x", "dpkg-deb -f",
                   "readelf -l", "readelf -d", "(NEEDED)", "/rootfs/etc/passwd",
                   "/rootfs/etc/group", "nonroot:x:65532:65532:", "nonroot:x:65532:",
                   "/rootfs/usr/share/doc/libc6/copyright",
                   "/rootfs/var/lib/dpkg/status.d/libc6"):
        check(needed in rruns, f"the rootfs stage's RUN lacks {needed!r}")
    check(not any(i == "RUN" and "apt-get install" in a and "--no-install-recommends" not in a
                  for i, a in rootfs["ins"]), "apt-get install needs --no-install-recommends")
    from_build = [a for i, a in rootfs["ins"] if i == "COPY" and "--from=" in a]
    check(sorted(from_build) == sorted([
        "--from=build /out/leasehold /rootfs/usr/local/bin/leasehold",
        "--from=build /out/status.d /rootfs/var/lib/dpkg/status.d"]),
        f"the rootfs stage must take the binary and status.d from /out/ of the build stage "
        f"(scripts/build-image.sh copies them from its context instead): {from_build}")

    check(runtime["from"] == "scratch" and runtime["name"] is None,
          f"runtime stage FROM {runtime['from']}: FROM scratch expected")
    rt = runtime["ins"]
    kinds = {i for i, _ in rt}
    check(kinds <= {"COPY", "USER", "EXPOSE", "ENTRYPOINT", "ARG", "LABEL"},
          f"the runtime stage may only copy and describe (nothing runs there): {sorted(kinds)}")
    copies = [a for i, a in rt if i == "COPY"]
    check(copies == ["--from=rootfs /rootfs/ /"], f"runtime stage COPY: {copies}")
    users = [a for i, a in rt if i == "USER"]
    check(users == ["65532:65532"], f"USER must be 65532:65532 (nonroot): {users}")
    entry = [a for i, a in rt if i == "ENTRYPOINT"]
    check(entry and json.loads(entry[-1]) == ["/usr/local/bin/leasehold"],
          f"ENTRYPOINT must be the exec form [\"/usr/local/bin/leasehold\"]: {entry}")
    check(("EXPOSE", "9102") in rt, "EXPOSE 9102 (probes and metrics)")
    labels = " ".join(a for i, a in rt if i == "LABEL")
    for key in LABELS:
        check(f"org.opencontainers.image.{key}=" in labels, f"missing OCI label {key}")
    check(f'org.opencontainers.image.licenses="{LICENSE_SPDX}"' in labels,
          f"the licenses label must be {LICENSE_SPDX}: {labels}")
    check("://" not in labels and "github.com" not in text,
          "no label and no line may name a site: the project's home is project.conf's")
    versions = [a for i, a in rt if i == "ARG" and a.startswith("VERSION=")]
    check(versions == [f"VERSION={product_version()}"],
          f"ARG VERSION must be project.conf's version {product_version()}: {versions}")
    text = LICENSE.read_text() if LICENSE.is_file() else ""
    check("Apache License" in text and "Version 2.0, January 2004" in text,
          f"{LICENSE} must hold the license the label names ({LICENSE_SPDX})")
    ignored = {ln.strip() for ln in dockerignore.read_text().splitlines()
               if ln.strip() and not ln.startswith("#")}
    for needed in ("sidecar", "scripts", "CMakeLists.txt", "CMakePresets.json"):
        check(needed not in ignored, f".dockerignore must not exclude {needed}")
    check("build" in ignored and ".git" in ignored, ".dockerignore must exclude build and .git")


# --- ldd and dpkg ----------------------------------------------------------------------------


def ldd_paths(binary):
    r = subprocess.run(["ldd", str(binary)], capture_output=True, text=True)
    check(r.returncode == 0, f"ldd failed: {r.stderr}")
    paths = []
    for line in r.stdout.splitlines():
        line = line.strip()
        if "not found" in line:
            raise Failure(f"ldd: {line}")
        m = re.match(r"\S+ => (/\S+) \(0x", line) or re.match(r"(/\S+) \(0x", line)
        if m:
            paths.append(m.group(1))
        elif not line.startswith("linux-vdso") and not line.startswith("linux-gate"):
            raise Failure(f"unexpected ldd line: {line}")
    return paths


def dpkg_owner(path):
    candidates = [path, os.path.realpath(path)]
    for p in list(candidates):
        if p.startswith("/lib"):
            candidates.append("/usr" + p)
        elif p.startswith("/usr/lib"):
            candidates.append(p[4:])
    for c in candidates:
        r = subprocess.run(["dpkg", "-S", c], capture_output=True, text=True)
        if r.returncode == 0:
            # "libssl3:amd64: /usr/lib/..." -> libssl3; "diversion by ..." lines skipped.
            lines = [ln for ln in r.stdout.splitlines() if not ln.startswith("diversion")]
            owners = lines[0].rsplit(": ", 1)[0]
            return {o.strip().split(":")[0] for o in owners.split(",")}
    raise Failure(f"no Debian package owns {path} (tried {candidates})")


# --- what the rootfs stage copies ------------------------------------------------------------


def readelf(binary, flag):
    r = subprocess.run(["readelf", flag, str(binary)], capture_output=True, text=True,
                       env={"LC_ALL": "C", "PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    check(r.returncode == 0, f"readelf {flag} {binary}: {r.stderr.strip()}")
    return r.stdout


def native_arch():
    """This machine's Debian architecture: libc6 may be installed for another one too (arm64
    cross-building), and `dpkg -L libc6` is then ambiguous."""
    return subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True,
                          check=True).stdout.strip()


def recipe_paths(binary, package_files):
    """The rootfs stage's choice, made the same way: the program interpreter at its path, and
    each other NEEDED library at the one path of PACKAGE_FILES (libc6's) under /lib or /usr/lib
    with that name."""
    interp = re.findall(r"Requesting program interpreter: (\S+)\]", readelf(binary, "-l"))
    check(len(interp) == 1, f"the binary names {len(interp)} program interpreters")
    paths = [interp[0]]
    for name in re.findall(r"\(NEEDED\).*\[(\S+)\]", readelf(binary, "-d")):
        if name == interp[0].rsplit("/", 1)[1]:
            continue  # the loader as a NEEDED library: the interpreter, loaded already
        found = [f for f in package_files if (f.startswith("/lib/") or f.startswith("/usr/lib/"))
                 and f.rsplit("/", 1)[1] == name]
        check(len(found) == 1, f"NEEDED {name}: {len(found)} files of libc6 ({found}); the "
                               f"rootfs stage would fail")
        paths.append(found[0])
    check(interp[0] in package_files, f"the interpreter {interp[0]} is not libc6's")
    return paths


def compare(copied, ldd):
    missing = sorted(set(ldd) - set(copied))
    extra = sorted(set(copied) - set(ldd))
    check(not missing, f"ldd names shared objects the image would not hold: {missing}")
    check(not extra, f"the image would hold shared objects ldd does not name: {extra}")


def self_test(copied, ldd):
    """The comparison can fail: a list without one object, or with one too many, is caught."""
    for mutated, expect in ((copied[1:], "would not hold"),
                            (copied + ["/lib/x86_64-linux-gnu/libz.so.1"], "does not name")):
        try:
            compare(mutated, ldd)
        except Failure as e:
            check(expect in str(e), f"self-test: wrong complaint: {e}")
            continue
        raise Failure(f"self-test: a mutated list was not caught ({expect})")
    print("ok: self-test: a missing and an extra shared object are both caught")


def structure_self_test(dockerfile):
    """check_structure can fail: a RUN in the runtime stage, a runtime stage on a base image and
    a label naming a site are each refused."""
    text = dockerfile.read_text()
    cases = {"a RUN in the runtime stage": ("FROM scratch\n", "FROM scratch\nRUN true\n"),
             "a base image": ("FROM scratch\n", "FROM debian:bookworm-slim\n"),
             "a source label": ('org.opencontainers.image.licenses="Apache-2.0"',
                                'org.opencontainers.image.licenses="Apache-2.0" \\\n'
                                '      org.opencontainers.image.source="https://example.org/x"')}
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / ".dockerignore").write_text(
            (dockerfile.parent / ".dockerignore").read_text())
        for what, (old, new) in cases.items():
            check(text.count(old) == 1, f"self-test could not add {what}")
            (Path(tmp) / "Dockerfile").write_text(text.replace(old, new))
            try:
                check_structure(Path(tmp) / "Dockerfile", Path(tmp) / ".dockerignore")
            except Failure:
                continue
            raise Failure(f"self-test: a Dockerfile with {what} passed the structure check")
    print("ok: self-test: " + ", ".join(cases) + " are each refused")


def estimate(binary, paths):
    """(bytes, rows): the stripped binary and the shared objects (the few small files of /etc
    and /var/lib/dpkg/status.d add a few KB)."""
    with tempfile.TemporaryDirectory() as tmp:
        stripped = Path(tmp) / "leasehold"
        subprocess.run(["strip", "-o", str(stripped), str(binary)], check=True)
        rows = [("leasehold (stripped)", stripped.stat().st_size)]
    rows += [(p, os.path.getsize(os.path.realpath(p))) for p in paths]
    return sum(b for _, b in rows), rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dockerfile", required=True, type=Path)
    ap.add_argument("--binary", required=True, type=Path)
    args = ap.parse_args()
    try:
        check_structure(args.dockerfile, args.dockerfile.parent / ".dockerignore")
        print("ok: Dockerfile structure: build, rootfs (glibc from libc6, readelf), runtime "
              "FROM scratch with COPY only")
        structure_self_test(args.dockerfile)
        ldd = ldd_paths(args.binary)
        libc6 = subprocess.run(["dpkg", "-L", f"libc6:{native_arch()}"], capture_output=True,
                               text=True, check=True).stdout.split()
        copied = recipe_paths(args.binary, libc6)
        print("ldd:    " + " ".join(ldd))
        print("copied: " + " ".join(copied))
        compare(copied, ldd)
        for path in ldd:
            owners = dpkg_owner(path)
            check(owners == {"libc6"}, f"{path} belongs to {owners}: the image holds glibc only")
        print("ok: the shared objects the image holds are exactly ldd's, all of libc6")
        self_test(copied, ldd)
        total, rows = estimate(args.binary, copied)
        for name, size in rows:
            print(f"  + {name:40} {size:9d} bytes")
        print(f"estimated image size: {total / 1e6:.1f} MB (goal: at most {GOAL_MB:.0f} MB)")
        check(total <= GOAL_BYTES, f"the image would hold {total / 1e6:.1f} MB, more than "
                                   f"{GOAL_MB:.0f} MB")
    except Failure as e:
        print(f"FAIL: {e}")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
