#!/usr/bin/env python3
"""kubectl leasehold through the real kubectl: the plugin kubectl-leasehold on PATH (a folder of
the scenario's own), `kubectl plugin list` finds it, and `kubectl leasehold get/handover/watch`
run through kubectl, which hands KUBECONFIG to the plugin, against the test API server or with
--real the real kube-apiserver, with real leasehold sidecars electing (RealEnv: each its own
ServiceAccount with the chart's Role).

    kubectl_scenarios.py --sidecar BIN (--apiserver BIN | --real) SCENARIO...  (or all, --list)

The plugin is $LEASEHOLD_KUBECTL_PLUGIN, else kubectl/kubectl-leasehold beside the sidecar binary
(the build tree's layout). Timings are scaled: D=2s, R=1.5s, P=0.3s.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from leasehold_testing import (D, P, Observer, check, log, real_options, run_scenarios,
                               free_port, the_leader, wait_for)

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


def plugin_binary(env):
    path = os.environ.get("LEASEHOLD_KUBECTL_PLUGIN") or str(
        Path(env.sidecar_bin).resolve().parent / "kubectl" / "kubectl-leasehold")
    check(os.access(path, os.X_OK), f"no plugin binary at {path}")
    return path


def plugin_env(env, user="admin", kubeconfig=None):
    """The environment kubectl runs in: our folder first on PATH, KUBECONFIG for `user`."""
    bindir = env.dir / "plugin-bin"
    if not (bindir / "kubectl-leasehold").exists():
        bindir.mkdir(exist_ok=True)
        os.symlink(plugin_binary(env), bindir / "kubectl-leasehold")
    e = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}",
             KUBECONFIG=str(kubeconfig or env.kubeconfig_for(user)))
    e.pop("KUBERNETES_SERVICE_HOST", None)
    return e


def kubectl(env, *args, user="admin", kubeconfig=None, timeout=40):
    """`kubectl ARGS` (so `kubectl leasehold ...`) with the plugin on PATH; CompletedProcess."""
    t0 = time.monotonic()
    r = subprocess.run(["kubectl", *args], capture_output=True, text=True, timeout=timeout,
                       env=plugin_env(env, user, kubeconfig))
    r.seconds = time.monotonic() - t0
    return r


def ok(env, *args, **kw):
    r = kubectl(env, *args, **kw)
    check(r.returncode == 0, f"kubectl {' '.join(args)}: exit {r.returncode}: {r.stderr}")
    return r.stdout


def one_error_line(r, what, *needles):
    lines = r.stderr.strip().splitlines()
    check(r.returncode != 0, f"{what}: exit 0: {r.stdout}")
    check(len(lines) == 1 and lines[0].startswith("error: "),
          f"{what}: one line on stderr, got {r.stderr!r}")
    for n in needles:
        check(n in lines[0], f"{what}: {n!r} not in {lines[0]!r}")
    check("Traceback" not in r.stderr and "terminate" not in r.stderr, f"{what}: {r.stderr}")
    log(f"{what}: exit {r.returncode} after {r.seconds:.2f}s: {lines[0]}")


def start(env, n=3):
    sidecars = env.start_sidecars(n)
    leader = the_leader(sidecars, timeout=D + P + 3)
    return sidecars, leader


@scenario
def plugin_list(env):
    """kubectl plugin list finds kubectl-leasehold on PATH; kubectl leasehold --help and version
    answer through kubectl; bad flags get one line naming the flag and exit 2."""
    out = ok(env, "plugin", "list")
    log("kubectl plugin list:\n" + out.strip())
    check(str(env.dir / "plugin-bin" / "kubectl-leasehold") in out, "the plugin is listed")
    usage = ok(env, "leasehold", "--help")
    check("kubectl leasehold get" in usage and "kubectl leasehold handover" in usage, usage)
    check("informational" in ok(env, "leasehold", "get", "--help"), "EXPIRES is informational")
    check(ok(env, "leasehold", "version").startswith("kubectl-leasehold "), "version")
    for args, flag in ((["get", "-o", "yaml"], "-o"), (["get", "--bogus"], "--bogus"),
                       (["handover", "demo"], "--to"), (["watch", "demo", "--max-events", "x"],
                                                        "--max-events")):
        r = kubectl(env, "leasehold", *args)
        one_error_line(r, f"kubectl leasehold {' '.join(args)}", flag)
        check(r.returncode == 2, f"a usage error exits 2: {r.returncode}")


@scenario
def get(env):
    """get NAME / get / get -A / -o wide / -o json show the holder, its pod, the token, RENEWED
    and EXPIRES as the Lease has them; an unknown Lease is one line and exit 1."""
    sidecars, leader = start(env)
    ns = env.namespace
    table = ok(env, "leasehold", "get", "demo", "-n", ns)
    log("kubectl leasehold get demo:\n" + table.rstrip())
    header, row = table.splitlines()[0].split(), table.splitlines()[1].split()
    check(header == ["NAME", "HOLDER", "POD", "TOKEN", "RENEWED", "EXPIRES", "PREFERRED"], header)
    check(row[:4] == ["demo", leader.name, leader.name, str(env.first_token)], f"row: {row}")
    check(row[6] == "<none>", f"no request pending: {row}")
    check(row[5] != "expired" and row[5].endswith("s"), f"EXPIRES of a renewed Lease: {row}")
    listed = ok(env, "leasehold", "get", "-n", ns)
    check("demo" in listed and leader.name in listed, listed)
    every = ok(env, "leasehold", "get", "-A")
    check(every.splitlines()[0].split()[0] == "NAMESPACE", every)
    check(any(l.split()[:3] == [ns, "demo", leader.name] for l in every.splitlines()), every)
    wide = ok(env, "leasehold", "get", "demo", "-n", ns, "-o", "wide")
    check("ACQUIRED" in wide and "127.0.0.1" in wide, f"-o wide: {wide}")
    doc = json.loads(ok(env, "leasehold", "get", "demo", "-n", ns, "-o", "json"))
    lease = env.lease()
    check(doc["holder"] == leader.name == lease["spec"]["holderIdentity"], f"json: {doc}")
    check(doc["token"] == lease["spec"]["leaseTransitions"], f"json token: {doc}")
    check(doc["pod"] == lease["metadata"]["annotations"]["leasehold.io/holder-pod"], f"{doc}")
    check(0 < doc["expiresInSeconds"] <= D and not doc["expired"], f"json expiry: {doc}")
    one_error_line(kubectl(env, "leasehold", "get", "nope", "-n", ns), "unknown lease",
                   'lease "nope" not found', f'namespace "{ns}"')
    one_error_line(kubectl(env, "leasehold", "handover", "nope", "--to", "x", "-n", ns),
                   "handover of an unknown lease", 'lease "nope" not found')
    one_error_line(kubectl(env, "leasehold", "watch", "nope", "-n", ns), "watch of an unknown "
                   "lease", 'lease "nope" not found')


@scenario
def handover_wait(env):
    """kubectl leasehold handover demo --to <follower> --wait moves leadership to that follower
    (token + 1, no overlap) and prints how long it took, five times in a row; get shows the
    request while it is pending on a name nobody has, and --wait --timeout fails with one line."""
    sidecars, leader = start(env)
    ns = env.namespace
    times = []
    with Observer(sidecars) as obs:
        current = leader
        for i in range(5):
            token = current.status()["fencingToken"]
            target = sidecars[(sidecars.index(current) + 1) % len(sidecars)]
            r = kubectl(env, "leasehold", "handover", "demo", "--to", target.name, "--wait",
                        "-n", ns)
            check(r.returncode == 0, f"handover --wait: {r.returncode} {r.stderr}")
            last = r.stdout.strip().splitlines()[-1]
            check(f"held by {target.name}" in last and " after " in last, r.stdout)
            took = float(last.rsplit(" after ", 1)[1].rstrip("s"))
            times.append(took)
            log(f"handover {i + 1}: {current.name} -> {target.name}: plugin says {took * 1000:.0f}"
                f" ms; kubectl leasehold took {r.seconds * 1000:.0f} ms in all")
            new = the_leader(sidecars, timeout=3)
            check(new is target, f"{target.name} leads: {new.name}")
            check(new.status()["fencingToken"] == token + 1, "token + 1")
            check(took < 1.0, f"handover on request without waiting for expiry: {took}s")
            current = new
            time.sleep(2 * P)
    obs.check_safety()
    times.sort()
    log(f"handover --wait times (ms): {[round(t * 1000, 1) for t in times]}, "
        f"median {times[len(times) // 2] * 1000:.1f}")
    # A request nobody answers (every sidecar paused, so the timing cannot race the replicas'
    # own D): get shows it as PREFERRED, --wait gives up at --timeout with one line.
    for s in sidecars:
        s.signal(signal.SIGSTOP)
    try:
        r = kubectl(env, "leasehold", "handover", "demo", "--to", "ghost", "--wait",
                    "--timeout", "1s", "-n", ns)
        one_error_line(r, "handover to nobody", "timed out after 1.000s", '"ghost"',
                       f"holder now: {current.name}", "the request is still on the Lease")
        check(r.seconds < 5, f"--timeout 1s bounded the wait: {r.seconds:.1f}s")
        row = ok(env, "leasehold", "get", "demo", "-n", ns).splitlines()[1].split()
        check(row[1] == current.name and row[6] == "ghost",
              f"PREFERRED shows the pending request: {row}")
    finally:
        for s in sidecars:
            s.signal(signal.SIGCONT)
    # The leader hands over to nobody; after D a replica takes the Lease and drops the request.
    the_leader(sidecars, timeout=2 * D + P + 3)
    wait_for("the request to be dropped", lambda: "leasehold.io/preferred-holder" not in
             env.lease()["metadata"].get("annotations", {}), 2 * D + 3, interval=0.1)


@scenario
def watch(env):
    """kubectl leasehold watch demo: a line for the Lease as it is, then one per change of
    holder or token (a handover: released, then the new holder with token + 1), none for
    renewals; resumes when the server ends the watch; SIGINT ends it with exit 0."""
    sidecars, leader = start(env)
    ns = env.namespace
    target = next(s for s in sidecars if s is not leader)
    w = subprocess.Popen(["kubectl", "leasehold", "watch", "demo", "-n", ns, "--max-events", "3",
                          "--timeout", "30s"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=plugin_env(env))
    first = [w.stdout.readline(), w.stdout.readline()]
    check(first[0].split() == ["TIME", "HOLDER", "POD", "TOKEN"], f"header: {first}")
    token = env.first_token  # 0 when the first sidecar made the Lease, 1 on the chart's Lease
    check(first[1].split()[1:] == [leader.name, leader.name, str(token)],
          f"first line: {first}")
    time.sleep(4 * P)  # renewals meanwhile: no lines
    env.cut_watches()   # the watch ends under it (the test server: only watches): resumed
    time.sleep(2 * P)
    ok(env, "leasehold", "handover", "demo", "--to", target.name, "-n", ns)
    out, err = w.communicate(timeout=30)
    check(w.returncode == 0, f"watch exit {w.returncode}: {err}")
    lines = [l.split() for l in out.strip().splitlines()]
    log("kubectl leasehold watch demo:\n" + "".join(first) + out.rstrip())
    check(lines == [[lines[0][0], "<none>", "<none>", str(token)],
                    [lines[1][0], target.name, target.name, str(token + 1)]],
          f"released, then the new holder with token {token + 1}: {lines}")
    # Unbounded, then SIGINT (kubectl execs the plugin: the signal reaches it).
    w = subprocess.Popen(["kubectl", "leasehold", "watch", "demo", "-n", ns],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=plugin_env(env))
    check(w.stdout.readline().startswith("TIME"), "header")
    w.stdout.readline()
    t0 = time.monotonic()
    w.send_signal(signal.SIGINT)
    _, err = w.communicate(timeout=5)
    log(f"SIGINT: exit {w.returncode} after {(time.monotonic() - t0) * 1000:.0f} ms")
    check(w.returncode == 0 and err == "", f"SIGINT ends the watch cleanly: {w.returncode} {err}")


VIEWER_RBAC = """
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: lease-viewer, namespace: default}
rules:
  - apiGroups: [coordination.k8s.io]
    resources: [leases]
    verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: lease-viewer, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: lease-viewer}
