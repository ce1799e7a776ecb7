#!/usr/bin/env python3
"""The container image for real: built with docker, run the way the chart's pod spec runs the
sidecar, against the real kube-apiserver (tests/realkube), in-cluster.

    test_image.py [--image NAME] [--helm BIN] [--replicas N]

Image: without --image, scripts/make-base-images.sh makes debian:bookworm and
debian:bookworm-slim if they are missing (no registry to pull from), then `docker build` of
the Dockerfile (cached layers make it quick when nothing changed) as leasehold:test. With
--binary PATH (the gate's deploy.image: this build's release binary), scripts/build-image.sh
builds the Dockerfile's rootfs and runtime stages with PATH (the one recipe of the runtime image,
also the node tests' and the release's): the build stage would compile the sidecar a third
time, about 500 CPU-seconds after every change to sidecar/ (the full suite's
deploy.image_dockerfile builds the whole Dockerfile). The image (FROM scratch) is then checked
from `docker save`: at most test_dockerfile.GOAL_MB uncompressed (`docker image inspect`), its
files exactly the binary, the shared objects `ldd` names for it, /etc/passwd and /etc/group
with 65532, glibc's copyright and the dpkg status entries (libc6 and the statically linked
-dev packages: `build-image.sh --write-status`); no shell (`--entrypoint /bin/sh` fails: no
such file); `--version` prints project.conf's version, as the version label does.

Pod spec: `helm template charts/leasehold` (real helm, leasehold_testing.helm) gives the
sidecar container of the example Deployment. Every field that Docker can express is
translated, and any other field fails the test, so a chart change cannot slip past it:
  securityContext (pod and container, merged): runAsUser/runAsGroup -> --user,
    readOnlyRootFilesystem -> --read-only, capabilities.drop/add -> --cap-drop/--cap-add,
    allowPrivilegeEscalation=false -> no-new-privileges, runAsNonRoot (checked), seccomp
    RuntimeDefault (Docker's default profile)
  args (verbatim, the image's ENTRYPOINT), env (values; the downward API's metadata.name,
    metadata.namespace and status.podIP as -e), emptyDir volumes -> --tmpfs,
  resources.limits.memory -> --memory (and as much swap: none), requests.cpu -> --cpu-shares,
  terminationGracePeriodSeconds -> the `docker stop` timeout, the probes' ports and paths.
Each container has the pod's ServiceAccount token (a TokenRequest), ca.crt and namespace at
/var/run/secrets/kubernetes.io/serviceaccount (read-only) and KUBERNETES_SERVICE_HOST/PORT,
so the sidecar takes its in-cluster path.

Network: a user-defined, internal Docker bridge with an explicit subnet (the project's own
container network; nothing leaves it). kube-apiserver listens on its gateway address
(REALKUBE_BIND), whose IP its serving certificate covers (REALKUBE_SANS), so TLS verification
passes with the ServiceAccount's ca.crt. Each container has a fixed address there (its POD_IP).

What is asked of the containers, from outside: /leader on 127.0.0.1:4040 in each container's
network namespace (nsenter -n: what the app container of the pod sees; the image has no shell
to `docker exec`), and /healthz, /readyz, /metrics on the probe port at the pod address (what
the kubelet and Prometheus see). The chart's args stay as rendered.

Scenario (the chart's timings, D=15s R=10s P=2s):
  1. N containers start; startup and readiness probes pass; exactly one leader, stable for 2P,
     every container names it; its /leader holderAddress is its POD_IP, its identity starts
     with its POD_NAME, the Lease's holderIdentity is it, its status file (on the emptyDir, the
     root being read-only) says leader, /metrics agrees (is_leader 1/0).
  2. `docker kill` (SIGKILL) of the leader: another container leads, no sooner than D - R after
     the kill (its claim was valid until then) and within 2D, with a higher fencing token.
  3. `docker stop` (SIGTERM, the grace period of the pod spec) of the new leader: it releases,
     exits 0 well before the grace period, and a remaining container leads within D/2.
  4. The audit log: every request from a container's address was made as the chart's
     ServiceAccount (renewals among them); not one 403 and not one 401.
Every container and network it made is removed at the end, also on failure (and ones left by a
run that was killed are removed by the next run). Needs root (nsenter), docker, and
build/realkube/bin/{kube-apiserver,etcd,helm} (tests/realkube/build.sh).

Why ~670 lines in one file: one scenario whose parts only it uses, the image build and size,
the translation of the pod spec into docker flags (which must fail on any field it does not
know), the containers with their network and token, and the four steps above; the control plane,
helm and the HTTP calls are leasehold_testing's.
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

import yaml

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from leasehold_testing import ControlPlane, Failure, check, http_get, log, wait_for  # noqa: E402
from leasehold_testing.helm import Helm, HelmError, HelmMissing, is_hook  # noqa: E402
from leasehold_testing.image_build import BUILD_IMAGE, build_image  # noqa: E402
from leasehold_testing.quantities import memory_bytes, millicpu, parse_duration  # noqa: E402
from leasehold_testing.paths import ROOT, product_version  # noqa: E402
from test_dockerfile import GOAL_BYTES, GOAL_MB, ldd_paths  # noqa: E402

# The files of the image besides the shared objects and the status entries of linked packages.
IMAGE_FILES = {"usr/local/bin/leasehold", "etc/passwd", "etc/group",
               "usr/share/doc/libc6/copyright", "var/lib/dpkg/status.d/libc6"}
DEFAULT_IMAGE = "leasehold:test"
NS = "lh-image"
RELEASE = "leasehold"
LABEL = "org.leasehold.test"  # =image on everything this test makes; .pid = the run's pid
SA_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


def run(argv, ok=True, timeout=120, **kw):
    r = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout,
                       **kw)
    if ok and r.returncode != 0:
        raise Failure(f"`{' '.join(map(str, argv))}` exited {r.returncode}: "
                      f"{(r.stdout + r.stderr).strip()[-3000:]}")
    return r


def docker(*args, ok=True, timeout=120):
    return run(["docker", *args], ok=ok, timeout=timeout)


# --- the image --------------------------------------------------------------------------------

def image_files(name, workdir):
    """{path: bytes} of the regular files in NAME's layers (`docker save`), and the other
    entries (directories apart) as {path: kind}."""
    archive = workdir / "image.tar"
    with open(archive, "wb") as out:
        p = subprocess.run(["docker", "save", name], stdout=out, stderr=subprocess.PIPE,
                           timeout=300)
    check(p.returncode == 0, f"docker save {name}: {p.stderr.decode().strip()}")
    files, others = {}, {}
    with tarfile.open(archive) as saved:
        manifest = json.load(saved.extractfile("manifest.json"))
        check(len(manifest) == 1, f"docker save {name}: {len(manifest)} images")
        for layer in manifest[0]["Layers"]:
            with tarfile.open(fileobj=saved.extractfile(layer)) as tar:
                for m in tar:
                    path = m.name.removeprefix("./").rstrip("/")
                    if m.isfile():
                        files[path] = tar.extractfile(m).read()
                    elif not m.isdir():
                        others[path] = "link" if m.issym() or m.islnk() else "special"
    archive.unlink()
    return files, others


def check_image(name, pod_user, workdir):
    info = json.loads(docker("image", "inspect", name).stdout)[0]
    size, config = info["Size"], info["Config"]
    log(f"image {name}: {size} bytes ({size / 1e6:.2f} MB) uncompressed, "
        f"{len(info['RootFS']['Layers'])} layer(s)")
    check(size <= GOAL_BYTES, f"{size / 1e6:.1f} MB, goal at most {GOAL_MB:.0f} MB")
    check(config.get("Entrypoint") == ["/usr/local/bin/leasehold"],
          f"ENTRYPOINT {config.get('Entrypoint')}")
    uid = str(config.get("User", "")).split(":")[0]
    check(uid.isdigit() and int(uid) != 0,
          f"image USER {config.get('User')!r} is not a numeric non-root user (runAsNonRoot)")
    check(pod_user is None or int(uid) == pod_user,
          f"image USER {uid}, the chart runs as {pod_user}")
    version = product_version()
    labels = config.get("Labels") or {}
    check(labels.get("org.opencontainers.image.version") == version,
          f"version label {labels.get('org.opencontainers.image.version')}, project.conf "
          f"{version}")

    # No shell: nothing in the chart may need one, and nothing can be run in it but leasehold.
    sh = docker("run", "--rm", "--entrypoint", "/bin/sh", name, "-c", "true", ok=False)
    said = (sh.stdout + sh.stderr).strip()
    check(sh.returncode != 0 and "no such file" in said.lower(),
          f"--entrypoint /bin/sh: exit {sh.returncode}, {said[-300:]}")
    r = docker("run", "--rm", name, "--version", ok=False)
    check(r.returncode == 0 and r.stdout == f"leasehold {version}\n",
          f"--version: exit {r.returncode}, {r.stdout!r} {r.stderr.strip()}")
    log(f"no shell (--entrypoint /bin/sh: exit {sh.returncode}, "
        f"{said.splitlines()[0][-60:]!r}); --version: leasehold {version}")

    files, others = image_files(name, workdir)
    check(not others, f"the image holds links or special files: {others}")
    binary = workdir / "leasehold-from-image"
    binary.write_bytes(files["usr/local/bin/leasehold"])
    binary.chmod(0o755)
    shared = {p.lstrip("/") for p in ldd_paths(binary)}
    status_dir = workdir / "status.d"
    run(["bash", BUILD_IMAGE, "--write-status", status_dir])
    linked = {f"var/lib/dpkg/status.d/{p.name}" for p in status_dir.iterdir()}
    want = IMAGE_FILES | shared | linked
    check(set(files) == want, f"the image's files differ: extra {sorted(set(files) - want)}, "
                              f"missing {sorted(want - set(files))}")
    # ELF files (not links, not this machine's: libc6 comes from the mirror, maybe newer).
    for path in shared:
        check(files[path][:4] == b"\x7fELF", f"/{path} in the image is not an ELF file")
    passwd = files["etc/passwd"].decode()
    group = files["etc/group"].decode()
    check(re.search(r"^nonroot:x:65532:65532:", passwd, re.M)
          and re.search(r"^nonroot:x:65532:", group, re.M),
          f"/etc/passwd and /etc/group need 65532 (nonroot):\n{passwd}{group}")
    for path in linked | {"var/lib/dpkg/status.d/libc6"}:
        entry = files[path].decode()
        package = path.rsplit("/", 1)[1]
        check(re.search(rf"^Package: {re.escape(package)}$", entry, re.M)
              and re.search(r"^Version: \S+$", entry, re.M),
              f"/{path} is not a dpkg status entry of {package}:\n{entry[:300]}")
    check(b"GNU" in files["usr/share/doc/libc6/copyright"], "glibc's copyright file is empty")
    versions = {p.rsplit("/", 1)[1]: re.search(r"^Version: (\S+)$", files[p].decode(),
                                               re.M).group(1)
                for p in sorted(linked | {"var/lib/dpkg/status.d/libc6"})}
    log(f"files: {len(files)}, {sum(map(len, files.values()))} bytes: " +
        " ".join(f"/{p}" for p in sorted(files)))
    log("status.d: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    return size


# --- the pod spec -----------------------------------------------------------------------------

class PodSpec:
    """The sidecar container of the chart's example Deployment, as `docker run` flags."""

    def __init__(self, docs):
        deployments = [d for _, d in docs if d["kind"] == "Deployment"]
        check(len(deployments) == 1, f"{len(deployments)} Deployments rendered")
        self.deployment = deployments[0]
        pod = self.deployment["spec"]["template"]["spec"]
        self.pod = pod
        found = [c for c in pod.get("initContainers", []) + pod.get("containers", [])
                 if c["name"] == "leasehold"]
        check(len(found) == 1, "no single container named leasehold in the pod spec")
        self.c = found[0]
        # The grants and the Lease the chart makes (its Role has no create); not helm test's.
        self.rbac = [d for _, d in docs if d["kind"] in ("ServiceAccount", "Role", "RoleBinding",
                                                          "Lease") and not is_hook(d)]
        self.service_account = pod.get("serviceAccountName", "default")
        self.grace = int(pod.get("terminationGracePeriodSeconds", 30))
        args = self.c.get("args", [])
        self.args = [str(a) for a in args]
        check("command" not in self.c, "the chart overrides the image's ENTRYPOINT: handle it")
        flags = dict(a[2:].split("=", 1) for a in self.args if a.startswith("--") and "=" in a)
        self.lease = flags["lease-name"]
        self.D = parse_duration(flags["lease-duration"])
        self.R = parse_duration(flags["renew-deadline"])
        self.P = parse_duration(flags["retry-period"])
        self.status_port = int(flags["http-address"].rsplit(":", 1)[1])
        check(flags["http-address"].startswith("127.0.0.1:"),
              f"--http-address={flags['http-address']}: /leader is meant for the pod only")
        self.probe_port = int(flags["probe-address"].rsplit(":", 1)[1])
        self.status_file = flags.get("status-file")
        self.security = self._security()

    def _security(self):
        sc = dict(self.pod.get("securityContext", {}))
        sc.update(self.c.get("securityContext", {}))
        known = {"runAsUser", "runAsGroup", "runAsNonRoot", "readOnlyRootFilesystem",
                 "capabilities", "allowPrivilegeEscalation", "seccompProfile"}
        check(not set(sc) - known, f"securityContext fields this test cannot apply: "
                                   f"{sorted(set(sc) - known)}")
        return sc

    def run_flags(self):
        sc = self.security
        flags = []
        if "runAsUser" in sc:
            flags += ["--user", f"{sc['runAsUser']}:{sc.get('runAsGroup', sc['runAsUser'])}"]
        if sc.get("runAsNonRoot"):
            check(sc.get("runAsUser", 0) != 0, "runAsNonRoot with runAsUser 0")
        if sc.get("readOnlyRootFilesystem"):
            flags.append("--read-only")
        caps = sc.get("capabilities", {})
        check(not set(caps) - {"drop", "add"}, f"capabilities {caps}")
        flags += [f"--cap-drop={c}" for c in caps.get("drop", [])]
        flags += [f"--cap-add={c}" for c in caps.get("add", [])]
        if sc.get("allowPrivilegeEscalation") is False:
            flags += ["--security-opt", "no-new-privileges"]
        seccomp = sc.get("seccompProfile", {}).get("type", "RuntimeDefault")
        check(seccomp == "RuntimeDefault", f"seccompProfile {seccomp}: Docker's default is "
                                           f"RuntimeDefault, nothing else is translated")
        res = self.c.get("resources", {})
        if "memory" in res.get("limits", {}):
            mem = memory_bytes(res["limits"]["memory"])
            flags += ["--memory", str(mem), "--memory-swap", str(mem)]
        if "cpu" in res.get("limits", {}):
            flags += ["--cpus", str(millicpu(res["limits"]["cpu"]) / 1000)]
        if "cpu" in res.get("requests", {}):
            # The kubelet's cpu.shares for a request: milliCPU * 1024 / 1000, at least 2.
            flags += ["--cpu-shares", str(max(2, millicpu(res["requests"]["cpu"]) * 1024 // 1000))]
        volumes = {v["name"]: v for v in self.pod.get("volumes", [])}
        for m in self.c.get("volumeMounts", []):
            v = volumes.get(m["name"])
            check(v and "emptyDir" in v, f"volume {m['name']}: only emptyDir is translated")
            size = v["emptyDir"].get("sizeLimit")
            opts = ["ro" if m.get("readOnly") else "rw", "mode=0777"]
            if size:
                opts.append(f"size={memory_bytes(size)}")
            flags += ["--tmpfs", f"{m['mountPath']}:{','.join(opts)}"]
        flags += ["--stop-timeout", str(self.grace)]
        return flags

    def env(self, pod_name, pod_ip):
        fields = {"metadata.name": pod_name, "metadata.namespace": NS, "status.podIP": pod_ip}
        out = []
        for e in self.c.get("env", []):
            if "value" in e:
                out.append(f"{e['name']}={e['value']}")
                continue
            ref = e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
            check(ref in fields, f"env {e['name']}: only the downward API fields {list(fields)} "
                                 f"are faked, not {e.get('valueFrom')}")
            out.append(f"{e['name']}={fields[ref]}")
        return out

    def probe(self, kind):
        p = self.c.get(kind)
        if not p:
            return None
        port = p["httpGet"]["port"]
        if not isinstance(port, int):
            port = next(x["containerPort"] for x in self.c.get("ports", []) if x["name"] == port)
        check(port == self.probe_port, f"{kind} on port {port}, --probe-address on "
                                       f"{self.probe_port}")
        return p["httpGet"]["path"], p.get("periodSeconds", 10), p.get("failureThreshold", 3)


# --- the network, the control plane, the containers -----------------------------------------

def sweep_leftovers():
    """Containers and networks of runs that were killed before they could clean up."""
    for kind, ls in (("container", ["ps", "-a"]), ("network", ["network", "ls"])):
        out = docker(*ls, "--filter", f"label={LABEL}=image", "--format",
                     f'{{{{.ID}}}} {{{{.Label "{LABEL}.pid"}}}}').stdout
        for line in out.splitlines():
            ident, _, pid = line.partition(" ")
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                log(f"removing {kind} {ident} left by run {pid}")
                docker(kind, "rm", *(["-f"] if kind == "container" else []), ident, ok=False)


class Network:
    """An internal bridge network with an explicit /24: the gateway is this host's address on
    it, the containers get .10, .11, ..."""

    def __init__(self):
        self.name = f"lh-image-{os.getpid()}"
        last = ""
        for _ in range(8):
            n = random.randrange(16, 250)
            self.prefix = f"172.29.{n}"
            r = docker("network", "create", "--driver", "bridge", "--internal",
                       "--subnet", f"{self.prefix}.0/24", "--gateway", f"{self.prefix}.1",
                       "--label", f"{LABEL}=image", "--label", f"{LABEL}.pid={os.getpid()}",
                       self.name, ok=False)
            if r.returncode == 0:
                self.gateway = f"{self.prefix}.1"
                log(f"network {self.name}: {self.prefix}.0/24, gateway {self.gateway}")
                return
            last = r.stderr.strip()
            if "overlap" not in last:
                break
        raise Failure(f"docker network create failed: {last}")

    def remove(self):
        docker("network", "rm", self.name, ok=False)


def in_root(root, path):
    """PATH inside the file system tree at ROOT, its symlinks resolved within that tree (the
    image's /var/run is a link to /run, which from here would be this machine's /run)."""
    parts = [p for p in Path(path).parts if p != "/"]
    here = root
    for _ in range(64):
        if not parts:
            return here
        part = parts.pop(0)
        nxt = here / part
        if nxt.is_symlink():
            target = Path(os.readlink(nxt))
            if target.is_absolute():
                here = root
            parts = [p for p in target.parts if p != "/"] + parts
            continue
        if part == "..":
            here = here.parent if here != root else root
        else:
            here = nxt
    raise Failure(f"too many symbolic links in {path} under {root}")


class Container:
    def __init__(self, index, spec, net, cp, image, token, workdir):
        self.spec = spec
        self.pod_name = f"{RELEASE}-{os.urandom(5).hex()[:9]}-{os.urandom(3).hex()[:5]}"
        self.name = f"lh-image-{os.getpid()}-{index}"
        self.ip = f"{net.prefix}.{10 + index}"
        # What the kubelet projects: token, ca.crt, namespace; world-readable, mounted read-only.
        sa = workdir / f"sa-{index}"
        sa.mkdir()
        (sa / "token").write_text(token)
        shutil.copy(cp.env["APISERVER_CA"], sa / "ca.crt")
        (sa / "namespace").write_text(NS)
        for f in sa.iterdir():
            f.chmod(0o644)
        sa.chmod(0o755)
        self.argv = ["run", "-d", "--name", self.name, "--hostname", self.pod_name,
                     "--network", net.name, "--ip", self.ip,
                     "--label", f"{LABEL}=image", "--label", f"{LABEL}.pid={os.getpid()}",
                     *spec.run_flags(),
                     "-v", f"{sa}:{SA_MOUNT}:ro",
                     "-e", f"KUBERNETES_SERVICE_HOST={net.gateway}",
                     "-e", f"KUBERNETES_SERVICE_PORT={cp.port}",
                     *[x for e in spec.env(self.pod_name, self.ip) for x in ("-e", e)],
                     image, *spec.args]
        self.pid = None
        self.started = False

    def start(self):
        self.started = True
        docker(*self.argv)
        state = self.state()
        check(state["Running"], f"{self.name} is not running: {state}")
        self.pid = state["Pid"]

    def state(self):
        return json.loads(docker("inspect", "-f", "{{json .State}}", self.name).stdout)

    def alive(self):
        return self.started and self.state()["Running"]

    def leader(self, timeout=2):
        """/leader as the app container sees it: 127.0.0.1 in this container's netns."""
        r = run(["nsenter", "-t", self.pid, "-n", "curl", "-s", "-m", str(timeout),
                 f"http://127.0.0.1:{self.spec.status_port}/leader"], ok=False,
                timeout=timeout + 5)
        if r.returncode != 0:
            return None
        try:
            return json.loads(r.stdout)
        except ValueError:
            return None

    def status_file(self):
        """The --status-file JSON, read through /proc/PID/root (it lives on the pod's emptyDir,
        a tmpfs here, since the root filesystem is read-only)."""
        try:
            return json.loads(in_root(Path(f"/proc/{self.pid}/root"),
                                      self.spec.status_file).read_text())
        except (OSError, ValueError):
            return None

    def probe(self, path, timeout=2):
        """(status, body) from the probe port at the pod address (the kubelet's view)."""
        return http_get(self.spec.probe_port, path, timeout=timeout, host=self.ip)

    def logs(self, n=30):
        r = docker("logs", "--tail", str(n), self.name, ok=False)
        return (r.stdout + r.stderr).strip()

    def remove(self):
        if self.started:
            docker("rm", "-f", self.name, ok=False)


# --- the scenario -----------------------------------------------------------------------------

def one_leader(containers):
    """The one container that says leader and that every container names as holder (each of
    them must answer: they are the live ones)."""
    now = {c: c.leader() for c in containers}
    leaders = [c for c, s in now.items() if s and s["leader"]]
    if len(leaders) != 1:
        return None
    holder = now[leaders[0]]["identity"]
    if all(s and s["holder"] == holder for s in now.values()):
        return leaders[0], now[leaders[0]]
    return None


def check_leader(cp, spec, containers, leader, answer):
    check(answer["identity"].startswith(leader.pod_name + "_"),
          f"identity {answer['identity']} does not start with POD_NAME {leader.pod_name}")
    check(answer.get("holderAddress") == leader.ip,
          f"holderAddress {answer.get('holderAddress')}, the leader's POD_IP is {leader.ip}")
    check(answer["namespace"] == NS and answer["lease"] == spec.lease,
          f"lease {answer['namespace']}/{answer['lease']}, expected {NS}/{spec.lease}")
    check(isinstance(answer["fencingToken"], int), f"fencingToken {answer['fencingToken']}")
    lease = json.loads(cp.kubectl("-n", NS, "get", "lease", spec.lease, "-o", "json").stdout)
    check(lease["spec"]["holderIdentity"] == answer["identity"],
          f"Lease holderIdentity {lease['spec'].get('holderIdentity')}, /leader says "
          f"{answer['identity']}")
    if spec.status_file:
        status = wait_for(f"{leader.name}'s status file to name it leader",
                          lambda: (lambda f: f if f and f.get("leader") else None)(
                              leader.status_file()), 2 * spec.P + 2, interval=0.1)
        check(status["identity"] == answer["identity"],
              f"status file identity {status['identity']}, /leader {answer['identity']}")
    for c in containers:
        if c.alive():
            code, body = c.probe("/metrics")
            check(code == 200, f"{c.name} /metrics: {code} {body[:200]}")
            want = "1" if c is leader else "0"
            check(re.search(rf"^leasehold_is_leader {want}$", body, re.M),
                  f"{c.name}: /metrics does not say leasehold_is_leader {want}")


def scenario(cp, spec, containers):
    D, R, P = spec.D, spec.R, spec.P
    for kind in ("startupProbe", "readinessProbe"):
        probe = spec.probe(kind)
        if not probe:
            continue
        path, period, threshold = probe
        limit = max(30, period * threshold)
        for c in containers:
            wait_for(f"{c.name} {kind} {path}", lambda c=c: c.probe(path)[0] == 200, limit,
                     interval=0.2)
        log(f"{kind} {path}: 200 on all {len(containers)} containers")

    leader, answer = wait_for("exactly one leader that every container names",
                              lambda: one_leader(containers), 2 * D, interval=0.2)
    # Stable: the same single leader across two renewal periods.
    deadline = time.monotonic() + 2 * P
    while time.monotonic() < deadline:
        again = one_leader(containers)
        check(again and again[0] is leader, f"leadership not stable: {again}")
        time.sleep(0.2)
    check_leader(cp, spec, containers, leader, answer)
    log(f"1. one leader: {leader.name} ({answer['identity']}, {leader.ip}), "
        f"fencing token {answer['fencingToken']}")

    # 2. kill -9.
    t0 = time.monotonic()
    docker("kill", "--signal", "KILL", leader.name)
    rest = [c for c in containers if c is not leader]
    new, new_answer = wait_for("a new leader after docker kill", lambda: one_leader(rest),
                               2 * D, interval=0.1)
    failover = time.monotonic() - t0
    state = leader.state()
    check(not state["Running"] and state["ExitCode"] == 137 and not state["OOMKilled"],
          f"the killed leader: {state}")
    check(new is not leader, "the killed container still leads")
    check(failover >= D - R, f"a follower took over {failover:.1f}s after the kill: the old "
                             f"leader's claim was valid for up to D-R={D - R:.0f}s after it")
    check(new_answer["fencingToken"] > answer["fencingToken"],
          f"fencing token {new_answer['fencingToken']} after {answer['fencingToken']}")
    check_leader(cp, spec, rest, new, new_answer)
    log(f"2. docker kill: {new.name} leads after {failover:.1f}s (D={D:.0f}s), "
        f"fencing token {new_answer['fencingToken']}")

    # 3. docker stop (SIGTERM, then SIGKILL after the grace period).
    remaining = [c for c in rest if c is not new]
    stop = {}

    def stopper():
        t = time.monotonic()
        r = docker("stop", "-t", str(spec.grace), new.name, ok=False, timeout=spec.grace + 60)
        stop["seconds"], stop["rc"], stop["err"] = time.monotonic() - t, r.returncode, r.stderr

    t0 = time.monotonic()
    th = threading.Thread(target=stopper)
    th.start()
    try:
        third, third_answer = wait_for("a new leader after docker stop",
                                       lambda: one_leader(remaining), D, interval=0.05)
        handover = time.monotonic() - t0
    finally:
        th.join(spec.grace + 70)
    state = new.state()
    check(stop.get("rc") == 0, f"docker stop: {stop}")
    check(not state["Running"] and state["ExitCode"] == 0,
          f"the stopped leader did not exit 0 on SIGTERM: {state}")
    check(stop["seconds"] < min(D, spec.grace) / 2,
          f"docker stop took {stop['seconds']:.1f}s (grace {spec.grace}s)")
    check(handover < D / 2, f"handover took {handover:.1f}s, expected well under D={D:.0f}s")
    check(third_answer["fencingToken"] > new_answer["fencingToken"],
          f"fencing token {third_answer['fencingToken']} after {new_answer['fencingToken']}")
    check_leader(cp, spec, remaining, third, third_answer)
    stopped_log = new.logs(200)
    check("released the lease" in stopped_log,
          f"the stopped leader did not log 'released the lease':\n{stopped_log[-2000:]}")
    log(f"3. docker stop: exited 0 in {stop['seconds']:.1f}s; {third.name} leads after "
        f"{handover:.2f}s, fencing token {third_answer['fencingToken']}")
    return {"failover": failover, "handover": handover, "stop": stop["seconds"]}


def audit(cp, spec, containers):
    """Every request from a container's address: made as the chart's ServiceAccount, and none
    refused (403) or unauthenticated (401, audited without that user)."""
    user = f"system:serviceaccount:{NS}:{spec.service_account}"
    ips = {c.ip for c in containers}
    events, bad = [], []
    for e in cp.audit.events():
        if not ips & set(e.get("sourceIPs", [])):
            continue
        events.append(e)
        name = e.get("user", {}).get("username")
        code = e.get("responseStatus", {}).get("code")
        if name != user or code in (401, 403):
            ref = e.get("objectRef", {})
            bad.append(f"{name} {e['verb']} {ref.get('resource')}/{ref.get('name', '')} -> "
                       f"{code} ({e.get('requestURI')})")
    renewals = [e for e in events if e["verb"] == "update"
                and e.get("objectRef", {}).get("resource") == "leases"]
    check(events, f"no request from the containers ({', '.join(sorted(ips))}) in the audit log")
    check(renewals, f"no Lease update by {user} in the audit log")
    check(not bad, f"{len(bad)} requests from the containers refused or not as {user}:\n" +
          "\n".join(bad[:20]))
    log(f"4. audit: {len(events)} requests from the containers, all by {user} "
        f"({len(renewals)} Lease updates), 0 refused (403/401)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--image", help=f"an existing image to test (default: build {DEFAULT_IMAGE})")
    ap.add_argument("--helm", type=Path, help="the helm binary (default: build/realkube/bin/helm)")
    ap.add_argument("--replicas", type=int, default=3)
    ap.add_argument("--binary", type=Path,
                    help="build only the Dockerfile's runtime stage, with this binary")
    args = ap.parse_args()
    if args.image and args.binary:
        ap.error("--image and --binary exclude each other")
    if args.binary and not args.binary.is_file():
        ap.error(f"--binary {args.binary}: no such file")
    check_pre = [("root (nsenter into the containers' network namespaces)", os.getuid() == 0),
                 ("docker", shutil.which("docker")), ("nsenter", shutil.which("nsenter")),
                 ("curl", shutil.which("curl")), ("kubectl", shutil.which("kubectl"))]
    missing = [what for what, ok in check_pre if not ok]
    if missing:
        log(f"FAIL: needs {', '.join(missing)}")
        return 1
    if args.replicas < 3:
        ap.error("--replicas must be at least 3 (a failover and a handover need them)")

    t_start = time.monotonic()
    net = cp = None
    containers = []
    workdir = Path(tempfile.mkdtemp(prefix="leasehold-image-"))
    try:
        if docker("info", ok=False).returncode != 0:
            raise Failure("the Docker engine does not answer (docker info)")
        sweep_leftovers()
        image = args.image or DEFAULT_IMAGE
        if args.image:
            check(docker("image", "inspect", image, ok=False).returncode == 0,
                  f"no image {image}")
        else:
            build_image(image, args.binary)

        helm = Helm(args.helm)
        repo, _, tag = image.rpartition(":")
        docs = helm.render({"image": {"repository": repo, "tag": tag}}, release=RELEASE,
                           namespace=NS)
        spec = PodSpec(docs)
        check(spec.c["image"] == image, f"the chart renders image {spec.c['image']}")
        size = check_image(image, spec.security.get("runAsUser"), workdir)
        log(f"pod spec: args {' '.join(spec.args)}")
        log(f"docker run flags: {' '.join(spec.run_flags())}")

        net = Network()
        cp = ControlPlane(bind=net.gateway, directory=workdir / "cp")
        cp.up()
        cp.kubectl("create", "namespace", NS)
        cp.kubectl("apply", "-n", NS, "-f", "-", input=yaml.safe_dump_all(spec.rbac))
        wait_for("the RoleBinding to take effect", lambda: cp.can_i(
            NS, spec.service_account, "update", f"leases.coordination.k8s.io/{spec.lease}"),
            30, interval=0.2)

        for i in range(args.replicas):
            containers.append(Container(i, spec, net, cp, image, cp.token(NS, spec.service_account),
                                        workdir))
        for c in containers:
            c.start()
        log(f"{len(containers)} containers: " +
            ", ".join(f"{c.name} ({c.pod_name}, {c.ip})" for c in containers))
        times = scenario(cp, spec, containers)
        audit(cp, spec, containers)
        log(f"PASS in {time.monotonic() - t_start:.0f}s: image {size / 1e6:.2f} MB; "
            f"failover {times['failover']:.1f}s, handover {times['handover']:.2f}s")
        return 0
    except (Failure, HelmError, HelmMissing, subprocess.TimeoutExpired) as e:
        log(f"FAIL: {e}")
        for c in containers:
            if c.started:
                print(f"----- {c.name} ({c.pod_name}) log -----\n{c.logs()}")
        if cp is not None and cp.started:
            print(f"----- kube-apiserver log -----\n{cp.log_tail()}")
        return 1
    finally:
        for c in containers:
            c.remove()
        if cp is not None:
            cp.down()
        if net is not None:
            net.remove()
        shutil.rmtree(workdir, ignore_errors=True)


def terminated(signum, frame):
    # ctest's timeout and Ctrl-C: leave through main's cleanup (containers, network, servers).
    raise Failure(f"terminated by signal {signum}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    signal.signal(signal.SIGTERM, terminated)
    signal.signal(signal.SIGINT, terminated)
    sys.exit(main())
