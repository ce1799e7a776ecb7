#!/usr/bin/env python3
"""The Dockerfile, checked without a Docker engine.

    test_dockerfile.py --dockerfile Dockerfile --binary build/release/sidecar/leasehold

- structure: build stage FROM debian:bookworm running scripts/install-deps.sh and the release
  preset; runtime stage FROM debian:bookworm-slim with OCI labels (licenses: Apache-2.0, the
  license LICENSE holds), a numeric non-root USER,
  ENTRYPOINT ["/usr/local/bin/leasehold"] and the binary copied from the build stage;
  .dockerignore keeps what the build needs. The runtime stage alone (runtime_stage: what the
  gate's deploy.image builds with this build's binary) differs only in the binary's COPY.
- libraries: `ldd` of the built binary, each library mapped to its Debian package with
  `dpkg -S`, must equal the packages the runtime stage installs (a mismatch in either
  direction fails: a missing one breaks the image, an extra one bloats it).
- size: the image's added size over debian:bookworm-slim, estimated as the installed size of
  the runtime packages (and their dependencies) that the base does not already hold, plus the
  stripped binary. Fails above the 25 MB goal.
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from leasehold_testing import Failure, check
from leasehold_testing.paths import LICENSE, LICENSE_SPDX

GOAL_MB = 25.0


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


def runtime_stage(dockerfile_text, binary_name):
    """The Dockerfile's last stage, verbatim, with its one `COPY --from=build SRC DEST` made
    `COPY binary_name DEST` (a file of the build context). Anything else taken from another
    stage fails: the stage would not build alone."""
    lines = dockerfile_text.splitlines()
    froms = [i for i, line in enumerate(lines) if re.match(r"(?i)FROM\s", line)]
    check(len(froms) >= 2, f"the Dockerfile has {len(froms)} FROM lines, expected a build and a "
          "runtime stage")
    stage = lines[froms[-1]:]
    copies = [i for i, line in enumerate(stage) if re.match(r"(?i)COPY\s+--from=", line)]
    check(len(copies) == 1, f"the runtime stage has {len(copies)} COPY --from= lines, expected "
          "the binary's one")
    m = re.fullmatch(r"(?i)COPY\s+--from=build\s+(\S+)\s+(\S+)\s*", stage[copies[0]])
    check(m, f"cannot read the runtime stage's binary copy: {stage[copies[0]]!r}")
    stage[copies[0]] = f"COPY {binary_name} {m.group(2)}"
    return "\n".join(stage) + "\n"


def apt_packages(run_arg):
    """Package names of every `apt-get install` in one RUN argument."""
    pkgs = []
    for command in re.split(r"&&|;|\|\|", run_arg):
        words = shlex.split(command)
        while words and "=" in words[0]:  # VAR=value prefixes
            words.pop(0)
        if len(words) >= 2 and words[0] in ("apt-get", "apt") and "install" in words:
            after = words[words.index("install") + 1:]
            pkgs += [w for w in after if not w.startswith("-")]
    return pkgs


def check_structure(dockerfile, dockerignore):
    st = stages(dockerfile.read_text())
    check(len(st) >= 2, f"multi-stage build expected, found {len(st)} stage(s)")
    build, runtime = st[0], st[-1]
    check(build["from"] == "debian:bookworm", f"build stage FROM {build['from']}")
    runs = " ".join(a for i, a in build["ins"] if i == "RUN")
    check("scripts/install-deps.sh" in runs, "build stage must run scripts/install-deps.sh")
    check("cmake --preset release" in runs, "build stage must use the release preset (like CI)")
    check(runtime["from"] == "debian:bookworm-slim", f"runtime stage FROM {runtime['from']}")
    rt = runtime["ins"]
    users = [a for i, a in rt if i == "USER"]
    check(users, "runtime stage needs a USER")
    uid = users[-1].split(":")[0]
    check(uid.isdigit() and int(uid) != 0, f"USER must be numeric and non-root: {users[-1]}")
    entry = [a for i, a in rt if i == "ENTRYPOINT"]
    check(entry and json.loads(entry[-1]) == ["/usr/local/bin/leasehold"],
          f"ENTRYPOINT must be the exec form [\"/usr/local/bin/leasehold\"]: {entry}")
    copies = [a for i, a in rt if i == "COPY"]
    check(any(f"--from={build['name']}" in c and c.endswith("/usr/local/bin/leasehold")
              for c in copies), f"the binary must be copied from the build stage: {copies}")
    labels = " ".join(a for i, a in rt if i == "LABEL")
    for key in ("title", "description", "version", "revision", "created", "source", "licenses"):
        check(f"org.opencontainers.image.{key}=" in labels, f"missing OCI label {key}")
    check(f'org.opencontainers.image.licenses="{LICENSE_SPDX}"' in labels,
          f"the licenses label must be {LICENSE_SPDX}: {labels}")
    text = LICENSE.read_text() if LICENSE.is_file() else ""
    check("Apache License" in text and "Version 2.0, January 2004" in text,
          f"{LICENSE} must hold the license the label names ({LICENSE_SPDX})")
    check(not any(i == "RUN" and "apt-get install" in a and "--no-install-recommends" not in a
                  for i, a in rt), "runtime apt-get install needs --no-install-recommends")
    check(any(i == "RUN" and "rm -rf /var/lib/apt/lists" in a for i, a in rt),
          "runtime stage must drop the apt lists")
    ignored = {ln.strip() for ln in dockerignore.read_text().splitlines()
               if ln.strip() and not ln.startswith("#")}
    for needed in ("sidecar", "scripts", "CMakeLists.txt", "CMakePresets.json"):
        check(needed not in ignored, f".dockerignore must not exclude {needed}")
    check("build" in ignored and ".git" in ignored, ".dockerignore must exclude build and .git")
    pkgs = [p for i, a in rt if i == "RUN" for p in apt_packages(a)]
    check(pkgs, "runtime stage installs no packages")
    return set(pkgs)


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


# --- size estimate ---------------------------------------------------------------------------


def installed_db():
    fmt = "${Package}\t${Priority}\t${Essential}\t${Installed-Size}\t${Pre-Depends}\t${Depends}\n"
    r = subprocess.run(["dpkg-query", "-W", "-f", fmt], capture_output=True, text=True,
                       check=True)
    db = {}
    for line in r.stdout.splitlines():
        name, prio, essential, size, pre, dep = (line.split("\t") + [""] * 6)[:6]
        deps = set()
        for group in filter(None, (pre + "," + dep).split(",")):
            # First alternative that is installed; version constraints and arch dropped.
            alts = [a.strip().split(" ")[0].split(":")[0] for a in group.split("|")]
            deps.add(tuple(alts))
        db[name] = {"prio": prio, "essential": essential == "yes",
                    "size": int(size or 0), "deps": deps}
    return db


def closure(db, roots):
    seen, todo = set(), list(roots)
    while todo:
        p = todo.pop()
        if p in seen or p not in db:
            continue
        seen.add(p)
        for alts in db[p]["deps"]:
            chosen = next((a for a in alts if a in db), None)
            if chosen:
                todo.append(chosen)
    return seen


def estimate(binary, packages):
    """(added MiB, rows) over an approximation of debian:bookworm-slim: the closure of the
    Essential and Priority: required packages (what debootstrap's minbase installs) + apt."""
    db = installed_db()
    base_roots = [p for p, v in db.items() if v["essential"] or v["prio"] == "required"]
    base = closure(db, base_roots + ["apt"])
    needed = closure(db, packages)
    added = sorted(needed - base)
    rows = [(p, db[p]["size"]) for p in added]
    with tempfile.TemporaryDirectory() as tmp:
        stripped = Path(tmp) / "leasehold"
        subprocess.run(["strip", "--strip-unneeded", "-o", str(stripped), str(binary)],
                       check=True)
        bin_kib = stripped.stat().st_size / 1024
    rows.append(("leasehold (stripped)", round(bin_kib)))
    total_mib = sum(s for _, s in rows) / 1024
    return total_mib, rows, sorted(set(packages) & base)


def self_test(dockerfile, needed):
    """The comparison can fail: a Dockerfile without one library package, or with one package
    too many, must be caught."""
    text = dockerfile.read_text()
    drop = "libyaml-cpp0.7" if "libyaml-cpp0.7" in needed else sorted(needed)[-1]
    cases = [(text.replace(f"      {drop} \\\n", ""), "does not install"),
             (text.replace("      libc6 \\\n", "      libc6 \\\n      zlib1g \\\n"),
              "does not need")]
    with tempfile.TemporaryDirectory() as tmp:
        for mutated, expect in cases:
            check(mutated != text, "self-test could not mutate the Dockerfile")
            path = Path(tmp) / "Dockerfile"
            path.write_text(mutated)
            (Path(tmp) / ".dockerignore").write_text(
                (dockerfile.parent / ".dockerignore").read_text())
            try:
                installs = check_structure(path, Path(tmp) / ".dockerignore")
            except Failure:
                # Dropping the only package (a statically linked binary needs just libc6)
                # leaves none at all, which the structure check itself rejects: caught.
                check(expect == "does not install", "self-test: structure check failed")
                continue
            missing, extra = set(needed) - installs, installs - set(needed)
            msg = "does not install" if missing else "does not need" if extra else None
            check(msg == expect, f"self-test: a mutated Dockerfile was not caught ({expect})")
    print("ok: self-test: a missing and an extra runtime package are both caught")


def check_runtime_stage(text):
    """runtime_stage (the gate's deploy.image builds it with this build's binary) is the
    Dockerfile's runtime stage but for the binary's COPY, and refuses a stage that takes anything
    else from the build stage."""
    alone = stages(runtime_stage(text, "leasehold"))
    runtime = stages(text)[-1]
    check(len(alone) == 1 and alone[0]["from"] == runtime["from"],
          f"runtime_stage: {len(alone)} stage(s), FROM {alone[0]['from'] if alone else None}")
    differ = [(a, b) for a, b in zip(alone[0]["ins"], runtime["ins"]) if a != b]
    check(len(alone[0]["ins"]) == len(runtime["ins"]) and len(differ) == 1 and
          differ[0][0] == ("COPY", "leasehold /usr/local/bin/leasehold"),
          f"runtime_stage changed more than the binary's COPY: {differ}")
    extra = text.replace("COPY --from=build /out/leasehold /usr/local/bin/leasehold",
                         "COPY --from=build /out/leasehold /usr/local/bin/leasehold\n"
                         "COPY --from=build /etc/passwd /etc/passwd")
    check(extra != text, "self-test could not add a second COPY --from=build")
    try:
        runtime_stage(extra, "leasehold")
    except Failure:
        print("ok: the runtime stage alone differs only in the binary's COPY; a second "
              "COPY --from=build is refused")
        return
    raise Failure("runtime_stage accepted a runtime stage with two COPY --from=build")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dockerfile", required=True, type=Path)
    ap.add_argument("--binary", required=True, type=Path)
    args = ap.parse_args()
    try:
        installs = check_structure(args.dockerfile, args.dockerfile.parent / ".dockerignore")
        print(f"ok: Dockerfile structure; runtime packages: {' '.join(sorted(installs))}")
        check_runtime_stage(args.dockerfile.read_text())
        libs = ldd_paths(args.binary)
        needed = {}
        for lib in libs:
            for pkg in dpkg_owner(lib):
                needed.setdefault(pkg, []).append(lib)
        print("ldd -> package:")
        for pkg in sorted(needed):
            print(f"  {pkg:16} {' '.join(needed[pkg])}")
        missing = sorted(set(needed) - installs)
        extra = sorted(installs - set(needed))
        check(not missing, f"the binary needs packages the Dockerfile does not install: {missing}")
        check(not extra, f"the Dockerfile installs packages the binary does not need: {extra}")
        print("ok: the runtime packages are exactly the packages of the binary's libraries")
        self_test(args.dockerfile, needed)
        total, rows, in_base = estimate(args.binary, sorted(needed))
        print(f"already in debian:bookworm-slim: {' '.join(in_base)}")
        for name, kib in rows:
            print(f"  + {name:22} {kib:7d} KiB")
        print(f"estimated size added to debian:bookworm-slim: {total:.1f} MiB "
              f"(goal: at most {GOAL_MB:.0f} MB)")
        check(total <= GOAL_MB, f"image adds {total:.1f} MiB, more than {GOAL_MB} MB")
    except Failure as e:
        print(f"FAIL: {e}")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