subjects:
  - {kind: ServiceAccount, name: viewer, namespace: default}
"""


def operator_rbac():
    """The README's operator ClusterRole, as a Role of the namespace with the same rules (and
    its RoleBinding to the user `operator`): what the README grants is what the test uses."""
    import yaml
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    blocks = [b.split("```", 1)[0] for b in text.split("```yaml\n")[1:]]
    role = next(yaml.safe_load(b) for b in blocks if "name: leasehold-operator" in b)
    check(role["kind"] == "ClusterRole", f"README's operator role: {role}")
    role = dict(role, kind="Role", metadata={"name": "leasehold-operator",
                                             "namespace": "default"})
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "leasehold-operator", "namespace": "default"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                           "name": "leasehold-operator"},
               "subjects": [{"kind": "ServiceAccount", "name": "operator",
                             "namespace": "default"}]}
    return "---\n" + yaml.safe_dump(role) + "---\n" + yaml.safe_dump(binding)


@scenario
@real_options(allow_forbidden=True)
def rbac_denied(env):
    """RBAC: a user who may only read Leases gets get and watch, but handover is one line naming
    the refused verb (patch) and exit 1, the Lease untouched; a user with no Role at all is
    refused the list with one line; a user with the README's operator rules hands over."""
    env.use_rbac(["viewer", "nobody", "operator"], VIEWER_RBAC + operator_rbac())
    sidecars, leader = start(env)
    ns = env.namespace
    table = ok(env, "leasehold", "get", "demo", "-n", ns, user="viewer")
    check(leader.name in table, f"the viewer reads the Lease: {table}")
    w = ok(env, "leasehold", "watch", "demo", "-n", ns, "--max-events", "1", user="viewer")
    check(leader.name in w, f"the viewer watches: {w}")
    target = next(s for s in sidecars if s is not leader)
    r = kubectl(env, "leasehold", "handover", "demo", "--to", target.name, "--wait", "-n", ns,
                user="viewer")
    one_error_line(r, "handover without patch", "forbidden (403)", '"patch"', "leases")
    check(r.returncode == 1, f"exit 1: {r.returncode}")
    lease = env.lease()
    check("leasehold.io/preferred-holder" not in lease["metadata"].get("annotations", {}),
          "the refused request left the Lease alone")
    check(the_leader(sidecars, timeout=1) is leader, "the leader kept its term")
    one_error_line(kubectl(env, "leasehold", "get", "-n", ns, user="nobody"),
                   "get without any Role", "forbidden (403)", '"list"')
    r = kubectl(env, "leasehold", "handover", "demo", "--to", target.name, "--wait", "-n", ns,
                user="operator")
    check(r.returncode == 0 and f"held by {target.name}" in r.stdout,
          f"the README's operator role hands over: {r.returncode} {r.stdout} {r.stderr}")
    ok(env, "leasehold", "get", "-A", user="admin")
    log(f"operator: {r.stdout.strip().splitlines()[-1]}")


@scenario
def unreachable(env):
    """A server that refuses connections, and one that accepts but never answers
    (--request-timeout 1s): one line naming the server, exit 1, quickly."""
    dead_port = free_port()  # nothing listens there
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # accepts (the kernel does), never answers a byte
    silent_port = silent.getsockname()[1]
    try:
        for port, extra, bound in ((dead_port, [], 5), (silent_port, ["--request-timeout", "1s"],
                                                        5)):
            cfg = env.dir / f"unreachable-{port}.kubeconfig"
            text = Path(env.kubeconfig_for("admin")).read_text()
            cfg.write_text(text.replace(f":{env.port}", f":{port}"))
            for args in (["get", "demo"], ["handover", "demo", "--to", "x", "--wait"],
                         ["watch", "demo"]):
                r = kubectl(env, "leasehold", *args, "-n", env.namespace, *extra,
                            kubeconfig=cfg)
                one_error_line(r, f"{' '.join(args)} on port {port}", "cannot reach the API "
                               f"server at https://127.0.0.1:{port}")
                check(r.seconds < bound, f"quickly: {r.seconds:.1f}s")
    finally:
        silent.close()


if __name__ == "__main__":
    sys.exit(run_scenarios(SCENARIOS))
